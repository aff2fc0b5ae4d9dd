"""The simulator's plot (``scale.png``): its steady scenarios against load, lateness p50, p99 and max
next to the target p99 and EventBridge Scheduler's default quota, and the dollars per million jobs
stacked by service next to EventBridge Scheduler's price and the target."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from bench.plots.figure import FLOOR_MS, _figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


# ------------------------------------------------------------------------------------------ scale

# EventBridge Scheduler, the managed service one would otherwise use: its default quota and price.
EVENTBRIDGE_PER_SECOND = 1000
EVENTBRIDGE_USD_PER_MILLION = 1.00
SCALE_COLOURS = ("#4c78a8", "#72b7b2", "#f58518", "#e45756", "#54a24b", "#b279a2", "#9d755d", "#bab0ac")
STEADY = re.compile(r"steady-(\d+)([km]?)$")


def _steady_load(scenario: dict[str, Any]) -> float | None:
    """Jobs due a minute of a steady scenario (``steady-10k``: 10,000), None for the others."""
    name = str(scenario.get("name", ""))
    if not name.startswith("steady-"):
        return None
    match = STEADY.match(name)
    if match:
        return int(match[1]) * {"": 1, "k": 1_000, "m": 1_000_000}[match[2]]
    return float(scenario["expected"]) / 2  # each steady scenario measures two minutes


def _scale(_name: str, result: dict[str, Any]) -> Figure:
    from bench.scale import TARGET_P99_MS, TARGET_USD_AT_MILLION

    steady = sorted(
        ((load, s) for s in result["scenarios"] if (load := _steady_load(s)) is not None),
        key=lambda pair: pair[0],
    )
    loads = [load for load, _ in steady]
    figure, (late, cost) = _figure(14, 5.6, cols=2)
    quota = EVENTBRIDGE_PER_SECOND * 60

    # Lateness: p50, p99 and max against load.
    for key, label, colour, marker in (
        ("p50", "lateness p50", "#54a24b", "o"),
        ("p99", "lateness p99", "#4c78a8", "s"),
        ("max", "lateness max", "#e45756", "^"),
    ):
        values = [float(s["lateness_ms"][key]) for _, s in steady]
        floored = bool(values) and all(v <= FLOOR_MS for v in values)
        late.plot(
            loads,
            [max(FLOOR_MS, v) for v in values],
            marker=marker,
            color=colour,
            label=f"{label} (0 ms at every load: drawn at the floor)" if floored else label,
        )
        if floored:
            continue
        for x, v in zip(loads, values, strict=True):
            late.annotate(
                f"{v:,.0f} ms" if v >= 10 else f"{v:g} ms",
                (x, max(FLOOR_MS, v)),
                textcoords="offset points",
                xytext=(-5, 6) if key == "max" else (6, -12),
                ha="right" if key == "max" else "left",
                fontsize=8,
                color=colour,
            )
    late.axhline(
        TARGET_P99_MS,
        color="black",
        linestyle="--",
        linewidth=1.2,
        label=f"target p99 ≤ {TARGET_P99_MS / 1000:g} s",
    )
    late.set_yscale("log")
    late.set_ylim(
        FLOOR_MS / 2, max([TARGET_P99_MS * 10.0] + [float(s["lateness_ms"]["max"]) * 3 for _, s in steady])
    )
    late.set_ylabel(f"lateness, ms (logarithmic; ≤ {FLOOR_MS:g} ms drawn at {FLOOR_MS:g})")
    late.set_title("Lateness against load")

    # Cost: $ per million jobs, stacked by service.
    categories: list[str] = []
    for _, s in steady:
        breakdown = s.get("usd_breakdown")
        for category in breakdown if isinstance(breakdown, dict) else {"total": None}:
            if category not in categories:
                categories.append(category)
    lefts = [load / 1.5 for load in loads]
    widths = [load * 1.5 - load / 1.5 for load in loads]
    bottoms = [0.0] * len(steady)
    for k, category in enumerate(categories):
        heights = []
        for _, s in steady:
            breakdown = s.get("usd_breakdown")
            if isinstance(breakdown, dict):
                heights.append(float(breakdown.get(category, 0.0)))
            else:
                heights.append(float(s["usd_per_million_jobs"]) if category == "total" else 0.0)
        cost.bar(
            lefts,
            heights,
            widths,
            bottom=bottoms,
            align="edge",
            color=SCALE_COLOURS[k % len(SCALE_COLOURS)],
            edgecolor="white",
            linewidth=0.5,
            label=category,
        )
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, (_, s), top in zip(loads, steady, bottoms, strict=True):
        cost.annotate(
            f"${float(s['usd_per_million_jobs']):.2f}",
            (x, top),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            fontsize=9,
            fontweight="bold",
        )
    cost.axhline(
        EVENTBRIDGE_USD_PER_MILLION,
        color="#555555",
        linestyle="-.",
        linewidth=1.2,
        label=f"EventBridge Scheduler: ${EVENTBRIDGE_USD_PER_MILLION:.2f} per million invocations",
    )
    cost.axhline(
        TARGET_USD_AT_MILLION,
        color="black",
        linestyle="--",
        linewidth=1.2,
        label=f"target at 1,000,000 a minute: ${TARGET_USD_AT_MILLION:g}",
    )
    cost.set_ylim(0, max([TARGET_USD_AT_MILLION, *bottoms]) * 1.15)
    cost.set_ylabel("$ per million jobs (stacked by service)")
    cost.set_title("Cost per million jobs against load")

    # Both: load on a log axis, the EventBridge Scheduler quota.
    for axes in (late, cost):
        axes.axvline(
            quota,
            color="#9d755d",
            linestyle="--",
            linewidth=1.2,
            label=f"EventBridge Scheduler default quota: {EVENTBRIDGE_PER_SECOND:,} invocations/s"
            f" ({quota:,} a minute)",
        )
        axes.set_xscale("log")
        span = loads or [1_000, 1_000_000]  # no steady scenarios: the usual range, empty
        axes.set_xlim(min([*span, quota]) / 2.5, max([*span, quota]) * 3.5)
        axes.set_xticks(span, [f"{load:,.0f}" for load in span])
        axes.minorticks_off()
        axes.set_xlabel("load, jobs due a minute (logarithmic)")
        if not steady:
            axes.text(
                0.5,
                0.5,
                "no steady scenarios in this result",
                transform=axes.transAxes,
                ha="center",
                va="center",
                color="#555555",
            )
    # One legend under both panels, the quota once.
    entries: dict[str, Any] = {}
    for axes in (late, cost):
        for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    figure.legend(list(entries.values()), list(entries), loc="outside lower center", ncols=3, fontsize=8)
    figure.suptitle(
        f"Simulated scale (punctual/sim/, deterministic per seed): {len(steady) or 'no'} steady scenario"
        f"{'s' if len(steady) != 1 else ''}, two minutes each"
    )
    return figure

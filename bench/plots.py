"""PNG plots of the benchmark results, drawn with matplotlib (Agg backend, no display needed).

matplotlib is the optional ``bench`` extra (``pip install -e '.[bench]'``; ``make bench`` installs it).
Without it the benchmarks still run and write every figure; only the plots are skipped.

- ``<precision|precision_faults>_lateness.png``: lateness at arrival of every run's deliveries, on
  logarithmic bins, stacked by kind of job, with the targets (docs/benchmarks.md) and the measured p99;
- ``<precision|precision_faults>_timeline.png``: lateness against due time, one panel per run,
  coloured by kind of job, with the kills of the faults runs;
- ``coldstart.png``: import time of each handler next to boto3's, as deployed and without bytecode;
- ``dispatch.png``: dispatches per second against shards and concurrent dispatches;
- ``scale.png``: the simulator's steady scenarios (``steady-1k`` .. ``steady-1m``) against load, jobs
  due a minute: lateness p50, p99 and max next to the target p99 and EventBridge Scheduler's default
  quota, and the $ per million jobs, stacked by service, next to EventBridge Scheduler's price and the
  target at 1,000,000 a minute. A result without steady scenarios (``--only spike-1m``) still draws
  the figure, its panels empty and saying so.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench import common
from bench.common import log

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# One plot: (benchmark name, result) -> the figure.
Maker = Callable[[str, dict[str, Any]], "Figure"]

KINDS = ("inside", "beyond", "cron", "burst", "whole_seconds")
COLOURS = {
    "inside": "#4c78a8",
    "beyond": "#f58518",
    "cron": "#54a24b",
    "burst": "#e45756",
    "whole_seconds": "#72b7b2",
}
LABELS = {
    "inside": "one-off, due within the look-ahead when created (the api dispatches it)",
    "beyond": "one-off, due beyond the look-ahead when created (the dispatcher dispatches it)",
    "cron": "cron, every 10 s",
    "burst": "burst: due at the same millisecond",
    "whole_seconds": "whole seconds: 3 or 4 due at each second of a minute",
}
# The targets for lateness (docs/benchmarks.md), in ms: (value, label).
TARGETS = {
    "precision": [(20.0, "target p99 ≤ 20 ms"), (100.0, "target max < 100 ms")],
    "precision_faults": [(5000.0, "target p99 ≤ 5 s under faults")],
}
FLOOR_MS = 0.5  # log axes: anything at or below this (an early delivery included) is drawn here
TICK_SECONDS = 10  # the benchmarks' dispatcher tick


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write(name: str, result: dict[str, Any]) -> list[str]:
    """Draw one benchmark's plots into the results directory; the names of the files written."""
    lateness: list[tuple[str, Maker]] = [
        ("_lateness", _lateness_histogram),
        ("_timeline", _lateness_timeline),
    ]
    makers: dict[str, list[tuple[str, Maker]]] = {
        "precision": lateness,
        "precision_faults": lateness,
        "coldstart": [("", _coldstart)],
        "dispatch": [("", _dispatch)],
        "scale": [("", _scale)],
    }
    if name not in makers:
        return []
    if not available():
        log("plots: matplotlib is not installed (pip install -e '.[bench]'; make bench does it), no PNGs")
        return []
    written = []
    for suffix, make in makers[name]:
        filename = f"{name}{suffix}.png"
        common.RESULTS.mkdir(parents=True, exist_ok=True)
        make(name, result).savefig(common.RESULTS / filename, dpi=100)
        written.append(filename)
    return written


def _figure(width: float, height: float, rows: int = 1, cols: int = 1) -> tuple[Figure, list[Axes]]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(rows, cols, k + 1) for k in range(rows * cols)]
    return figure, axes


def _log_edges(low: float, high: float, count: int) -> list[float]:
    return [low * (high / low) ** (i / count) for i in range(count + 1)]


def _runs_text(result: dict[str, Any]) -> str:
    n = result.get("repetitions", 1)
    return f"{n} run{'s' if n != 1 else ''}"


# -------------------------------------------------------------------------------------- precision


def _lateness_histogram(name: str, result: dict[str, Any]) -> Figure:
    samples = [(s[1], float(s[2])) for r in result["runs"] for s in r["samples"]]
    targets = TARGETS.get(name, [])
    highest = max([v for _, v in samples] + [t for t, _ in targets] + [10.0])
    edges = _log_edges(FLOOR_MS, highest * 1.5, 48)
    figure, (axes,) = _figure(10, 5.2)
    kinds = [k for k in KINDS if any(kind == k for kind, _ in samples)]
    axes.hist(
        [[max(FLOOR_MS, v) for kind, v in samples if kind == k] for k in kinds],
        bins=edges,
        stacked=True,
        color=[COLOURS[k] for k in kinds],
        label=[LABELS[k] for k in kinds],
    )
    axes.set_xscale("log")
    marks = [
        (value, label, "black", style) for (value, label), style in zip(targets, ("--", "-."), strict=False)
    ]
    p99 = result["arrival_lateness_ms"]["spread_one_offs_and_crons"]["p99"]
    if p99.get("median") is not None:
        marks.append(
            (p99["median"], f"measured p99 of the spread jobs: {p99['median']:g} ms", "#b279a2", ":")
        )
    for value, label, colour, style in marks:
        axes.axvline(value, color=colour, linestyle=style, linewidth=1.2, label=label)
    what = "under faults" if name == "precision_faults" else "local stack"
    axes.set_title(f"Lateness at arrival, {what}: {len(samples)} deliveries of {_runs_text(result)}")
    axes.set_xlabel(f"lateness at arrival, ms (logarithmic bins; ≤ {FLOOR_MS:g} ms drawn at {FLOOR_MS:g})")
    axes.set_ylabel("deliveries")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)
    return figure


def _lateness_timeline(name: str, result: dict[str, Any]) -> Figure:
    runs = result["runs"]
    figure, panels = _figure(10, 0.9 + 2.4 * len(runs), rows=len(runs))
    labelled: set[str] = set()  # one legend entry per kind of kill
    for k, (axes, run) in enumerate(zip(panels, runs, strict=True)):
        start = float(run["window_start"])
        for kind in KINDS:
            points = [(s[0] - start, float(s[2])) for s in run["samples"] if s[1] == kind]
            if points:
                axes.scatter(
                    [x for x, _ in points],
                    [max(FLOOR_MS, y) for _, y in points],
                    s=12,
                    color=COLOURS[kind],
                    label=LABELS[kind] if k == 0 else None,
                    edgecolors="none",
                    alpha=0.85,
                )
        early = [(s[0] - start, FLOOR_MS) for s in run["samples"] if float(s[2]) < 0]
        if early:
            axes.scatter(
                [x for x, _ in early],
                [y for _, y in early],
                marker="v",
                color="red",
                s=30,
                label="early (drawn at the floor)",
            )
        for kill in run.get("kill_log", []):
            dispatcher = kill["role"] == "dispatcher"
            label = "dispatcher killed" if dispatcher else "a worker killed"
            axes.axvline(
                float(kill["at"]) - start,
                color="#9d755d" if dispatcher else "#bab0ac",
                linewidth=1.2 if dispatcher else 0.8,
                linestyle="-" if dispatcher else "--",
                zorder=0,
                label=None if label in labelled else label,
            )
            labelled.add(label)
        # The local dispatcher ticks on whole multiples of the tick period (10 s).
        first, last = min(s[0] for s in run["samples"]), max(s[0] for s in run["samples"])
        tick = math.ceil(first / TICK_SECONDS) * TICK_SECONDS
        ticks = [t - start for t in range(int(tick), int(last) + 1, TICK_SECONDS)]
        axes.plot(
            ticks,
            [1.0] * len(ticks),
            linestyle="none",
            marker="v",
            markersize=6,
            color="black",
            transform=axes.get_xaxis_transform(),
            clip_on=False,
            label="dispatcher tick" if k == 0 else None,
        )
        for value, _label in TARGETS.get(name, []):
            axes.axhline(value, color="black", linestyle=":", linewidth=0.8)
        axes.set_yscale("log")
        axes.set_ylabel("lateness, ms")
        kills = len(run.get("kill_log", []))
        axes.set_title(f"run {k + 1}" + (f": {kills} kills" if kills else ""), fontsize=9, loc="left")
    panels[-1].set_xlabel("due time, seconds after the window opened")
    what = "under faults" if name == "precision_faults" else "local stack"
    figure.suptitle(f"Lateness at arrival against due time, {what} (dotted: the targets, docs/benchmarks.md)")
    figure.legend(loc="outside lower center", ncols=3, fontsize=8)
    return figure


# ------------------------------------------------------------------------------ coldstart, dispatch


def _coldstart(_name: str, result: dict[str, Any]) -> Figure:
    modules = list(result["modules"])
    labels = [
        "import boto3"
        if m == "boto3"
        else f"{m.split('.')[1]} handler" + ("\n+ first body" if "+" in m else "")
        for m in modules
    ]
    figure, (axes,) = _figure(9, 4.6)
    width = 0.38
    series = (
        (
            "as_deployed_import_ms",
            "as deployed (shipped bytecode)",
            "#4c78a8",
            f"median of {result['repeat']}",
        ),
        (
            "no_bytecode_import_ms",
            "without bytecode (compiled on import)",
            "#f58518",
            f"median of {result['repeat']}",
        ),
    )
    for offset, (key, label, colour, runs) in zip((-width / 2, width / 2), series, strict=True):
        figures = [result["modules"][m][key] for m in modules]
        medians = [f["median"] for f in figures]
        bars = axes.bar(
            [i + offset for i in range(len(modules))],
            medians,
            width,
            yerr=[[f["median"] - f["min"] for f in figures], [f["max"] - f["median"] for f in figures]],
            capsize=3,
            color=colour,
            label=f"{label} ({runs}; whiskers: lowest and highest)",
        )
        base = medians[0]
        axes.bar_label(
            bars,
            labels=[f"{m:.0f} ms\n{m / base:.1f}x" for m in medians],
            label_type="center",
            fontsize=8,
            color="white",
        )
    axes.set_xticks(range(len(modules)), labels)
    axes.set_ylabel("import time in a fresh interpreter, ms")
    axes.set_title(
        f"Cold start in Python {result['python']}: each handler's import next to boto3's (x: the ratio)"
    )
    axes.axhline(
        medians_base := result["modules"]["boto3"]["as_deployed_import_ms"]["median"]
        * result["target_ratio"],
        linestyle="--",
        color="#555555",
        linewidth=1,
        label=f"target: {result['target_ratio']}x boto3 as deployed ({medians_base:.0f} ms)",
    )
    axes.legend(fontsize=8, loc="upper left")
    axes.margins(y=0.2)
    return figure


def _dispatch(_name: str, result: dict[str, Any]) -> Figure:
    rows = result["shards"]
    figure, (axes,) = _figure(8, 4.4)
    width = 0.38
    positions = list(range(len(rows)))
    for offset, (key, label, colour) in zip(
        (-width / 2, width / 2),
        (
            ("dispatches_per_second", "all shards together", "#4c78a8"),
            ("dispatches_per_second_per_shard", "per shard", "#72b7b2"),
        ),
        strict=True,
    ):
        figures = [row[key] for row in rows]
        bars = axes.bar(
            [p + offset for p in positions],
            [f["median"] for f in figures],
            width,
            yerr=[[f["median"] - f["min"] for f in figures], [f["max"] - f["median"] for f in figures]],
            capsize=3,
            color=colour,
            label=f"{label}: median, whiskers lowest and highest",
        )
        axes.bar_label(
            bars,
            labels=[f"{f['median']:g}/s" for f in figures],
            label_type="center",
            fontsize=8,
            color="white",
        )
        for p, row in zip(positions, rows, strict=True):
            values = row["per_run"][key]
            axes.scatter([p + offset] * len(values), values, color="black", s=8, zorder=3)
    axes.set_xticks(
        positions,
        [
            f"{row['shards']} shard{'s' if row['shards'] != 1 else ''},"
            f" {row.get('dispatch_threads', 1)} at a time"
            for row in rows
        ],
    )
    axes.set_ylabel("dispatches per second")
    axes.set_title(
        f"Dispatches against the emulator, {result['jobs']} jobs, {_runs_text(result)} (dots: each run)"
    )
    axes.legend(fontsize=8)
    axes.margins(y=0.15)
    return figure


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
        f"Simulated scale (sim/, deterministic per seed): {len(steady) or 'no'} steady scenario"
        f"{'s' if len(steady) != 1 else ''}, two minutes each"
    )
    return figure

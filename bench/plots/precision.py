"""The precision benchmarks' plots (``precision`` and ``precision_faults``): lateness at arrival on
logarithmic bins stacked by kind of job, with the targets and the measured p99, and lateness
against due time, one panel per run, with the kills of the faults runs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from bench.plots.figure import FLOOR_MS, _figure, _log_edges, _runs_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
TICK_SECONDS = 10  # the benchmarks' dispatcher tick

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

"""The plots of the timed benchmarks: ``coldstart.png``, each handler's import time next to boto3's,
as deployed and without bytecode; ``dispatch.png``, dispatches per second against shards and
concurrent dispatches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.plots.figure import _figure, _runs_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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

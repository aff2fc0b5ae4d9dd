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
from typing import Any

from bench import common
from bench.common import log
from bench.plots.figure import Maker
from bench.plots.precision import _lateness_histogram, _lateness_timeline
from bench.plots.scale import _scale, _steady_load
from bench.plots.timings import _coldstart, _dispatch

__all__ = ["_steady_load", "available", "write"]


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

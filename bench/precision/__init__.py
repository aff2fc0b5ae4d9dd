"""Firing precision through the local stack, with or without roles being killed.

Hundreds of one-off jobs spread over a few minutes (due inside and beyond the dispatcher's look-ahead
when they are created), a burst of jobs due at the very same millisecond, one-offs due on whole
seconds (three, then four, at each of a minute's consecutive seconds: the shape of schedules written
by hand; ``--whole-seconds-span``), and a few seconds-level crons, all calling a webhook receiver in
this process. The burst and the whole seconds are reported apart from the spread jobs the precision
targets are about (docs/benchmarks.md). Lateness is measured where it matters, at
*arrival*: the moment the receiver has read the request, minus the ``Punctual-Scheduled-For`` header.
The ``lateness_ms`` each run records (start of the attempt minus scheduled time) is reported too.

With ``--faults`` a random worker or the dispatcher is SIGKILLed every few seconds during the window
(the supervisor restarts it); then lost jobs, duplicates and lateness are what count.

The run is repeated (``--repetitions``, each on a fresh stack with its own random due times): every
statistic is reported as the median over the runs with the lowest and highest, and pooled over all
the runs' deliveries together; lost, early and duplicated deliveries are summed.

    python -m bench.precision [--faults] [--repetitions 3] [--jobs 115] [--window 70]
                              [--whole-seconds-span 60]
"""

from __future__ import annotations

from bench.precision.analysis import _aggregate, _analyse
from bench.precision.plan import (
    WHOLE_SECONDS_BURST_GAP,
    Planned,
    _burst_offset,
    _plan,
    whole_seconds_jobs,
    whole_seconds_offsets,
)
from bench.precision.report import report
from bench.precision.runner import run, save

__all__ = [
    "WHOLE_SECONDS_BURST_GAP",
    "Planned",
    "_aggregate",
    "_analyse",
    "_burst_offset",
    "_plan",
    "report",
    "run",
    "save",
    "whole_seconds_jobs",
    "whole_seconds_offsets",
]

"""The precision benchmark's plan: the stack's settings it assumes (the defaults' tick and look-ahead),
the seconds-level crons, and the due times of the one-off jobs of a run (spread over the window, the
burst due at one millisecond, the whole seconds with 3 or 4 jobs each), with the time conversions
the runner and the analysis share."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from punctual_functions.core.model import parse_iso
from punctual_functions.core.settings import Settings

# The stack runs with its defaults, as users run it: a one-minute tick and the 120 s look-ahead (a
# seconds-level cron's occurrences between ticks are dispatched by whoever dispatches the one before).
TICK_SECONDS = 60
LOOKAHEAD_SECONDS = Settings().lookahead_seconds
# Seconds-level crons: every 10 s (the default minimum interval), at different offsets.
CRONS = ("*/10 * * * * *", "3/10 * * * * *", "7/10 * * * * *")
# Jobs due at each whole second of the whole-seconds span, in turn (3.5 a second on average).
WHOLE_SECONDS_JOBS = (3, 4)
# No whole-second job is due within this many seconds of the burst: the burst's messages reach the
# workers ahead of its second and its attempts start before it, and its outcomes are written after
# it, so nearer ones would meet the burst in the workers and the emulator and blur both figures.
WHOLE_SECONDS_BURST_GAP = 3


@dataclass
class Planned:
    path: str
    group: str  # "inside" / "beyond" the look-ahead when created, "burst" or "whole_seconds"
    due: float  # epoch seconds, whole milliseconds
    job_id: str = ""
    created_at: float = 0.0


def _ts(text: str) -> float:
    return parse_iso(text).timestamp()


def _burst_offset(window: int) -> int:
    """The burst's second, counted from the window's start: a whole second beyond the look-ahead
    when the window is long enough for that (a tick's sweep dispatches it), past the middle of the window."""
    return min(window - 5, max(int(window * 0.55), LOOKAHEAD_SECONDS + 5))


def whole_seconds_offsets(window: int, span: int) -> list[int]:
    """The consecutive whole seconds (counted from the window's start) the whole-seconds jobs are due
    at: ``span`` of them, inside the window (from its second second to its last) and at least
    ``WHOLE_SECONDS_BURST_GAP`` s from the burst. The seconds before the burst are used when they
    hold the span (the last of them: they end the gap before it), else those after it when they do;
    else the span is cut to the longer of the two (the result says so: ``whole_seconds_span_s``)."""
    if span <= 0:
        return []
    burst = _burst_offset(window)
    before = list(range(1, burst - WHOLE_SECONDS_BURST_GAP + 1))
    after = list(range(burst + WHOLE_SECONDS_BURST_GAP, window))
    if len(before) >= span:
        return before[-span:]
    if len(after) >= span:
        return after[:span]
    return before if len(before) >= len(after) else after


def whole_seconds_jobs(offsets: Sequence[int]) -> int:
    return sum(WHOLE_SECONDS_JOBS[k % len(WHOLE_SECONDS_JOBS)] for k in range(len(offsets)))


def _plan(
    rng: random.Random,
    jobs: int,
    window: int,
    burst: int,
    start: float,
    whole_seconds: Sequence[int] = (),
) -> list[Planned]:
    planned = [
        Planned(f"/one/{n}", "", round(start + rng.randrange(0, window * 1000) / 1000, 3))
        for n in range(jobs)
    ]
    # The burst: all due at the same millisecond.
    burst_at = float(int(start) + _burst_offset(window))
    planned += [Planned(f"/burst/{n}", "burst", burst_at) for n in range(burst)]
    # The whole seconds: 3, 4, 3, 4, ... jobs due at each (no draw from rng: the other groups' due
    # times are those of the same seed without them).
    n = 0
    for k, offset in enumerate(whole_seconds):
        for _ in range(WHOLE_SECONDS_JOBS[k % len(WHOLE_SECONDS_JOBS)]):
            planned.append(Planned(f"/whole/{n}", "whole_seconds", float(int(start) + offset)))
            n += 1
    planned.sort(key=lambda p: p.due)
    return planned


def _cron_expected(offset: int, after: float, until: float) -> set[int]:
    """Whole epoch seconds t in (after, until] with t ≡ offset (mod 10): a "o/10" seconds cron."""
    first = int(after) + 1
    return {t for t in range(first, int(until) + 1) if t % 10 == offset}


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)

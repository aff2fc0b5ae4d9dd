"""What a schedule would do, without a job: its next fire times with DST marks, and what its misfire
policy would run after an outage (``POST /v1/schedules/preview``, ``punctual schedule preview``).

Pure: the same ``Schedule`` the dispatcher fires and the same misfire decision it takes
(``model.plan_occurrence``), replayed on a clock of the caller's choosing. No table, no AWS.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from punctual_functions.core.model import MisfirePolicy, plan_occurrence
from punctual_functions.core.schedule import DstMark
from punctual_functions.core.timing import CalendarTiming, FireTimes

# The most fire times one preview lists.
MAX_PREVIEW = 100
# The most occurrences an outage replay walks: run_once's own bound (model.plan_occurrence).
MAX_REPLAYED = 100_000

_ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True)
class FireTime:
    at: datetime  # UTC
    dst: DstMark | None
    moved_from: tuple[datetime, ...] = ()  # occurrences of excluded days its calendar moved here


def fire_times(
    schedule: FireTimes, after: datetime, count: int, until: datetime | None = None
) -> list[FireTime]:
    """The first ``count`` fire times strictly after ``after`` (with ``until``: all up to it, ``count``
    at most), each with its DST mark and, under a calendar, the occurrences moved onto it."""
    if isinstance(schedule, CalendarTiming):
        runs = schedule.events(after, count, markers=False)
        found = [FireTime(run.at, schedule.dst_mark(run.at), run.moved_from) for run in runs]
    else:
        found = [FireTime(moment, schedule.dst_mark(moment)) for moment in schedule.upcoming(after, count)]
    return [time for time in found if until is None or time.at <= until]


@dataclass(frozen=True)
class ExcludedDay:
    day: date
    reason: str
    moved_to: datetime | None  # None: its occurrences are skipped


def excluded_days(timing: CalendarTiming, after: datetime, end: datetime, limit: int) -> list[ExcludedDay]:
    """The days ``timing``'s calendar excludes on which its schedule fires, from ``after`` to ``end``,
    with where their occurrences go: what the preview shows beside the fire times."""
    zone = ZoneInfo(timing.calendar.timezone)
    days: dict[date, ExcludedDay] = {}
    for event in timing.events(after, limit, markers=True):
        if event.at > end:
            break
        if not event.runs and event.day is not None:
            days.setdefault(event.day, ExcludedDay(event.day, event.reason or "excluded", None))
        for origin in event.moved_from:
            day = origin.astimezone(zone).date()
            reason = timing.calendar.excludes(day) or "excluded"
            days.setdefault(day, ExcludedDay(day, reason, event.at))
    return sorted(days.values(), key=lambda excluded: excluded.day)


class Fate(StrEnum):
    """What becomes of an occurrence that fell due while nothing was dispatched."""

    RUNS = "runs"  # dispatched by the first sweep after the outage, late by the outage's remainder
    SKIPPED = "skipped"  # the policy drops it (misfire=skip, or older than catchup_seconds)
    COLLAPSED = "collapsed"  # misfire=run_once: merged into the latest missed one, which runs


@dataclass(frozen=True)
class Missed:
    scheduled_for: datetime
    fate: Fate


@dataclass(frozen=True)
class OutageReplay:
    missed: list[Missed]  # every occurrence due in [start, end), oldest first
    resumes_with: datetime | None  # the first occurrence at or after ``end``: on time again

    def count(self, fate: Fate) -> int:
        return sum(1 for item in self.missed if item.fate is fate)


class OutageTooLong(ValueError):
    """More occurrences fell in the window than a replay walks."""


def replay_outage(
    schedule: FireTimes,
    misfire: MisfirePolicy,
    catchup_seconds: int | None,
    start: datetime,
    end: datetime,
    misfire_threshold: timedelta,
) -> OutageReplay:
    """The dispatcher is down from ``start`` to ``end``: replay its first sweep at ``end``.

    The first occurrence due in the window is dispatched at ``end`` and decided as the dispatcher
    decides it; the chain is followed while it is still in the past, each dispatch at ``end`` (a sweep
    takes seconds, not minutes). Occurrences the chain jumps over are ``collapsed`` into the one
    ``run_once`` runs, else ``skipped``. Assumes nothing of the window was sent before it began."""
    due = schedule.occurrences_from(start, end, limit=MAX_REPLAYED + 1)
    if len(due) > MAX_REPLAYED:
        raise OutageTooLong(f"more than {MAX_REPLAYED:,} occurrences fall due in the window")
    fates: dict[datetime, Fate] = {}
    cursor: datetime | None = due[0] if due else None
    while cursor is not None and cursor < end:
        plan = plan_occurrence(schedule, misfire, catchup_seconds, cursor, end, misfire_threshold)
        if plan.run_scheduled_for is not None:
            fates[plan.run_scheduled_for] = Fate.RUNS
        if plan.skipped is not None:
            fates[plan.skipped] = Fate.SKIPPED
        following = plan.next_occurrence
        jumped = Fate.COLLAPSED if plan.run_scheduled_for is not None else Fate.SKIPPED
        stop = len(due) if following is None else bisect.bisect_left(due, following)
        for moment in due[bisect.bisect_left(due, cursor) : stop]:
            fates.setdefault(moment, jumped)
        cursor = following
    # run_once may run an occurrence due at ``end`` itself (the latest "missed" one), which is on time.
    return OutageReplay([Missed(moment, fates[moment]) for moment in due], schedule.next_after(end - _ONE_US))

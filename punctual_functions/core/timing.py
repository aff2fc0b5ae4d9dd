"""A schedule under a business calendar: which of its fire times run, where moved ones go, and which
days it drops.

``CalendarTiming`` answers the questions a ``Schedule`` answers (``next_after``,
``occurrences_between``, ...) with the calendar applied, so the dispatcher's misfire policy, the API's
first trigger and the preview share one definition; and it says what a trigger's time stands for
(``at``): a run (with the occurrences moved onto it), or a dropped day's marker (the day's first
occurrence under ``on_excluded: skip``: one non-run row per excluded day, reason ``calendar``).

Moves keep the wall time in the schedule's zone (``calendars.place``), so placed times are not in the
order of the occurrences they come from (Saturday 23:00 moved to Monday runs after Monday 09:00).
The next placed time is found by walking the schedule's days in order: each day's business day under
the policy (``target``) never goes back as the days go forward, so once a candidate is found, days
whose target is two days past it cannot beat it. Pure: no AWS, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from punctual_functions.core.calendars import MAX_MOVE_DAYS, Calendar, OnExcluded
from punctual_functions.core.schedule.common import _wall_to_utc
from punctual_functions.core.schedule.plans import DstMark, Schedule

_ONE_US = timedelta(microseconds=1)
# How many of the schedule's days one question walks at most (a yearly cron walks a year a day).
MAX_SCAN_DAYS = 2 * MAX_MOVE_DAYS


class FireTimes(Protocol):
    """What the dispatcher's misfire policy and the preview ask of a schedule, with or without a
    calendar."""

    @property
    def is_recurring(self) -> bool: ...

    def next_after(self, after: datetime) -> datetime | None: ...

    def first_fire_time(self) -> datetime | None: ...

    def occurrences_between(self, start: datetime, end: datetime, limit: int) -> list[datetime]: ...

    def occurrences_from(self, first: datetime, before: datetime, limit: int) -> list[datetime]: ...

    def upcoming(self, after: datetime, count: int = 5) -> list[datetime]: ...

    def dst_mark(self, instant: datetime) -> DstMark | None: ...


@dataclass(frozen=True)
class Occurrence:
    """What the calendar makes of one instant of a job's timeline.

    ``runs``: a run fires at ``at``; ``moved_from`` the occurrences of excluded days moved onto it
    (oldest first; empty when none was). Not ``runs``: the marker of a day the calendar drops,
    ``at`` its first occurrence, ``day`` and ``reason`` why.
    """

    at: datetime
    runs: bool
    moved_from: tuple[datetime, ...] = ()
    day: date | None = None
    reason: str | None = None

    def merged(self, other: Occurrence) -> Occurrence:
        """Two occurrences placed on one instant: one run, with both origins."""
        origins = tuple(sorted(set(self.moved_from) | set(other.moved_from)))
        return Occurrence(self.at, True, origins, self.day or other.day, self.reason or other.reason)


@dataclass(frozen=True)
class CalendarTiming:
    schedule: Schedule
    calendar: Calendar
    on_excluded: OnExcluded

    # ------------------------------------------------------------------ the questions of a schedule

    @property
    def is_recurring(self) -> bool:
        return self.schedule.is_recurring

    @property
    def timezone(self) -> str:
        return self.schedule.timezone

    def next_after(self, after: datetime) -> datetime | None:
        """The first time strictly after ``after`` at which a run fires."""
        found = self._scan(after, markers=False)
        return None if found is None else found.at

    def next_event(self, after: datetime) -> datetime | None:
        """The first time strictly after ``after`` that needs a trigger: a run, or a dropped day's
        marker (the chain's next link)."""
        found = self._scan(after, markers=True)
        return None if found is None else found.at

    def at(self, moment: datetime) -> Occurrence | None:
        """What a trigger at ``moment`` stands for now (None: nothing: the calendar changed since it was
        written, or the occurrence is no longer one)."""
        found = self._scan(moment - _ONE_US, markers=True)
        return found if found is not None and found.at == moment else None

    def newly_excluded(self, moment: datetime) -> Occurrence | None:
        """A trigger's time that is no run or marker (the calendar changed since it was written) but
        a fire time of the schedule on a day the calendar now excludes: the row that says so (the
        rest of the day has no trigger: the chain goes on after it)."""
        if self.schedule.next_after(moment - _ONE_US) != moment:
            return None
        day = moment.astimezone(ZoneInfo(self.calendar.timezone)).date()
        reason = self.calendar.excludes(day)
        return None if reason is None else Occurrence(moment, False, day=day, reason=reason)

    def first_fire_time(self) -> datetime | None:
        first = self.schedule.first_fire_time()
        if first is None:
            return None
        found = self._scan(first - timedelta(days=MAX_MOVE_DAYS + 2), markers=False, floor=first - _ONE_US)
        return None if found is None else found.at

    def occurrences_between(self, start: datetime, end: datetime, limit: int) -> list[datetime]:
        result: list[datetime] = []
        cursor = start
        while len(result) < limit:
            found = self.next_after(cursor)
            if found is None or found > end:
                break
            result.append(found)
            cursor = found
        return result

    def occurrences_from(self, first: datetime, before: datetime, limit: int) -> list[datetime]:
        return self.occurrences_between(first - _ONE_US, before - _ONE_US, limit)

    def upcoming(self, after: datetime, count: int = 5) -> list[datetime]:
        return [event.at for event in self.events(after, count, markers=False)]

    def events(self, after: datetime, count: int, *, markers: bool = True) -> list[Occurrence]:
        """The next ``count`` runs (and dropped days' markers) after ``after``: the preview."""
        result: list[Occurrence] = []
        cursor = after
        while len(result) < count:
            found = self._scan(cursor, markers=markers)
            if found is None:
                break
            result.append(found)
            cursor = found.at
        return result

    def covered(self, dropped: Occurrence) -> list[datetime]:
        """The fire times a dropped day's row stands for: the day's (in the calendar's zone), from
        the dropped one on."""
        if dropped.day is None:
            return [dropped.at]
        end = _day_start(dropped.day + timedelta(days=1), ZoneInfo(self.calendar.timezone)) - _ONE_US
        return self.schedule.occurrences_between(dropped.at - _ONE_US, end, limit=100_000)

    def dst_mark(self, instant: datetime) -> DstMark | None:
        return self.schedule.dst_mark(instant)

    # ------------------------------------------------------------------------------------ the walk

    def _scan(self, after: datetime, *, markers: bool, floor: datetime | None = None) -> Occurrence | None:
        """The first run (or marker) strictly after ``after``, from the schedule's occurrences after
        ``floor`` (by default as far back as a move can come from)."""
        calendar_zone = ZoneInfo(self.calendar.timezone)
        cursor = self._floor(after, calendar_zone) if floor is None else floor
        best: Occurrence | None = None
        best_day: date | None = None
        for _ in range(MAX_SCAN_DAYS):
            raw = self.schedule.next_after(cursor)
            if raw is None:
                break
            day = raw.astimezone(calendar_zone).date()
            reason = self.calendar.excludes(day)
            target = self._target(day, reason)
            horizon = day if target is None else target
            if best_day is not None and (horizon - best_day).days >= 2:
                break
            found: Occurrence | None
            if reason is None:
                found = self._first_on(day, raw, after, calendar_zone)
            elif target is None:
                found = self._marker(day, raw, reason, after, calendar_zone) if markers else None
            else:
                found = self._moved(day, target, reason, raw, after, calendar_zone)
            if found is not None:
                if best is None or found.at < best.at:
                    best, best_day = found, found.at.astimezone(calendar_zone).date()
                elif found.at == best.at:
                    best = best.merged(found)
            cursor = _day_start(day + timedelta(days=1), calendar_zone) - _ONE_US
        return best

    def _floor(self, after: datetime, zone: ZoneInfo) -> datetime:
        """Where the walk starts: ``after``, or for ``next_business_day`` the start of the excluded
        days just before it (their occurrences move onto its day or later)."""
        if self.on_excluded is not OnExcluded.NEXT_BUSINESS_DAY:
            return after - timedelta(days=1)  # a day's margin for a schedule zone ahead of the calendar's
        day = after.astimezone(zone).date()
        for _ in range(MAX_MOVE_DAYS):
            if self.calendar.excludes(day - timedelta(days=1)) is None:
                break
            day -= timedelta(days=1)
        return _day_start(day - timedelta(days=1), zone) - _ONE_US

    def _target(self, day: date, reason: str | None) -> date | None:
        """The business day ``day``'s occurrences run on (None: dropped)."""
        if reason is None:
            return day
        if self.on_excluded is OnExcluded.SKIP:
            return None
        step = 1 if self.on_excluded is OnExcluded.NEXT_BUSINESS_DAY else -1
        return self.calendar.business_day(day, step)

    def _same_day(self, moment: datetime | None, day: date, zone: ZoneInfo) -> bool:
        return moment is not None and moment.astimezone(zone).date() == day

    def _first_on(self, day: date, raw: datetime, after: datetime, zone: ZoneInfo) -> Occurrence | None:
        """A business day's first occurrence after ``after``."""
        found = raw if raw > after else self.schedule.next_after(after)
        return Occurrence(found, True) if found is not None and self._same_day(found, day, zone) else None

    def _marker(
        self, day: date, raw: datetime, reason: str, after: datetime, zone: ZoneInfo
    ) -> Occurrence | None:
        """A dropped day's marker: its first occurrence."""
        first = self.schedule.next_after(_day_start(day, zone) - _ONE_US)
        if first is None or first <= after or not self._same_day(first, day, zone):
            return None
        return Occurrence(first, False, day=day, reason=reason)

    def _moved(
        self, day: date, target: date, reason: str, raw: datetime, after: datetime, zone: ZoneInfo
    ) -> Occurrence | None:
        """The first of an excluded day's occurrences that, moved to ``target``, runs after ``after``."""
        shift = timedelta(days=(target - day).days)
        schedule_zone = ZoneInfo(self.schedule.timezone)
        candidate: datetime | None = raw
        if self._shifted(raw, shift, schedule_zone) <= after:
            # Start at the occurrence whose wall time, moved, would be ``after``'s.
            back = after.astimezone(schedule_zone).replace(tzinfo=None) - shift
            candidate = self.schedule.next_after(max(raw, _wall_to_utc(back, schedule_zone) - _ONE_US))
        for _ in range(4):  # DST can put a moved wall time a little before its neighbour's
            if candidate is None or not self._same_day(candidate, day, zone):
                return None
            moved = self._shifted(candidate, shift, schedule_zone)
            if moved > after:
                return Occurrence(moved, True, (candidate,), day, reason)
            candidate = self.schedule.next_after(candidate)
        return None

    @staticmethod
    def _shifted(moment: datetime, shift: timedelta, zone: ZoneInfo) -> datetime:
        wall = moment.astimezone(zone).replace(tzinfo=None) + shift
        return _wall_to_utc(wall, zone).astimezone(UTC)


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    """The first instant of ``day`` in ``zone``."""
    return _wall_to_utc(datetime.combine(day, time()), zone).astimezone(UTC)


def timing_of(schedule: Schedule, calendar: Calendar | None, on_excluded: OnExcluded) -> FireTimes:
    """The schedule's fire times, under ``calendar`` if there is one."""
    return schedule if calendar is None else CalendarTiming(schedule, calendar, on_excluded)

"""``rate`` and ``at`` parsing, the per-kind fire-time plans, and ``Schedule`` with ``parse_schedule``:
what the API validates and the dispatcher asks "when next"."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, Literal, cast

from punctual_functions.core.schedule.common import (
    _MAX_RATE_SECONDS,
    _ONE_US,
    ScheduleError,
    ScheduleKind,
    _ceil_millisecond,
    _ceil_second,
    _floor_second,
    _format_utc,
    _load_zone,
    _parse_instant,
    _require_aware,
)
from punctual_functions.core.schedule.cron import (
    _CRON_FIELD,
    _DIGITS_RE,
    _compile_cron,
    _cron_error,
    _CronClock,
    _CronSpec,
)

# --------------------------------------------------------------------------------------------------
# Rate and at
# --------------------------------------------------------------------------------------------------

_RATE_RE: Final = re.compile(r"(?P<value>[+-]?[0-9]+(?:\.[0-9]*)?)\s*(?P<unit>[A-Za-z]+)")
_RATE_WRAPPED_RE: Final = re.compile(r"rate\((?P<body>.*)\)", re.IGNORECASE | re.DOTALL)
_RATE_UNITS: Final = {
    "second": 1,
    "seconds": 1,
    "sec": 1,
    "secs": 1,
    "minute": 60,
    "minutes": 60,
    "min": 60,
    "mins": 60,
    "hour": 3600,
    "hours": 3600,
    "day": 86400,
    "days": 86400,
}
_UNIT_NAMES: Final = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


def _parse_rate(text: object) -> tuple[int, str]:
    """Return (interval in seconds, normalized text like '5 minutes')."""
    if not isinstance(text, str):
        raise ScheduleError("schedule.rate", "must be a string like '5 minutes'")
    body = text.strip()
    wrapped = _RATE_WRAPPED_RE.fullmatch(body)
    if wrapped is not None:
        body = wrapped.group("body").strip()
    match = _RATE_RE.fullmatch(body)
    if match is None:
        raise ScheduleError(
            "schedule.rate", f"'{text}' is not a rate; write a whole number and a unit, like '5 minutes'"
        )
    unit = _RATE_UNITS.get(match.group("unit").lower())
    if unit is None:
        raise ScheduleError(
            "schedule.rate",
            f"unknown unit '{match.group('unit')}'; use seconds, minutes, hours or days",
        )
    raw = match.group("value")
    if not _DIGITS_RE.fullmatch(raw.lstrip("+")) or int(raw) <= 0:
        raise ScheduleError("schedule.rate", f"the value '{raw}' must be a positive whole number")
    value = int(raw)
    if value * unit > _MAX_RATE_SECONDS:
        raise ScheduleError("schedule.rate", "a rate may be at most 3650 days")
    name = _UNIT_NAMES[unit]
    return value * unit, f"{value} {name}" if value == 1 else f"{value} {name}s"


_AT_WRAPPED_RE: Final = re.compile(r"at\((?P<body>.*)\)", re.IGNORECASE | re.DOTALL)


def _parse_at(text: object, zone: tzinfo) -> datetime:
    if not isinstance(text, str):
        raise ScheduleError("schedule.at", "must be an ISO 8601 date-time string like '2026-11-22T13:00:05Z'")
    body = text.strip()
    wrapped = _AT_WRAPPED_RE.fullmatch(body)
    if wrapped is not None:
        body = wrapped.group("body")
    return _ceil_millisecond(_parse_instant(body, zone, "schedule.at"))


def _describe_seconds(seconds: int) -> str:
    for unit in (86400, 3600, 60):
        if seconds % unit == 0:
            count = seconds // unit
            return f"{count} {_UNIT_NAMES[unit]}" + ("" if count == 1 else "s")
    return f"{seconds} second" + ("" if seconds == 1 else "s")


# --------------------------------------------------------------------------------------------------
# Schedule
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AtPlan:
    instant: datetime

    def next_after(self, after: datetime) -> datetime | None:
        return self.instant if self.instant > after else None


@dataclass(frozen=True)
class _RatePlan:
    anchor: datetime
    interval: timedelta
    first_index: int

    def next_after(self, after: datetime) -> datetime | None:
        index = max(self.first_index, (after - self.anchor) // self.interval + 1)
        try:
            return self.anchor + index * self.interval
        except OverflowError:
            return None


@dataclass(frozen=True)
class _CronPlan:
    spec: _CronSpec
    clock: _CronClock

    def next_after(self, after: datetime) -> datetime | None:
        return self.clock.next_after(after)


_Plan = _AtPlan | _RatePlan | _CronPlan


@dataclass(frozen=True)
class DstMark:
    """A cron fire time the DST contract moved or deduplicated; ``local`` is the wall time the
    expression named (for a gap, the first skipped one), naive, in the schedule's zone."""

    kind: Literal["gap", "repeat"]
    local: datetime


@dataclass(frozen=True)
class Schedule:
    """A validated schedule; computes its fire times.

    Fire times: ``at`` fires once at its instant (milliseconds allowed). ``cron`` fires at whole
    seconds per the module's DST contract. ``rate`` fires at ``anchor + k * interval``; with a
    ``start_at`` the anchor is ``start_at`` (rounded up to a whole second) and ``k >= 0``, so the
    first firing is at ``start_at``; without one the anchor is the creation time (rounded down to a
    whole second) and ``k >= 1``, so the first firing is one interval after creation, like
    EventBridge and Celery interval schedules. ``end_at`` is inclusive. For ``at`` and ``cron``
    the anchor is the creation time.
    """

    kind: ScheduleKind
    expression: str
    timezone: str
    start_at: datetime | None
    end_at: datetime | None
    anchor: datetime
    _plan: _Plan = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("start_at", "end_at", "anchor"):
            value = getattr(self, name)
            if value is not None:
                _require_aware(value, name)
                object.__setattr__(self, name, value.astimezone(UTC))
        zone = _load_zone(self.timezone, strict=False)
        plan: _Plan
        if self.kind == "at":
            if self.start_at is not None or self.end_at is not None:
                raise ScheduleError("schedule.at", "a one-off 'at' schedule takes no start_at or end_at")
            instant = _parse_at(self.expression, zone)
            object.__setattr__(self, "expression", _format_utc(instant))
            plan = _AtPlan(instant)
        elif self.kind == "rate":
            seconds, normalized = _parse_rate(self.expression)
            object.__setattr__(self, "expression", normalized)
            plan = _RatePlan(self.anchor, timedelta(seconds=seconds), 0 if self.start_at is not None else 1)
        elif self.kind == "cron":
            if not isinstance(self.expression, str):
                raise _cron_error("must be a string like '0 13 * * 1-5'")
            object.__setattr__(self, "expression", self.expression.strip())
            spec = _compile_cron(self.expression)
            plan = _CronPlan(spec, _CronClock(spec, zone))
        else:
            raise ScheduleError("schedule", f"unknown schedule kind {self.kind!r}; use at, cron or rate")
        object.__setattr__(self, "_plan", plan)

    def __reduce__(self) -> tuple[type[Schedule], tuple[Any, ...]]:
        """Copy and pickle by value: the cached croniter holds a lock, which neither can handle."""
        return (
            type(self),
            (self.kind, self.expression, self.timezone, self.start_at, self.end_at, self.anchor),
        )

    @property
    def zone(self) -> tzinfo:
        return _load_zone(self.timezone, strict=False)

    @property
    def is_recurring(self) -> bool:
        return self.kind != "at"

    def shortest_gap_seconds(self) -> int | None:
        """The closest two fire times can be (a cron's tightest spacing, a rate's interval); None for
        ``at``."""
        if isinstance(self._plan, _CronPlan):
            return self._plan.spec.min_gap_seconds()
        if isinstance(self._plan, _RatePlan):
            return int(self._plan.interval.total_seconds())
        return None

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire time strictly after ``after`` within start_at..end_at, or None."""
        _require_aware(after, "after")
        lower = after.astimezone(UTC)
        if self.start_at is not None and self.start_at > lower:
            lower = self.start_at - _ONE_US
        found = self._plan.next_after(lower)
        if found is None or (self.end_at is not None and found > self.end_at):
            return None
        return found

    def first_fire_time(self) -> datetime | None:
        """The schedule's first fire time; may be in the past (an ``at`` or ``start_at`` in the past)."""
        if isinstance(self._plan, _AtPlan):
            return self._plan.instant
        if self.start_at is not None:
            return self.next_after(self.start_at - _ONE_US)
        if isinstance(self._plan, _RatePlan):
            return self.next_after(self.anchor - _ONE_US)
        return self.next_after(self.anchor)

    def upcoming(self, after: datetime, count: int = 5) -> list[datetime]:
        result: list[datetime] = []
        cursor: datetime | None = after
        while cursor is not None and len(result) < count:
            cursor = self.next_after(cursor)
            if cursor is not None:
                result.append(cursor)
        return result

    def occurrences_from(self, first: datetime, before: datetime, limit: int) -> list[datetime]:
        """Fire times ``t`` with ``first <= t < before``, at most ``limit``, oldest first."""
        return self.occurrences_between(first - _ONE_US, before - _ONE_US, limit)

    def occurrences_between(self, start: datetime, end: datetime, limit: int) -> list[datetime]:
        """Fire times ``t`` with ``start < t <= end``, at most ``limit`` of them, oldest first."""
        _require_aware(end, "end")
        result: list[datetime] = []
        cursor: datetime | None = start
        while len(result) < limit:
            assert cursor is not None
            cursor = self.next_after(cursor)
            if cursor is None or cursor > end:
                break
            result.append(cursor)
        return result

    def dst_mark(self, instant: datetime) -> DstMark | None:
        """How the DST contract shaped the cron fire time ``instant``, if it did: ``gap`` when it
        stands for local times that did not exist that day (clocks sprang forward; they fire once, at
        the transition), ``repeat`` when its local time occurs twice (clocks fell back; it fires once,
        on the first pass). ``at`` and ``rate`` fire in absolute time: never marked."""
        if not isinstance(self._plan, _CronPlan):
            return None
        zone = self.zone
        local = instant.astimezone(zone)
        wall = local.replace(tzinfo=None)
        if wall.replace(tzinfo=zone, fold=0).utcoffset() != wall.replace(tzinfo=zone, fold=1).utcoffset():
            return DstMark("repeat", wall)
        before = (instant - _ONE_US).astimezone(zone).utcoffset()
        after = local.utcoffset()
        assert before is not None and after is not None
        if after > before:  # the clocks sprang forward at this very instant
            named = self._plan.clock.next_wall(_floor_second(wall - (after - before)) - timedelta(seconds=1))
            if named is not None and named < wall:
                return DstMark("gap", named)
        return None

    def to_dict(self) -> dict[str, str]:
        data = {self.kind: self.expression, "timezone": self.timezone}
        if self.start_at is not None:
            data["start_at"] = _format_utc(self.start_at)
        if self.end_at is not None:
            data["end_at"] = _format_utc(self.end_at)
        data["anchor"] = _format_utc(self.anchor)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        """Rebuild a stored schedule; trusted input, so no minimum-interval or "never fires" checks."""
        kinds = [kind for kind in ("at", "cron", "rate") if data.get(kind) is not None]
        if len(kinds) != 1:
            raise ScheduleError("schedule", "a stored schedule needs exactly one of 'at', 'cron' or 'rate'")
        kind = cast(ScheduleKind, kinds[0])
        timezone_name = data.get("timezone") or "UTC"
        zone = _load_zone(timezone_name, strict=False)
        if data.get("anchor") is None:
            raise ScheduleError("schedule.anchor", "a stored schedule needs its anchor")
        anchor = _parse_instant(data["anchor"], zone, "schedule.anchor")
        start = _parse_instant(data["start_at"], zone, "schedule.start_at") if data.get("start_at") else None
        end = _parse_instant(data["end_at"], zone, "schedule.end_at") if data.get("end_at") else None
        return cls(kind, data[kind], timezone_name, start, end, anchor)


def parse_schedule(
    *,
    at: str | None = None,
    cron: str | None = None,
    rate: str | None = None,
    timezone: str | None = None,
    start_at: str | None = None,
    end_at: str | None = None,
    now: datetime,
    min_interval_seconds: int = 10,
) -> Schedule:
    """Validate a user's schedule; ``now`` is the creation time (the anchor, see ``Schedule``).

    Refuses, with the offending field named: not exactly one form, bad syntax, unknown time zone,
    impossible dates, ``at`` with bounds, ``end_at <= start_at``, a schedule that would never fire
    (from ``now`` or ``start_at`` on, before ``end_at``) and one firing faster than the minimum interval.
    """
    _require_aware(now, "now")
    now = now.astimezone(UTC)
    given = [name for name, value in (("at", at), ("cron", cron), ("rate", rate)) if value is not None]
    if len(given) != 1:
        detail = f" (got {' and '.join(given)})" if given else ""
        raise ScheduleError("schedule", f"give exactly one of 'at', 'cron' or 'rate'{detail}")
    timezone_name = "UTC" if timezone is None else timezone
    zone = _load_zone(timezone_name, strict=True)

    if at is not None:
        for name, value in (("start_at", start_at), ("end_at", end_at)):
            if value is not None:
                raise ScheduleError(
                    f"schedule.{name}",
                    f"a one-off 'at' schedule takes no {name}; use cron or rate for bounds",
                )
        return Schedule("at", _format_utc(_parse_at(at, zone)), timezone_name, None, None, now)

    start = _parse_instant(start_at, zone, "schedule.start_at") if start_at is not None else None
    end = _parse_instant(end_at, zone, "schedule.end_at") if end_at is not None else None
    if start is not None and end is not None and end <= start:
        raise ScheduleError(
            "schedule.end_at", f"end_at ({_format_utc(end)}) must be after start_at ({_format_utc(start)})"
        )
    schedule: Schedule
    if cron is not None:
        schedule = Schedule("cron", cron, timezone_name, start, end, now)
        assert isinstance(schedule._plan, _CronPlan)
        gap = schedule._plan.spec.min_gap_seconds()
        field_name = _CRON_FIELD
    else:
        anchor = _ceil_second(start) if start is not None else _floor_second(now)
        schedule = Schedule("rate", cast(str, rate), timezone_name, start, end, anchor)
        assert isinstance(schedule._plan, _RatePlan)
        gap = int(schedule._plan.interval.total_seconds())
        field_name = "schedule.rate"
    if gap < min_interval_seconds:
        raise ScheduleError(
            field_name,
            f"fires every {_describe_seconds(gap)} at its fastest; the minimum interval is "
            f"{_describe_seconds(min_interval_seconds)}",
        )

    if end is not None and end <= now:
        raise ScheduleError("schedule.end_at", f"end_at ({_format_utc(end)}) is not in the future")
    probe = max(now, start) if start is not None else now
    if schedule.next_after(probe - _ONE_US) is None:
        if end is not None and schedule._plan.next_after(probe - _ONE_US) is not None:
            raise ScheduleError(
                "schedule.end_at", f"the schedule has no fire time between {_format_utc(probe)} and end_at"
            )
        assert isinstance(schedule._plan, _CronPlan)
        years = schedule._plan.spec.years
        if years is not None and years[-1] < probe.year:
            raise ScheduleError(
                _CRON_FIELD, f"never fires: its years end in {years[-1]}, which is in the past"
            )
        raise ScheduleError(_CRON_FIELD, f"never fires: no date after {_format_utc(probe)} matches it")
    return schedule

"""Schedules' shared ground: the error type, limits, time-zone and wall-clock helpers, and parsing an
instant. The contract of every schedule is in ``punctual_functions/core/schedule/__init__.py``."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from typing import Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

ScheduleKind = Literal["at", "cron", "rate"]

_ONE_US: Final = timedelta(microseconds=1)
_ONE_SECOND: Final = timedelta(seconds=1)
_MIN_YEAR: Final = 1970
_MAX_YEAR: Final = 2199
_MAX_RATE_SECONDS: Final = 3650 * 86400
_MAX_STEPS: Final = 10_000


class ScheduleError(ValueError):
    """A schedule the user gave cannot be accepted; ``field`` says which input, ``reason`` why.

    A ``ValueError`` so that callers that only care about "bad input" can catch it generically.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


# --------------------------------------------------------------------------------------------------
# Time helpers
# --------------------------------------------------------------------------------------------------


def _format_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``; fractions only where present, so the text round-trips exactly."""
    moment = moment.astimezone(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond % 1000 == 0 and moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    elif moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def _floor_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def _ceil_second(moment: datetime) -> datetime:
    return moment if moment.microsecond == 0 else moment.replace(microsecond=0) + _ONE_SECOND


def _ceil_millisecond(moment: datetime) -> datetime:
    """Never round a one-off time down: firing early is the one thing a scheduler must not do."""
    rest = moment.microsecond % 1000
    return moment if rest == 0 else moment + timedelta(microseconds=1000 - rest)


def _require_aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {moment!r}")


def _transition_after(zone: tzinfo, low: datetime, high: datetime) -> datetime:
    """The first whole-second instant in (low, high] whose UTC offset differs from low's.

    tzdb transitions fall on whole seconds, and zoneinfo does not expose them, so bisect.
    """
    offset = low.astimezone(zone).utcoffset()
    lo = math.floor(low.timestamp())
    hi = math.ceil(high.timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).utcoffset() == offset:
            lo = mid
        else:
            hi = mid
    return datetime.fromtimestamp(hi, UTC)


def _wall_to_utc(wall: datetime, zone: tzinfo) -> datetime:
    """Map a naive local wall time to the instant it fires at, per the DST contract.

    A repeated wall time takes its first occurrence (fold=0); a skipped one is detected by the
    round trip failing and goes to the transition instant, which lies between its fold=1 and fold=0
    readings.
    """
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first
    before = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return _transition_after(zone, before, first)


def _end_of_repeat(wall: datetime, zone: tzinfo) -> datetime | None:
    """For a wall time repeated by a fall-back, the first wall time after the repeated stretch.

    Lets the cron search jump over the second pass of a repeated hour in one step instead of
    stepping through every slot in it (which, for a per-second cron, is thousands of steps).
    """
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    first_utc, second_utc = first.astimezone(UTC), second.astimezone(UTC)
    if second_utc <= first_utc:
        return None
    transition = _transition_after(zone, first_utc, second_utc)
    old_offset = first.utcoffset()
    assert old_offset is not None
    return (transition + old_offset).replace(tzinfo=None)


@cache
def _known_zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def _load_zone(name: object, *, strict: bool) -> ZoneInfo:
    """Resolve an IANA name; ``strict`` also refuses keys that merely happen to be files.

    Without ``strict`` (trusted, stored data) the available-zones scan is skipped, which keeps it
    off the dispatcher's cold start.
    """
    if not isinstance(name, str) or not name.strip():
        raise ScheduleError(
            "schedule.timezone", "must be a non-empty IANA time zone name like 'Europe/Berlin'"
        )
    if strict and name not in _known_zone_names():
        raise ScheduleError(
            "schedule.timezone", f"unknown time zone '{name}'; use an IANA name like 'Europe/Berlin' or 'UTC'"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ScheduleError(
            "schedule.timezone", f"unknown time zone '{name}'; use an IANA name like 'Europe/Berlin' or 'UTC'"
        ) from exc


def _parse_instant(text: object, zone: tzinfo, field_name: str) -> datetime:
    """Parse an ISO 8601 date-time; a naive one is a wall time in ``zone`` (DST contract applies)."""
    if not isinstance(text, str):
        raise ScheduleError(field_name, "must be an ISO 8601 date-time string like '2026-11-22T13:00:05Z'")
    stripped = text.strip()
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError as exc:
        raise ScheduleError(
            field_name, f"'{stripped}' is not a valid ISO 8601 date-time ({exc}); e.g. '2026-11-22T13:00:05Z'"
        ) from exc
    if not _MIN_YEAR <= parsed.year <= _MAX_YEAR:
        raise ScheduleError(field_name, f"year {parsed.year} is outside {_MIN_YEAR}-{_MAX_YEAR}")
    if parsed.tzinfo is None:
        return _wall_to_utc(parsed, zone)
    return parsed.astimezone(UTC)


def parse_instant(text: object, timezone: str, field_name: str) -> datetime:
    """An ISO 8601 date-time from the user; a naive one is a wall time in ``timezone`` (an IANA name,
    already validated), under the DST contract. Refused with ``field_name`` named."""
    return _parse_instant(text, _load_zone(timezone, strict=False), field_name)

"""Job schedules: parsing user input, and computing fire times.

A schedule is a one-off ``at`` time, a ``cron`` expression (Unix 5-field, 6-field with a leading
seconds field, or EventBridge ``cron(...)``) or a fixed ``rate``. Everything here is plain Python so
the API (validation, the ``upcoming`` preview) and the dispatcher (the next fire time, on its hot path)
agree on one definition of "when does this job fire".

Library choice: croniter (already a runtime dependency, maintained, and the only mainstream Python
cron library with a seconds field, ``L``, ``W`` and ``#``). It is used purely as a *naive wall-clock*
iterator; this module adds the thin glue for what it lacks or gets wrong for us:

* Our own field parser validates every field so users get a reason naming the field and the token
  (croniter's messages name neither), refuses croniter's non-standard extensions (``H``, ``R``,
  wrapping ranges), and hands croniter a canonical numeric expression. EventBridge's day-of-week
  numbering (1-7 = SUN-SAT), its ``L``/``nL`` day-of-week forms and ``?`` are translated here.
* The EventBridge year field is filtered here (jumping straight to the next allowed year), because
  croniter's year support stops at 2099 and fails on year ranges combined with a fixed date.
* ``LW`` (last weekday of the month) is filtered here; croniter has no such token.
* Time zones: croniter's own DST handling moves a skipped time by whole minutes and does not give the
  contract below, so croniter only ever sees naive local times and the mapping to UTC is done here.

``cronsim`` was the alternative (it knows ``LW`` and ``5L``) but has neither seconds nor years, so it
would need more glue, plus a new dependency.

DST contract: cron fields match local wall-clock time in ``timezone``. A wall time skipped by a
spring-forward transition fires once, at the transition instant (several skipped slots collapse into
that one firing, also with a slot at the first valid wall time). A wall time repeated by a fall-back
transition fires once, at its first occurrence. The fire times are strictly increasing in UTC.

Day-of-month and day-of-week in the Unix dialects follow POSIX/Vixie: when both are restricted (neither
is ``*``), a day matches if either matches.
"""

from __future__ import annotations

import calendar
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from itertools import pairwise
from typing import Any, Final, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import CroniterBadDateError, CroniterError, croniter

__all__ = ["Schedule", "ScheduleError", "ScheduleKind", "parse_schedule"]

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


# --------------------------------------------------------------------------------------------------
# Cron parsing
# --------------------------------------------------------------------------------------------------

_MONTH_NAMES: Final = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAY_NAMES: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_UNIX_DOW_NAMES: Final = {name: i for i, name in enumerate(_DAY_NAMES)}
_EB_DOW_NAMES: Final = {name: i + 1 for i, name in enumerate(_DAY_NAMES)}
_DAYS_IN_MONTH_MAX: Final = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_ITEM_RE: Final = re.compile(r"(?P<start>\*|[A-Za-z0-9]+)(?:-(?P<end>[A-Za-z0-9]+))?(?:/(?P<step>[^/]*))?")
_DIGITS_RE: Final = re.compile(r"[0-9]+")
_WEEKDAY_NEAREST_RE: Final = re.compile(r"([0-9]+)W", re.IGNORECASE)
_LAST_DOW_RE: Final = re.compile(r"([A-Za-z0-9]+)L", re.IGNORECASE)
_NTH_DOW_RE: Final = re.compile(r"([A-Za-z0-9]+)#([^#]*)")

_CRON_FIELD: Final = "schedule.cron"


@dataclass(frozen=True)
class _FieldKind:
    label: str
    low: int
    high: int
    names: Mapping[str, int]


_SECOND: Final = _FieldKind("second", 0, 59, {})
_MINUTE: Final = _FieldKind("minute", 0, 59, {})
_HOUR: Final = _FieldKind("hour", 0, 23, {})
_DOM: Final = _FieldKind("day-of-month", 1, 31, {})
_MONTH: Final = _FieldKind("month", 1, 12, _MONTH_NAMES)
_UNIX_DOW: Final = _FieldKind("day-of-week", 0, 7, _UNIX_DOW_NAMES)
_EB_DOW: Final = _FieldKind("day-of-week", 1, 7, _EB_DOW_NAMES)
_YEAR: Final = _FieldKind("year", _MIN_YEAR, _MAX_YEAR, {})


def _cron_error(reason: str) -> ScheduleError:
    return ScheduleError(_CRON_FIELD, reason)


def _value(token: str, kind: _FieldKind) -> int:
    if _DIGITS_RE.fullmatch(token):
        number = int(token)
        if not kind.low <= number <= kind.high:
            raise _cron_error(f"{kind.label} value {number} is out of range {kind.low}-{kind.high}")
        return number
    if token.upper() in kind.names:
        return kind.names[token.upper()]
    if kind.names:
        allowed = ", ".join(kind.names)
        raise _cron_error(
            f"'{token}' is not a valid {kind.label} value (use {kind.low}-{kind.high} or {allowed})"
        )
    raise _cron_error(f"'{token}' is not a valid {kind.label} value (use {kind.low}-{kind.high})")


def _expand_item(item: str, kind: _FieldKind) -> list[int]:
    """Expand one list item (``*``, ``5``, ``1-5``, ``*/15``, ``0/15``, ``10-50/5``) to its values."""
    match = _ITEM_RE.fullmatch(item)
    if match is None:
        raise _cron_error(f"'{item}' is not a valid {kind.label} entry")
    start, end, step_text = match.group("start", "end", "step")
    if start == "*":
        if end is not None:
            raise _cron_error(f"'{item}' in {kind.label}: '*' cannot start a range")
        low, high = kind.low, kind.high
    else:
        low = _value(start, kind)
        high = _value(end, kind) if end is not None else (kind.high if step_text is not None else low)
    step = 1
    if step_text is not None:
        if not _DIGITS_RE.fullmatch(step_text):
            raise _cron_error(f"step '{step_text}' in {kind.label} '{item}' must be a whole number")
        step = int(step_text)
        if step < 1:
            raise _cron_error(f"step in {kind.label} '{item}' must be at least 1")
    if low > high:
        raise _cron_error(f"range '{item}' in {kind.label} runs backwards; write it from low to high")
    return list(range(low, high + 1, step))


def _expand_plain_field(text: str, kind: _FieldKind) -> list[int]:
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise _cron_error(f"{kind.label} field '{text}' has an empty list entry")
        values.update(_expand_item(item, kind))
    return sorted(values)


def _is_wildcard(text: str) -> bool:
    return text in ("*", "?")


@dataclass(frozen=True)
class _DayOfMonth:
    token: str  # croniter's day-of-month field
    last_weekday: bool  # ``LW``: croniter gets ``*`` and this module filters
    plain_days: tuple[int, ...]  # for the "never occurs" check; empty when specials are involved
    special: bool


def _parse_dom(text: str) -> _DayOfMonth:
    if _is_wildcard(text):
        return _DayOfMonth("*", last_weekday=False, plain_days=(), special=False)
    if text.upper() == "LW":
        return _DayOfMonth("*", last_weekday=True, plain_days=(), special=True)
    if "W" in text.upper():
        nearest = _WEEKDAY_NEAREST_RE.fullmatch(text)
        if nearest is None:
            raise _cron_error(
                f"day-of-month '{text}': 'W' takes a single day on its own, like '15W' (or 'LW' for the "
                "last weekday of the month)"
            )
        day = _value(nearest.group(1), _DOM)
        return _DayOfMonth(f"{day}W", last_weekday=False, plain_days=(), special=True)
    days: set[int] = set()
    has_last = False
    for item in text.split(","):
        if item.upper() == "L":
            has_last = True
        elif not item:
            raise _cron_error(f"day-of-month field '{text}' has an empty list entry")
        else:
            days.update(_expand_item(item, _DOM))
    parts = [str(day) for day in sorted(days)] + (["L"] if has_last else [])
    return _DayOfMonth(",".join(parts), last_weekday=False, plain_days=tuple(sorted(days)), special=has_last)


def _dow_to_unix(value: int, eventbridge: bool) -> int:
    """EventBridge counts SUN=1..SAT=7; croniter, like Unix, SUN=0..SAT=6 (Unix also allows 7)."""
    return value - 1 if eventbridge else value % 7


def _parse_dow(text: str, eventbridge: bool) -> tuple[str, bool]:
    """Return croniter's day-of-week field and whether it uses ``#``/``L`` forms."""
    if _is_wildcard(text):
        return "*", False
    kind = _EB_DOW if eventbridge else _UNIX_DOW
    plain: set[int] = set()
    special: list[str] = []
    for item in text.split(","):
        if not item:
            raise _cron_error(f"day-of-week field '{text}' has an empty list entry")
        if item.upper() == "L":
            if not eventbridge:
                raise _cron_error(
                    "day-of-week 'L' on its own is EventBridge syntax; here write a weekday before it, "
                    "like '5L' for the last Friday of the month"
                )
            plain.add(6)  # "last day of the week": Saturday
            continue
        nth = _NTH_DOW_RE.fullmatch(item)
        if nth is not None:
            weekday = _dow_to_unix(_value(nth.group(1), kind), eventbridge)
            occurrence = nth.group(2)
            if not _DIGITS_RE.fullmatch(occurrence) or not 1 <= int(occurrence) <= 5:
                raise _cron_error(f"day-of-week '{item}': the number after '#' must be 1-5")
            special.append(f"{weekday}#{int(occurrence)}")
            continue
        last = _LAST_DOW_RE.fullmatch(item)
        if last is not None:
            weekday = _dow_to_unix(_value(last.group(1), kind), eventbridge)
            special.append(f"L{weekday}")
            continue
        plain.update(_dow_to_unix(value, eventbridge) for value in _expand_item(item, kind))
    if special and plain:
        raise _cron_error(
            f"day-of-week '{text}' mixes plain weekdays with '#' or 'L' entries, which is not supported"
        )
    if special:
        return ",".join(special), True
    return ",".join(str(day) for day in sorted(plain)), False


def _parse_years(text: str) -> tuple[int, ...] | None:
    if text == "*":
        return None
    if text == "?":
        raise _cron_error("'?' is only allowed in day-of-month or day-of-week, not in year")
    return tuple(_expand_plain_field(text, _YEAR))


def _parse_time_field(text: str, kind: _FieldKind) -> tuple[int, ...]:
    if text == "?":
        raise _cron_error(f"'?' is only allowed in day-of-month or day-of-week, not in {kind.label}")
    return tuple(_expand_plain_field(text, kind))


@dataclass(frozen=True)
class _CronSpec:
    """A validated cron expression in the form croniter and the glue need."""

    croniter_expression: str  # six fields, seconds first
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    years: tuple[int, ...] | None
    last_weekday: bool

    def min_gap_seconds(self) -> int:
        """The smallest gap between consecutive fire times, ignoring DST.

        Within a day the fire times are exactly hours x minutes x seconds, so the smallest gap is
        found from the fields; across midnight it assumes two consecutive days can both fire, which
        at worst refuses a contrived expression that is only fast at midnight on non-adjacent days.
        """
        sec, mins, hours = self.seconds, self.minutes, self.hours
        first = hours[0] * 3600 + mins[0] * 60 + sec[0]
        last = hours[-1] * 3600 + mins[-1] * 60 + sec[-1]
        gaps = [86400 - last + first]
        if len(sec) > 1:
            gaps.append(min(b - a for a, b in pairwise(sec)))
        if len(mins) > 1:
            gaps.append(60 * min(b - a for a, b in pairwise(mins)) - (sec[-1] - sec[0]))
        if len(hours) > 1:
            span = mins[-1] * 60 + sec[-1] - (mins[0] * 60 + sec[0])
            gaps.append(3600 * min(b - a for a, b in pairwise(hours)) - span)
        return min(gaps)


def _check_day_fits_month(dom: _DayOfMonth, months: tuple[int, ...], dow_restricted: bool) -> None:
    """Refuse '30 February' up front, with a clearer reason than "never fires"."""
    if dow_restricted or dom.special or not dom.plain_days:
        return
    longest = max(_DAYS_IN_MONTH_MAX[month - 1] for month in months)
    if dom.plain_days[0] > longest:
        names = ", ".join(calendar.month_abbr[month].upper() for month in months)
        raise _cron_error(f"day-of-month {dom.plain_days[0]} never occurs in {names}")


def _canonical(values: tuple[int, ...], kind: _FieldKind) -> str:
    if len(values) == kind.high - kind.low + 1:
        return "*"
    return ",".join(str(value) for value in values)


def _compile_unix(fields: list[str]) -> _CronSpec:
    if len(fields) == 6:
        seconds = _parse_time_field(fields[0], _SECOND)
        fields = fields[1:]
    else:
        seconds = (0,)
    minute, hour, dom_text, month_text, dow_text = fields
    minutes = _parse_time_field(minute, _MINUTE)
    hours = _parse_time_field(hour, _HOUR)
    months = _parse_time_field(month_text, _MONTH)
    dom = _parse_dom(dom_text)
    dow, dow_special = _parse_dow(dow_text, eventbridge=False)
    dom_restricted, dow_restricted = not _is_wildcard(dom_text), not _is_wildcard(dow_text)
    if dom_restricted and dow_restricted and (dow_special or dom.last_weekday or "W" in dom.token):
        raise _cron_error(
            "'W', 'LW', '#' and weekday 'L' cannot be combined with a restricted day of the other kind; "
            "put '*' in the other day field"
        )
    _check_day_fits_month(dom, months, dow_restricted)
    times = (_canonical(seconds, _SECOND), _canonical(minutes, _MINUTE), _canonical(hours, _HOUR))
    expression = " ".join((*times, dom.token, _canonical(months, _MONTH), dow))
    return _CronSpec(expression, seconds, minutes, hours, None, dom.last_weekday)


def _compile_eventbridge(fields: list[str]) -> _CronSpec:
    minute, hour, dom_text, month_text, dow_text, year_text = fields
    minutes = _parse_time_field(minute, _MINUTE)
    hours = _parse_time_field(hour, _HOUR)
    months = _parse_time_field(month_text, _MONTH)
    if (dom_text == "?") == (dow_text == "?"):
        raise _cron_error(
            "in cron(...) exactly one of day-of-month and day-of-week must be '?' "
            f"(got day-of-month '{dom_text}', day-of-week '{dow_text}')"
        )
    for text, label in ((dom_text, "day-of-month"), (dow_text, "day-of-week")):
        if "?" in text and text != "?":
            raise _cron_error(f"'?' in {label} must stand alone")
    dom = _parse_dom(dom_text)
    dow, _ = _parse_dow(dow_text, eventbridge=True)
    _check_day_fits_month(dom, months, dow_restricted=False)
    years = _parse_years(year_text)
    expression = " ".join(
        (
            "0",
            _canonical(minutes, _MINUTE),
            _canonical(hours, _HOUR),
            dom.token,
            _canonical(months, _MONTH),
            dow,
        )
    )
    return _CronSpec(expression, (0,), minutes, hours, years, dom.last_weekday)


_EVENTBRIDGE_RE: Final = re.compile(r"cron\((?P<body>.*)\)", re.IGNORECASE | re.DOTALL)


def _compile_cron(text: str) -> _CronSpec:
    wrapped = _EVENTBRIDGE_RE.fullmatch(text)
    if wrapped is not None:
        fields = wrapped.group("body").split()
        if len(fields) != 6:
            raise _cron_error(
                "cron(...) takes 6 fields (minutes hours day-of-month month day-of-week year), "
                f"got {len(fields)}"
            )
        return _compile_eventbridge(fields)
    fields = text.split()
    if len(fields) == 5:
        return _compile_unix(fields)
    if len(fields) == 6:
        try:
            return _compile_unix(fields)
        except ScheduleError as exc:
            try:
                _compile_eventbridge(fields)
            except ScheduleError:
                raise exc from None
            raise _cron_error(
                f"{exc.reason} (6 plain fields mean a leading seconds field; an EventBridge expression "
                "must be written as cron(...))"
            ) from None
    raise _cron_error(
        f"expected 5 fields (minute hour day-of-month month day-of-week), 6 with a leading seconds field, "
        f"or cron(...) with 6 EventBridge fields; got {len(fields)}"
    )


def _last_weekday(year: int, month: int) -> int:
    last = calendar.monthrange(year, month)[1]
    weekday = calendar.weekday(year, month, last)
    return last - max(0, weekday - 4)


_UTC_KEYS: Final = frozenset(
    {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}
)


class _CronClock:
    """Iterates a cron's naive wall-clock fire times, then maps them to UTC per the DST contract.

    The croniter object is reused (building one costs ~10x a step) and is stateful, hence the lock.
    """

    def __init__(self, spec: _CronSpec, zone: tzinfo) -> None:
        self._spec = spec
        self._zone = zone
        self._is_utc = isinstance(zone, ZoneInfo) and zone.key in _UTC_KEYS
        self._lock = threading.Lock()
        try:
            self._iter = croniter(
                spec.croniter_expression, datetime(2000, 1, 1), ret_type=datetime, second_at_beginning=True
            )
        except CroniterError as exc:
            raise _cron_error(f"not supported: {exc}") from exc

    def _croniter_next(self, wall: datetime) -> datetime | None:
        try:
            with self._lock:
                return cast(datetime, self._iter.get_next(datetime, start_time=wall))
        except (CroniterBadDateError, OverflowError, ValueError):
            return None

    def next_wall(self, wall: datetime) -> datetime | None:
        """The first matching wall time strictly after ``wall`` (naive, whole seconds)."""
        years = self._spec.years
        cursor = wall
        for _ in range(_MAX_STEPS):
            if years is not None and cursor.year > years[-1]:
                return None
            found = self._croniter_next(cursor)
            if found is None:
                return None
            if years is not None and found.year not in years:
                later = [year for year in years if year > found.year]
                if not later:
                    return None
                cursor = datetime(later[0], 1, 1) - _ONE_SECOND
                continue
            if self._spec.last_weekday:
                target = _last_weekday(found.year, found.month)
                if found.day != target:
                    if found.day < target:
                        cursor = datetime(found.year, found.month, target) - _ONE_SECOND
                    else:
                        cursor = datetime(found.year, found.month, 1) + timedelta(days=32)
                        cursor = cursor.replace(day=1) - _ONE_SECOND
                    continue
            return found
        return None

    def next_after(self, after: datetime) -> datetime | None:
        if self._is_utc:
            wall = self.next_wall(_floor_second(after.astimezone(UTC)).replace(tzinfo=None))
            return None if wall is None else wall.replace(tzinfo=UTC)
        cursor = _floor_second(after.astimezone(self._zone)).replace(tzinfo=None)
        for _ in range(_MAX_STEPS):
            wall = self.next_wall(cursor)
            if wall is None:
                return None
            instant = _wall_to_utc(wall, self._zone)
            if instant > after:
                return instant
            # Only the first pass of a repeated wall time fires; ``after`` is in the second pass.
            end = _end_of_repeat(wall, self._zone)
            cursor = wall if end is None else max(wall, end - _ONE_SECOND)
        raise RuntimeError(f"cron search did not converge after {after.isoformat()}")


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
    def is_recurring(self) -> bool:
        return self.kind != "at"

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

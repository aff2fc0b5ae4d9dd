"""Cron expressions: parsing the three dialects field by field, and ``_CronClock``, which steps through
their fire times in a time zone with the DST contract of ``punctual_functions/core/schedule/__init__.py``."""

from __future__ import annotations

import calendar
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import pairwise
from typing import Final, cast
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, CroniterError, croniter

from punctual_functions.core.schedule.common import (
    _MAX_STEPS,
    _MAX_YEAR,
    _MIN_YEAR,
    _ONE_SECOND,
    ScheduleError,
    _end_of_repeat,
    _floor_second,
    _wall_to_utc,
)

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

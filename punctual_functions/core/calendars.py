"""Business calendars: which days a schedule does not fire on, and where an excluded occurrence goes.

A calendar excludes a day for any of its rules: not one of its working weekdays, a public holiday of a
country or subdivision (the ``holidays`` package, kept current by its maintainers), an exchange's
closed day (expanded from ``exchange-calendars`` when the calendar is written: docs/architecture.md,
"Business calendars"), an explicit date, or a yearly date. A day is judged in the calendar's time zone; an
occurrence moved to a business day keeps its wall time in the schedule's zone. Pure: no AWS, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from zoneinfo import ZoneInfo

from punctual_functions.core.schedule.common import _wall_to_utc

# How far a move looks for a business day: a calendar that excludes a whole year is refused.
MAX_MOVE_DAYS = 366
WORKWEEK = frozenset({1, 2, 3, 4, 5})  # ISO weekdays: Monday is 1


class OnExcluded(StrEnum):
    """What becomes of an occurrence that falls on a day its calendar excludes."""

    SKIP = "skip"
    NEXT_BUSINESS_DAY = "next_business_day"
    PREVIOUS_BUSINESS_DAY = "previous_business_day"


class CalendarError(ValueError):
    """A calendar rule that cannot be used; ``field`` names it as the API's body does."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class HolidaySource:
    """The public holidays of ``country`` (ISO 3166-1 alpha-2), or of one of its subdivisions."""

    country: str
    subdivision: str | None = None

    @property
    def label(self) -> str:
        return self.country if self.subdivision is None else f"{self.country}-{self.subdivision}"


@dataclass(frozen=True)
class Calendar:
    name: str
    timezone: str = "UTC"
    weekdays: frozenset[int] = WORKWEEK
    holidays: tuple[HolidaySource, ...] = ()
    dates: frozenset[date] = frozenset()
    yearly: frozenset[tuple[int, int]] = frozenset()  # (month, day)
    exchanges: tuple[str, ...] = ()  # MIC codes, e.g. XNYS
    # The exchanges' closed days, as expanded when the calendar was written, up to ``expanded_until``
    # (the end of what ``exchange-calendars`` knows then).
    exchange_closed: frozenset[date] = frozenset()
    expanded_until: date | None = None
    version: int = 1

    def excludes(self, day: date) -> str | None:
        """Why ``day`` is not a business day of this calendar (None: it is one)."""
        if day.isoweekday() not in self.weekdays:
            return f"not a working day ({day.strftime('%A')})"
        for source in self.holidays:
            name = _holidays_of(source.country, source.subdivision, day.year).get(day)
            if name is not None:
                return f"holiday in {source.label}: {name}"
        if day in self.dates:
            return "excluded date"
        if (day.month, day.day) in self.yearly:
            return "excluded every year"
        if self.exchanges:
            if self.expanded_until is None or day > self.expanded_until:
                # Unknown is not open: a guess would run a job on a closed exchange's day.
                known = (
                    "never expanded" if self.expanded_until is None else f"known up to {self.expanded_until}"
                )
                raise CalendarError(
                    f"calendar {self.name!r}: the trading days of {', '.join(self.exchanges)} are not known"
                    f" for {day} ({known})",
                    "calendar",
                )
            if day in self.exchange_closed:
                return f"{', '.join(self.exchanges)} closed"
        return None

    def business_day(self, day: date, step: int) -> date:
        """The nearest business day after (``step`` 1) or before (``step`` -1) ``day``."""
        candidate = day
        for _ in range(MAX_MOVE_DAYS):
            candidate += timedelta(days=step)
            if self.excludes(candidate) is None:
                return candidate
        raise CalendarError(f"calendar {self.name!r} has no business day within a year", "calendar")


@dataclass(frozen=True)
class Placement:
    """Where a calendar puts an occurrence: ``at`` (None: skipped), and why it moved or was skipped."""

    at: datetime | None
    excluded: str | None = None  # the rule that excluded its day, None when the day is a business day

    @property
    def moved(self) -> bool:
        return self.excluded is not None and self.at is not None


def place(calendar: Calendar, moment: datetime, on_excluded: OnExcluded, schedule_timezone: str) -> Placement:
    """Where ``moment`` (an occurrence's time) runs under ``calendar``: as it is on a business day;
    otherwise skipped, or moved to the next or previous business day at the same wall time in the
    schedule's zone, under the schedules' DST rules (``schedule.common._wall_to_utc``: a wall time
    that does not exist that day runs at the first instant after the gap)."""
    day = moment.astimezone(ZoneInfo(calendar.timezone)).date()
    reason = calendar.excludes(day)
    if reason is None:
        return Placement(moment)
    if on_excluded is OnExcluded.SKIP:
        return Placement(None, reason)
    step = 1 if on_excluded is OnExcluded.NEXT_BUSINESS_DAY else -1
    target = calendar.business_day(day, step)
    zone = ZoneInfo(schedule_timezone)
    local = moment.astimezone(zone)
    wall = local.replace(tzinfo=None) + timedelta(days=(target - day).days)
    return Placement(_wall_to_utc(wall, zone), reason)


def check_holiday_source(country: str, subdivision: str | None, field: str) -> HolidaySource:
    """A holiday source the ``holidays`` package knows, or ``CalendarError`` naming ``field``."""
    supported = _supported()
    code = country.upper()
    if code not in supported:
        raise CalendarError(f"unknown country code {country!r} (ISO 3166-1 alpha-2, e.g. 'DE')", field)
    if subdivision is not None:
        sub = subdivision.upper()
        if sub not in supported[code]:
            known = ", ".join(supported[code][:12]) or "none"
            raise CalendarError(f"{code} has no subdivision {subdivision!r} (known: {known})", field)
        return HolidaySource(code, sub)
    return HolidaySource(code)


@lru_cache(maxsize=1)
def _supported() -> dict[str, list[str]]:
    import holidays

    return {
        country: list(subdivisions) for country, subdivisions in holidays.list_supported_countries().items()
    }


@lru_cache(maxsize=256)
def _holidays_of(country: str, subdivision: str | None, year: int) -> dict[date, str]:
    import holidays  # imported on first use: only a job whose calendar names holidays pays for it

    return dict(holidays.country_holidays(country, subdiv=subdivision, years=year).items())

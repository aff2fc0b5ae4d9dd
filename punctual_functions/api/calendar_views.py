"""The answers of ``/v1/calendars`` (``calendars.py``), as TypedDicts: each is checked against its
answer model in ``responses.py`` (tests/unit/test_api_views.py)."""

from __future__ import annotations

from typing import TypedDict


class HolidaySourceView(TypedDict):
    country: str
    subdivision: str | None


class CalendarView(TypedDict):
    """``CalendarOut``."""

    name: str
    timezone: str
    weekdays: list[int]
    holidays: list[HolidaySourceView]
    exchanges: list[str]
    dates: list[str]
    yearly: list[str]
    expanded_until: str | None
    version: int


class CalendarPageView(TypedDict):
    items: list[CalendarView]


class ExcludedDayView(TypedDict):
    date: str
    reason: str


CalendarDaysView = TypedDict(
    "CalendarDaysView", {"name": str, "from": str, "to": str, "excluded": list[ExcludedDayView]}
)


class CalendarInUseView(TypedDict):
    """A job that names the calendar, in a refused delete's body."""

    job_id: str
    name: str | None
    status: str

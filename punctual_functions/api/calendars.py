"""``/v1/calendars``: the caller's business calendars (``punctual_functions/core/calendars.py``), by name.

A calendar is written whole: ``POST`` creates one (409 if the name is taken), ``PUT`` replaces one's
rules or creates it, guarded by the version it read as ``PATCH /v1/jobs/{id}`` is (409 if it changed
meanwhile); a change moves its ``version`` on. Each rule is checked here and refused naming its
element (``holidays[1]``, ``dates[0]``, ``exchanges[0]``); the exchanges' closed days are expanded
on every write (``exchanges.py``, the API's alone). A delete is refused while a live job names the
calendar. ``days`` lists what the calendar excludes in a range, with the reason of each day.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from punctual_functions.api.calendar_views import (
    CalendarDaysView,
    CalendarInUseView,
    CalendarPageView,
    CalendarView,
    ExcludedDayView,
)
from punctual_functions.api.errors import Conflict, InvalidInput, NotFound
from punctual_functions.api.names import is_name
from punctual_functions.core.calendars import Calendar, CalendarError, HolidaySource, check_holiday_source
from punctual_functions.core.ports import CalendarExists, VersionChanged
from punctual_functions.core.schedule.common import ScheduleError, _load_zone

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import CalendarRulesIn, CreateCalendarIn, HolidaySourceIn

MAX_RANGE_DAYS = 400  # GET .../days: at most this many days, both ends included
DEFAULT_RANGE_DAYS = 31
IN_USE_LISTED = 20  # a refused delete names this many of the jobs using the calendar (and counts all)
_YEARLY = re.compile(r"(\d\d)-(\d\d)")


# ------------------------------------------------------------------------------------- routes


def create_calendar(deps: Deps, owner: str, request: CreateCalendarIn) -> CalendarView:
    calendar = calendar_of(deps, request.name, request)
    try:
        deps.store.put_calendar(owner, calendar, expected_version=None)
    except CalendarExists as error:
        raise Conflict(f"a calendar named {request.name!r} exists already", "name") from error
    return calendar_view(calendar)


def list_calendars(deps: Deps, owner: str) -> CalendarPageView:
    return {"items": [calendar_view(calendar) for calendar in deps.store.list_calendars(owner)]}


def get_calendar(deps: Deps, owner: str, name: str) -> CalendarView:
    return calendar_view(owned_calendar(deps, owner, name))


def replace_calendar(deps: Deps, owner: str, name: str, request: CalendarRulesIn) -> CalendarView:
    """The calendar with these rules: created if absent, its version moved on if they change it."""
    if not is_name(name):
        raise InvalidInput(
            "a calendar name is 1 to 128 letters, digits and . _ : - (starting with a letter or digit)",
            "name",
        )
    before = deps.store.get_calendar(owner, name)
    calendar = calendar_of(deps, name, request)
    try:
        if before is None:
            deps.store.put_calendar(owner, calendar, expected_version=None)
            return calendar_view(calendar)
        if replace(calendar, version=before.version) == before:
            return calendar_view(before)  # nothing changes: no write, the same version
        changed = replace(calendar, version=before.version + 1)
        deps.store.put_calendar(owner, changed, expected_version=before.version)
    except (CalendarExists, VersionChanged) as error:
        raise Conflict("the calendar was changed concurrently; read it again and retry", "version") from error
    return calendar_view(changed)


def delete_calendar(deps: Deps, owner: str, name: str) -> CalendarView:
    """Delete the calendar, unless a live job (ACTIVE or PAUSED) names it: 409 naming those jobs."""
    calendar = owned_calendar(deps, owner, name)
    users = jobs_using(deps, owner, name)
    if users:
        raise Conflict(
            f"{len(users)} live job(s) use calendar {name!r}; change or cancel them first",
            "name",
            jobs=users[:IN_USE_LISTED],
            job_count=len(users),
        )
    if not deps.store.delete_calendar(owner, name, expected_version=calendar.version):
        raise Conflict("the calendar was changed concurrently; read it again and retry", "version")
    return calendar_view(calendar)


def calendar_days(
    deps: Deps, owner: str, name: str, from_day: str | None, to_day: str | None
) -> CalendarDaysView:
    """The days from ``from_day`` to ``to_day`` (both included; default: today and a month on, in the
    calendar's zone) that the calendar excludes, each with the first rule that excludes it."""
    calendar = owned_calendar(deps, owner, name)
    today = deps.clock().astimezone(ZoneInfo(calendar.timezone)).date()
    first = _day(from_day, "from") if from_day is not None else today
    last = _day(to_day, "to") if to_day is not None else first + timedelta(days=DEFAULT_RANGE_DAYS - 1)
    if last < first:
        raise InvalidInput("to must not be before from", "to")
    if (last - first).days >= MAX_RANGE_DAYS:
        raise InvalidInput(f"at most {MAX_RANGE_DAYS} days at once", "to")
    excluded: list[ExcludedDayView] = []
    try:
        for offset in range((last - first).days + 1):
            day = first + timedelta(days=offset)
            reason = calendar.excludes(day)
            if reason is not None:
                excluded.append({"date": day.isoformat(), "reason": reason})
    except CalendarError as error:  # an exchange's day beyond what was expanded
        raise InvalidInput(f"{error} (a PUT of the calendar expands it again)", "to") from error
    return {"name": calendar.name, "from": first.isoformat(), "to": last.isoformat(), "excluded": excluded}


# ------------------------------------------------------------------------------------- helpers


def owned_calendar(deps: Deps, owner: str, name: str) -> Calendar:
    calendar = deps.store.get_calendar(owner, name) if is_name(name) else None
    if calendar is None:
        raise NotFound(f"calendar {name[:128]} not found", "name")
    return calendar


def jobs_using(deps: Deps, owner: str, name: str) -> list[CalendarInUseView]:
    """The owner's live jobs whose schedule follows calendar ``name``, oldest first."""
    from punctual_functions.api.jobs import settled  # a one-off job's end is derived from its run

    named = [job for job in deps.store.owner_jobs(owner) if job.calendar == name and job.is_live]
    live = [job for job in (settled(deps, job) for job in named) if job.is_live]
    live.sort(key=lambda job: (job.created_at, job.job_id))
    return [{"job_id": job.job_id, "name": job.name, "status": job.status.value} for job in live]


def calendar_of(deps: Deps, name: str, request: CalendarRulesIn) -> Calendar:
    """The calendar the request describes, each rule checked (``InvalidInput`` naming the element),
    its exchanges' closed days expanded as of today."""
    try:
        try:
            _load_zone(request.timezone, strict=True)
        except ScheduleError as error:
            raise CalendarError(error.reason, "timezone") from error
        weekdays = _weekdays(request.weekdays)
        holidays = tuple(
            dict.fromkeys(_holiday(entry, f"holidays[{i}]") for i, entry in enumerate(request.holidays))
        )
        dates = frozenset(_date(text, f"dates[{i}]") for i, text in enumerate(request.dates))
        yearly = frozenset(_month_day(text, f"yearly[{i}]") for i, text in enumerate(request.yearly))
        calendar = Calendar(
            name=name,
            timezone=request.timezone,
            weekdays=weekdays,
            holidays=holidays,
            dates=dates,
            yearly=yearly,
        )
        if request.exchanges:
            from punctual_functions.api.exchanges import check_exchange, closed_days

            codes = tuple(
                dict.fromkeys(
                    check_exchange(code, f"exchanges[{i}]") for i, code in enumerate(request.exchanges)
                )
            )
            closed, until = closed_days(codes, weekdays, deps.clock().date())
            calendar = replace(calendar, exchanges=codes, exchange_closed=closed, expanded_until=until)
    except CalendarError as error:
        raise InvalidInput(str(error), error.field) from error
    return calendar


def _weekdays(days: list[int]) -> frozenset[int]:
    for index, day in enumerate(days):
        if not 1 <= day <= 7:
            raise CalendarError(f"a weekday is 1 (Monday) to 7 (Sunday), not {day}", f"weekdays[{index}]")
    return frozenset(days)


def _holiday(entry: HolidaySourceIn | str, field: str) -> HolidaySource:
    if isinstance(entry, str):
        country, _, subdivision = entry.strip().partition("-")
        if not country:
            raise CalendarError(f"{entry!r} is not a holiday source: 'DE' or 'DE-BY'", field)
        return check_holiday_source(country, subdivision or None, field)
    return check_holiday_source(entry.country, entry.subdivision, field)


def _date(text: str, field: str) -> date:
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError as error:
        raise CalendarError(f"{text!r} is not a date YYYY-MM-DD", field) from error


def _month_day(text: str, field: str) -> tuple[int, int]:
    found = _YEARLY.fullmatch(text)
    if found is not None:
        month, day = int(found[1]), int(found[2])
        try:
            date(2024, month, day)  # a leap year: 02-29 is a date of some years
        except ValueError:
            pass
        else:
            return month, day
    raise CalendarError(f"{text!r} is not a day of the year MM-DD", field)


def _day(text: str, field: str) -> date:
    """A bound of ``days``' range: a date of the years 1900 to 2999 (no calendar is asked about
    others, and a range a month past one could not be counted to its end)."""
    try:
        day = _date(text, field)
    except CalendarError as error:
        raise InvalidInput(str(error), field) from error
    if not 1900 <= day.year <= 2999:
        raise InvalidInput(f"{text!r}: a date of the years 1900 to 2999", field)
    return day


def calendar_view(calendar: Calendar) -> CalendarView:
    return {
        "name": calendar.name,
        "timezone": calendar.timezone,
        "weekdays": sorted(calendar.weekdays),
        "holidays": [{"country": s.country, "subdivision": s.subdivision} for s in calendar.holidays],
        "exchanges": list(calendar.exchanges),
        "dates": sorted(day.isoformat() for day in calendar.dates),
        "yearly": [f"{month:02d}-{day:02d}" for month, day in sorted(calendar.yearly)],
        "expanded_until": calendar.expanded_until.isoformat() if calendar.expanded_until else None,
        "version": calendar.version,
    }

"""A job's schedule and times as the API takes them: parsed and checked, refused naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from punctual_functions.api.errors import InvalidInput
from punctual_functions.core.calendars import Calendar, CalendarError
from punctual_functions.core.schedule import Schedule, ScheduleError, parse_instant, parse_schedule
from punctual_functions.core.timing import CalendarTiming, FireTimes

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import ScheduleIn
    from punctual_functions.core.model import Job
    from punctual_functions.core.settings import Settings


def instant_of(text: str, timezone: str, field: str) -> datetime:
    """A time the API takes beside a schedule (an ``until``, a backfill's or an outage's bounds); a
    naive one is in the schedule's zone. Refused naming ``field``."""
    try:
        return parse_instant(text, timezone, field)
    except ScheduleError as error:
        raise InvalidInput(error.reason, error.field) from error


def schedule_of(spec: ScheduleIn, now: datetime, settings: Settings) -> Schedule:
    """A schedule as the API takes it (a job's, a preview's), validated; refused naming the field."""
    try:
        return parse_schedule(
            at=spec.at,
            cron=spec.cron,
            rate=spec.rate,
            timezone=spec.timezone,
            start_at=spec.start_at,
            end_at=spec.end_at,
            now=now,
            min_interval_seconds=settings.min_interval_seconds,
        )
    except ScheduleError as error:
        raise InvalidInput(error.reason, error.field) from error


def check_jitter(schedule: Schedule, jitter_seconds: int) -> None:
    gap = schedule.shortest_gap_seconds()
    if gap is not None and jitter_seconds >= gap:
        raise InvalidInput(
            f"must be less than the {gap} s between the schedule's closest fire times, so that "
            "occurrences keep their order",
            "jitter_seconds",
        )


def check_max_runs(schedule: Schedule, max_runs: int | None) -> None:
    if max_runs is not None and not schedule.is_recurring:
        raise InvalidInput("only a recurring schedule takes a max_runs: a one-off runs once", "max_runs")


def calendar_of(deps: Deps, owner: str, spec: ScheduleIn, schedule: Schedule) -> Calendar | None:
    """The owner's calendar a schedule names, if it names one; refused naming ``schedule.calendar``
    when there is none of that name, or the schedule is a one-off (it runs at the time it names)."""
    if spec.calendar is None:
        return None
    if not schedule.is_recurring:
        raise InvalidInput(
            "a one-off 'at' schedule runs at the time it names and takes no calendar; use cron or rate",
            "schedule.calendar",
        )
    calendar = deps.store.get_calendar(owner, spec.calendar)
    if calendar is None:
        raise InvalidInput(
            f"no calendar named {spec.calendar!r}: create it first (POST /v1/calendars)", "schedule.calendar"
        )
    return calendar


def job_timing(deps: Deps, job: Job, calendars: Mapping[str, Calendar] | None = None) -> FireTimes:
    """The job's fire times, under its calendar if it follows one (one read, unless ``calendars``
    holds the owner's calendars read already). A calendar deleted
    meanwhile (a delete is refused while jobs use it, but a create may race it): the schedule alone,
    as the dispatcher then drops each occurrence instead of guessing the day."""
    if job.calendar is None:
        return job.schedule
    if calendars is not None:
        calendar = calendars.get(job.calendar)
    else:
        calendar = deps.store.get_calendar(job.owner, job.calendar)
    return job.schedule if calendar is None else CalendarTiming(job.schedule, calendar, job.on_excluded)


def first_fire_time(timing: FireTimes, now: datetime) -> datetime:
    """The time of a new chain's first trigger: the first fire time after ``now``; under a calendar
    that drops days, the first dropped day's marker may come before it (its row is written as it
    comes). Refused when nothing is left to run, or the calendar cannot tell."""
    try:
        first = timing.next_after(now) if timing.is_recurring else timing.first_fire_time()
        if first is not None and isinstance(timing, CalendarTiming):
            first = min(first, timing.next_event(now) or first)
    except CalendarError as error:
        raise InvalidInput(str(error), "schedule.calendar") from error
    if first is None:
        raise InvalidInput("the schedule has no fire time in the future", "schedule")
    return first

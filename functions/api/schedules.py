"""A job's schedule and times as the API takes them: parsed and checked, refused naming the field."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from functions.api.errors import InvalidInput
from functions.core.schedule import Schedule, ScheduleError, parse_instant, parse_schedule

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from functions.api.requests import ScheduleIn
    from functions.core.settings import Settings


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


def first_fire_time(schedule: Schedule, now: datetime) -> datetime:
    first = schedule.next_after(now) if schedule.is_recurring else schedule.first_fire_time()
    if first is None:
        raise InvalidInput("the schedule has no fire time in the future", "schedule")
    return first

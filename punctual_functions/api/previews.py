"""``POST /v1/schedules/preview``: what a schedule would do, without creating a job.

The schedule is validated exactly as ``POST /v1/jobs`` validates it (the same refusals, naming the
same fields); the answer comes from ``punctual_functions/core/preview.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from punctual_functions.api.errors import InvalidInput
from punctual_functions.api.schedules import calendar_of, instant_of, schedule_of
from punctual_functions.api.views import (
    FireTimeView,
    OutageView,
    PreviewExcludedDayView,
    PreviewView,
    schedule_times_view,
)
from punctual_functions.core.calendars import CalendarError
from punctual_functions.core.model import iso
from punctual_functions.core.preview import (
    MAX_PREVIEW,
    Fate,
    OutageTooLong,
    excluded_days,
    fire_times,
    replay_outage,
)
from punctual_functions.core.schedule import Schedule
from punctual_functions.core.timing import CalendarTiming, timing_of

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import PreviewIn

# The most fire times a preview with ``until`` lists (a year of a weekday cron, with room).
MAX_UNTIL = 1000

# How many of an outage's missed occurrences the answer lists (all are counted).
LISTED_MISSED = 100


def preview_schedule(deps: Deps, owner: str, request: PreviewIn) -> PreviewView:
    now = deps.clock()
    spec = request.schedule
    schedule = schedule_of(spec, now, deps.settings)
    calendar = calendar_of(deps, owner, spec, schedule)
    timing = timing_of(schedule, calendar, spec.on_excluded)
    after = instant_of(request.after, schedule.timezone, "after") if request.after else now
    until = instant_of(request.until, schedule.timezone, "until") if request.until else None
    if until is not None and until <= after:
        raise InvalidInput("until must be after `after` (default: now)", "until")
    window = None
    if request.outage is not None:
        start = instant_of(request.outage.from_, schedule.timezone, "outage.from")
        end = instant_of(request.outage.to, schedule.timezone, "outage.to")
        if end <= start:
            raise InvalidInput("the outage must end after it begins", "outage.to")
        window = (start, end)

    notes: list[str] = []
    count = MAX_UNTIL if until is not None else min(request.count, MAX_PREVIEW)
    try:
        times = fire_times(timing, after, count + 1, until)
        listed = times[:count]
        excluded: list[PreviewExcludedDayView] = []
        if isinstance(timing, CalendarTiming):
            end_of_list = until or (listed[-1].at if listed else after)
            excluded = [
                {
                    "day": day.day.isoformat(),
                    "reason": day.reason,
                    "fate": "skipped" if day.moved_to is None else "moved",
                    "moved_to": iso(day.moved_to),
                }
                for day in excluded_days(timing, after, end_of_list, MAX_UNTIL * 2)
            ]
    except CalendarError as error:
        raise InvalidInput(str(error), "schedule.calendar") from error
    if until is not None and len(times) > count:
        raise InvalidInput(f"more than {MAX_UNTIL:,} fire times until then: shorten the span", "until")
    times = listed
    if not schedule.is_recurring and not times:
        notes.append("the 'at' time is not after `after`: a job created with it now runs at once")
    if not schedule.is_recurring and window is not None:
        notes.append(
            "a one-off job always runs after an outage, however late; misfire applies to cron and rate"
        )
    misfire = spec.misfire
    outage: OutageView | None = None
    if window is not None:
        threshold = timedelta(seconds=deps.settings.misfire_threshold_seconds)
        try:
            replay = replay_outage(timing, misfire, spec.catchup_seconds, *window, threshold)
        except OutageTooLong as error:
            raise InvalidInput(f"{error}; shorten the outage", "outage.to") from error
        start, end = window
        outage = {
            "from": iso(start),
            "to": iso(end),
            "misfire": misfire.value,
            "catchup_seconds": spec.catchup_seconds,
            "counts": {fate.value: replay.count(fate) for fate in Fate},
            "occurrences": [
                {
                    "scheduled_for": iso(missed.scheduled_for),
                    "local": _local(schedule, missed.scheduled_for),
                    "fate": missed.fate.value,
                    "lateness_ms": _ms(end - missed.scheduled_for) if missed.fate is Fate.RUNS else None,
                }
                for missed in replay.missed[:LISTED_MISSED]
            ],
            "listed_all": len(replay.missed) <= LISTED_MISSED,
            "resumes_with": iso(replay.resumes_with),
        }
    return {
        "schedule": schedule_times_view(schedule),
        "timezone": schedule.timezone,
        "fire_times": [
            FireTimeView(
                at=iso(time.at),
                local=_local(schedule, time.at),
                dst=None
                if time.dst is None
                else {"kind": time.dst.kind, "local": time.dst.local.isoformat(timespec="seconds")},
                moved_from=[iso(moment) for moment in time.moved_from],
            )
            for time in times
        ],
        "calendar": None
        if calendar is None
        else {"name": calendar.name, "on_excluded": spec.on_excluded.value, "excluded": excluded},
        "outage": outage,
        "notes": notes,
    }


def _local(schedule: Schedule, moment: datetime) -> str:
    local = moment.astimezone(schedule.zone)
    return local.isoformat(timespec="milliseconds" if local.microsecond else "seconds")


def _ms(delta: timedelta) -> int:
    return round(delta.total_seconds() * 1000)

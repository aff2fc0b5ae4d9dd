"""The misfire policy and the job's calendar applied to an occurrence being dispatched: whether it
runs and what comes next."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from punctual_functions.core.calendars import Calendar, CalendarError
from punctual_functions.core.model.ids import run_id_for
from punctual_functions.core.model.job import Job
from punctual_functions.core.model.policies import MisfirePolicy
from punctual_functions.core.model.run import Run, not_run_row
from punctual_functions.core.model.status import JobStatus, Reason, RunKind, RunStatus
from punctual_functions.core.model.trigger import Trigger, jitter_of
from punctual_functions.core.timing import CalendarTiming, Occurrence

_ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True)
class DispatchPlan:
    """What dispatching a trigger does: which occurrence runs (if any) and which one comes next."""

    run_scheduled_for: datetime | None  # None: nothing runs for this trigger
    skipped: datetime | None  # an occurrence recorded as SKIPPED
    next_occurrence: datetime | None
    # A day the job's calendar drops (``on_excluded: skip``), or an occurrence it could not decide (the
    # calendar is gone, or does not know the day): a SKIPPED row, reason ``calendar``.
    dropped: Occurrence | None = None
    # The occurrences of excluded days moved onto the one that runs.
    moved_from: tuple[datetime, ...] = ()
    timing: CalendarTiming | None = None  # the job's fire times under its calendar, if it has one


def plan_dispatch(
    job: Job,
    scheduled_for: datetime,
    now: datetime,
    misfire_threshold: timedelta,
    calendar: Calendar | None = None,
) -> DispatchPlan:
    """Apply the job's calendar and misfire policy to an occurrence being dispatched at ``now``; a
    jittered occurrence is missed only once its own due time is more than the threshold ago.

    Under a calendar (``calendar``: the one ``job.calendar`` names, None if it does not exist) a
    trigger's time is a run (moved ones included), a dropped day's marker, or, when the calendar
    changed since the trigger was written, nothing: the chain goes on from the next of them. Neither
    plan runs anything on a day the calendar excludes: a calendar that cannot decide drops the
    occurrence, and the chain goes on by the schedule alone.
    """
    threshold = misfire_threshold + timedelta(milliseconds=jitter_of(job, scheduled_for))
    if job.calendar is None:
        return plan_occurrence(job.schedule, job.misfire, job.catchup_seconds, scheduled_for, now, threshold)
    try:
        if calendar is None:
            raise CalendarError(f"calendar {job.calendar!r} does not exist", "calendar")
        timing = CalendarTiming(job.schedule, calendar, job.on_excluded)
        event = timing.at(scheduled_for) or timing.newly_excluded(scheduled_for)
        if event is None or not event.runs:
            return DispatchPlan(None, None, timing.next_event(scheduled_for), dropped=event, timing=timing)
        chain = _Chain(timing)
        plan = plan_occurrence(chain, job.misfire, job.catchup_seconds, scheduled_for, now, threshold)
    except CalendarError as error:
        dropped = Occurrence(scheduled_for, False, reason=str(error))
        return DispatchPlan(None, None, job.schedule.next_after(scheduled_for), dropped=dropped)
    moved = event.moved_from if plan.run_scheduled_for == scheduled_for else ()
    return replace(plan, moved_from=moved, timing=timing)


def calendar_row(job: Job, dropped: Occurrence, covers: list[datetime], now: datetime) -> Run:
    """The history's row of what the job's calendar dropped: a day it excludes (at the day's first
    occurrence, ``covers`` the day's), or an occurrence it could not decide (its reason)."""
    if dropped.day is not None:
        error = f"calendar {job.calendar!r} excludes {dropped.day.isoformat()}: {dropped.reason}"
    else:
        error = dropped.reason or "excluded by its calendar"
    row = not_run_row(job, dropped.at, covers or [dropped.at], Reason.CALENDAR, now, error=error)
    return replace(row, calendar=job.calendar)


class Walk(Protocol):
    """What the misfire policy asks of a job's fire times (a ``Schedule``, a ``CalendarTiming``)."""

    @property
    def is_recurring(self) -> bool: ...

    def next_after(self, after: datetime) -> datetime | None: ...

    def occurrences_between(self, start: datetime, end: datetime, limit: int) -> list[datetime]: ...


@dataclass(frozen=True)
class _Chain:
    """A calendar's timing as the misfire policy walks it: its next link may be a dropped day's
    marker (the chain writes a trigger for it), its occurrences are the runs."""

    timing: CalendarTiming

    @property
    def is_recurring(self) -> bool:
        return self.timing.is_recurring

    def next_after(self, after: datetime) -> datetime | None:
        return self.timing.next_event(after)

    def occurrences_between(self, start: datetime, end: datetime, limit: int) -> list[datetime]:
        return self.timing.occurrences_between(start, end, limit)


def plan_occurrence(
    schedule: Walk,
    misfire: MisfirePolicy,
    catchup_seconds: int | None,
    scheduled_for: datetime,
    now: datetime,
    misfire_threshold: timedelta,
) -> DispatchPlan:
    """Apply a misfire policy to an occurrence being dispatched at ``now``: the dispatcher's decision,
    and the schedule preview's replay of an outage (``punctual_functions/core/preview.py``).

    On time (not later than the threshold) the occurrence runs and the chain continues after it. A
    missed recurring occurrence is handled by the policy; one-off jobs always run.
    """
    if not schedule.is_recurring:
        return DispatchPlan(scheduled_for, None, None)
    if now - scheduled_for <= misfire_threshold:
        return DispatchPlan(scheduled_for, None, schedule.next_after(scheduled_for))
    horizon = now - timedelta(seconds=catchup_seconds) if catchup_seconds is not None else None
    in_window = horizon is None or scheduled_for >= horizon
    if misfire is MisfirePolicy.RUN_ALL:
        if in_window:
            return DispatchPlan(scheduled_for, None, schedule.next_after(scheduled_for))
        # Jump to the first occurrence still inside the catch-up window.
        assert horizon is not None
        return DispatchPlan(None, scheduled_for, schedule.next_after(horizon - timedelta(microseconds=1)))
    following = schedule.next_after(now)
    if misfire is MisfirePolicy.SKIP:
        return DispatchPlan(None, scheduled_for, following)
    # run_once: only the latest missed occurrence runs.
    latest = scheduled_for
    for occurrence in schedule.occurrences_between(scheduled_for, now, limit=100_000):
        latest = occurrence
    if horizon is not None and latest < horizon:
        return DispatchPlan(None, scheduled_for, following)
    return DispatchPlan(latest, None, following)


def new_run(job: Job, scheduled_for: datetime, kind: RunKind, status: RunStatus, now: datetime) -> Run:
    jitter = jitter_of(job, scheduled_for, kind)
    return Run(
        job_id=job.job_id,
        run_id=run_id_for(job.job_id, scheduled_for, kind),
        owner=job.owner,
        scheduled_for=scheduled_for,
        status=status,
        kind=kind,
        queued_at=now,
        next_attempt_at=scheduled_for + timedelta(milliseconds=jitter),
        job_version=job.version,
        jitter_ms=jitter,
    )


def reached_max_runs(job: Job, trigger: Trigger) -> bool:
    """A scheduled occurrence of a job whose chain has set off ``max_runs`` runs already."""
    return (
        trigger.kind is RunKind.SCHEDULED
        and job.max_runs is not None
        and trigger.runs_before >= job.max_runs
        and job.version == trigger.job_version
        and job.status is JobStatus.ACTIVE
    )


def completed_by(job: Job, trigger: Trigger) -> bool:
    """``trigger`` is an occurrence of the chain that completed ``job``: its last (or the one whose
    catch-up ran the last), written before the completion, whose dispatch failed after it (a
    dispatcher dying before the send, a write whose answer was an error). It fires: a completed
    job's chain has no other trigger of its version, except one beyond ``max_runs``."""
    return (
        job.status is JobStatus.COMPLETED
        and job.version == trigger.job_version
        and not (job.max_runs is not None and trigger.runs_before >= job.max_runs)
    )


def resumes(job: Job, trigger: Trigger) -> bool:
    """``trigger`` is an occurrence of a job paused until a time at or before it (the pause wrote it,
    or a dispatch of one such wrote it as the next): it fires, the pause being over by then."""
    return (
        trigger.kind is RunKind.SCHEDULED
        and job.status is JobStatus.PAUSED
        and job.pause_until is not None
        and job.version == trigger.job_version
        and trigger.fire_at >= job.pause_until
    )

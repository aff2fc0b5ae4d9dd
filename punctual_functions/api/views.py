"""What the API answers, as typed dicts: the views the route functions build and the handler serves
as JSON (``TypedDict``: mypy checks them, and they cost nothing at a cold start, unlike building a
pydantic model per answer). The ``*Out`` models of ``responses.py`` describe the same answers for the
OpenAPI document; ``tests/unit/test_api_views.py`` fails if a view and its model disagree on a field.
Every time is ``model.iso``'s string (UTC, milliseconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from punctual_functions.api.jobs import recent_runs
from punctual_functions.api.schedules import job_timing
from punctual_functions.core.model import (
    Job,
    JobStatus,
    Run,
    RunStatus,
    iso,
    job_history,
    runs_made,
)
from punctual_functions.core.schedule import Schedule
from punctual_functions.core.trail import definition_of

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps
    from punctual_functions.core.calendars import Calendar


class ScheduleTimesView(TypedDict):
    """``ScheduleTimesOut``: exactly one of at, cron and rate."""

    at: NotRequired[str]
    cron: NotRequired[str]
    rate: NotRequired[str]
    timezone: str
    start_at: NotRequired[str]
    end_at: NotRequired[str]


class ScheduleView(ScheduleTimesView):
    """``ScheduleOut``."""

    misfire: str
    overlap: str
    catchup_seconds: int | None
    calendar: str | None
    on_excluded: str | None


class RetryView(TypedDict):
    max_attempts: int
    backoff_seconds: float
    max_backoff_seconds: float


class AlertsView(TypedDict):
    target: dict[str, Any]
    failed: bool
    missed: bool
    late_seconds: int | None
    running_seconds: int | None
    limited_seconds: int | None


class PauseView(TypedDict):
    at: str | None
    by: str | None
    note: str | None
    until: str | None


class RunSummaryView(TypedDict):
    run_id: str
    status: str
    scheduled_for: str | None
    finished_at: str | None
    lateness_ms: int | None
    attempt: int
    error: str | None


class DefinitionView(TypedDict):
    """What a job's view shows that the job itself says: a change changes it (the audit trail)."""

    job_id: str
    name: str | None
    status: str
    schedule: ScheduleView
    target: dict[str, Any]
    payload: Any
    retry: RetryView
    timeout_seconds: int
    jitter_seconds: int
    pause_on_failures: int | None
    max_runs: int | None
    max_concurrent: int | None
    alerts: AlertsView | None
    dead_letter: dict[str, Any] | None
    on_complete: str
    delete_after_days: int | None
    pause: PauseView | None
    tags: dict[str, str]
    has_signing_secret: bool


class JobView(DefinitionView):
    remaining_runs: int | None
    deletes_at: str | None
    next_run_at: str | None
    upcoming: list[str]
    last_run: RunSummaryView | None
    run_counts: dict[str, int]
    version: int
    revision: int
    created_at: str
    updated_at: str


class AttemptView(TypedDict):
    attempt: int
    started_at: str | None
    finished_at: str | None
    outcome: str | None
    duration_ms: int | None
    status_code: int | None
    error: str | None
    response: str


class RunView(TypedDict):
    run_id: str
    job_id: str
    status: str
    kind: str
    scheduled_for: str
    queued_at: str | None
    started_at: str | None
    finished_at: str | None
    lateness_ms: int | None
    jitter_ms: int
    reason: str | None
    covers: int
    covers_until: str | None
    note: str | None
    by: str | None
    overlap_with: str | None
    calendar: str | None
    moved_from: list[str]
    limited_by: str | None
    limited_since: str | None
    limited_ms: int | None
    attempt: int
    duration_ms: int | None
    executions: int
    next_attempt_at: str | None
    error: str | None
    attempts: list[AttemptView] | None


class PendingRunView(TypedDict):
    """A run now whose run is not written yet (its trigger is: the next sweep dispatches it)."""

    run_id: str
    status: str
    scheduled_for: str


class JobPageView(TypedDict):
    items: list[JobView]
    next_cursor: str | None


class RunPageView(TypedDict):
    items: list[RunView]
    next_cursor: str | None


class QueueStatsView(TypedDict):
    queued: int
    in_flight: int
    delayed: int
    dlq: int


class StatsView(TypedDict):
    jobs: dict[str, int]
    runs: dict[str, int]
    queue: QueueStatsView
    dispatcher_lag_seconds: float | None


class CreatedJobView(TypedDict):
    """One job of a batch: ``job`` when created (201), ``error`` when refused."""

    index: int
    status: int
    job: NotRequired[JobView]
    error: NotRequired[dict[str, Any]]


class CreatedJobsView(TypedDict):
    items: list[CreatedJobView]


class BulkItemView(TypedDict):
    job_id: str
    status: int
    job: JobView | None
    error: dict[str, Any] | None


class BulkView(TypedDict):
    action: str
    matched: int
    items: list[BulkItemView]
    more: bool
    next_cursor: str | None


BackfillView = TypedDict(
    "BackfillView",
    {"job_id": str, "from": str, "to": str, "overlap": str, "count": int, "occurrences": list[str]},
)


class DstView(TypedDict):
    kind: str
    local: str


class FireTimeView(TypedDict):
    at: str
    local: str
    dst: DstView | None
    moved_from: list[str]


class PreviewExcludedDayView(TypedDict):
    day: str
    reason: str
    fate: str
    moved_to: str | None


class PreviewCalendarView(TypedDict):
    name: str
    on_excluded: str
    excluded: list[PreviewExcludedDayView]


class MissedView(TypedDict):
    scheduled_for: str
    local: str
    fate: str
    lateness_ms: int | None


OutageView = TypedDict(
    "OutageView",
    {
        "from": str,
        "to": str,
        "misfire": str,
        "catchup_seconds": int | None,
        "counts": dict[str, int],
        "occurrences": list[MissedView],
        "listed_all": bool,
        "resumes_with": str | None,
    },
)


class PreviewView(TypedDict):
    schedule: ScheduleTimesView
    timezone: str
    fire_times: list[FireTimeView]
    calendar: PreviewCalendarView | None
    outage: OutageView | None
    notes: list[str]


# ------------------------------------------------------------------------------------- building


def schedule_times_view(schedule: Schedule) -> ScheduleTimesView:
    """A ``Schedule`` as answers show it: its stored form without the internal anchor."""
    data = dict(schedule.to_dict())
    data.pop("anchor", None)
    return cast(ScheduleTimesView, data)


def job_view(
    deps: Deps,
    job: Job,
    now: datetime,
    runs: list[Run] | None = None,
    calendars: Mapping[str, Calendar] | None = None,
) -> JobView:
    """``runs``: the job's newest runs, newest first (read here when not given); ``calendars``: the
    owner's calendars its job may follow, as read for a page of jobs (else read here if it follows one)."""
    job = job.as_of(now)
    history_runs = recent_runs(deps, job) if runs is None else runs
    history = job_history(job, history_runs)
    job = replace(job, status=history.status)
    # What will fire next, from the schedule: the dispatcher dispatches occurrences ahead of time, so
    # its own frontier (next_trigger_at) is often one occurrence further than the next firing.
    # max_runs: the runs left are those not yet due (a run set off ahead of its time is still to come).
    remaining = None
    if job.max_runs is not None:
        due = [run for run in history_runs if run.due_at <= now]
        remaining = max(0, job.max_runs - runs_made(due))
    upcoming: list[datetime] = []
    # A recurring job is COMPLETED once its last run is set off, up to the look-ahead before that
    # run's time: the runs still to fire are still upcoming (the schedule's end or max_runs bounds).
    ended_ahead = job.status is JobStatus.COMPLETED and job.schedule.is_recurring
    if job.status is JobStatus.ACTIVE or ended_ahead:
        if job.schedule.is_recurring:
            timing = job_timing(deps, job, calendars)
            upcoming = timing.upcoming(now, 5 if remaining is None else min(5, remaining))
        else:
            at = job.schedule.first_fire_time()
            upcoming = [at] if at is not None else []
    return {
        **definition_view(job),
        "remaining_runs": remaining,
        "deletes_at": iso(job.expires_at),
        "next_run_at": iso(upcoming[0]) if upcoming else None,
        "upcoming": [iso(moment) for moment in upcoming],
        "last_run": cast(RunSummaryView, history.last_run.summary()) if history.last_run else None,
        "run_counts": history.run_counts,
        "version": job.version,
        "revision": job.revision,
        "created_at": iso(job.created_at),
        "updated_at": iso(job.updated_at),
    }


def definition_view(job: Job) -> DefinitionView:
    """What the API shows of a job that the job itself says (not its runs nor the time): the part
    of its view a change can change, which the audit trail keeps for each revision."""
    return cast(DefinitionView, {"job_id": job.job_id, **definition_of(job)})


def as_dispatched(deps: Deps, view: JobView) -> JobView:
    """The view of a job this request has just dispatched: read again if the dispatch may have
    ended it (a chain with ``max_runs`` or ``end_at`` set off its last run within the
    look-ahead: the job is COMPLETED already, and a read right after says so)."""
    if view["max_runs"] is None and view["schedule"].get("end_at") is None:
        return view
    job = deps.store.get_job(view["job_id"])
    if job is None or job.status is not JobStatus.COMPLETED:
        return view
    return job_view(deps, job, deps.clock())


def run_view(run: Run, *, with_attempts: bool = False) -> RunView:
    """A run; a list's rows leave the attempts out (null), one run's view has them."""
    return {
        "run_id": run.run_id,
        "job_id": run.job_id,
        "status": run.status.value,
        "kind": run.kind.value,
        "scheduled_for": iso(run.scheduled_for),
        "queued_at": iso(run.queued_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "lateness_ms": run.lateness_ms,
        "jitter_ms": run.jitter_ms,
        "reason": run.reason.value if run.reason else None,
        "covers": run.covers,
        "covers_until": iso(run.covers_until),
        "note": run.note,
        "by": run.by,
        "overlap_with": run.overlap_with,
        "calendar": run.calendar,
        "moved_from": [iso(moment) for moment in run.moved_from],
        "limited_by": run.limited_by,
        "limited_since": iso(run.limited_since),
        "limited_ms": run.limited_ms,
        "attempt": run.attempt,
        # How long its target took on its last attempt that finished (the run's own times include any
        # waits between retries).
        "duration_ms": next(
            (a.duration_ms for a in reversed(run.attempts) if a.duration_ms is not None), None
        ),
        "executions": run.executions,
        "next_attempt_at": iso(run.next_attempt_at) if run.status is RunStatus.RETRYING else None,
        "error": run.error,
        "attempts": [cast(AttemptView, attempt.to_dict()) for attempt in run.attempts]
        if with_attempts
        else None,
    }

"""``PATCH /v1/jobs/{job_id}``: change a live job; a new schedule, jitter or limit starts a new chain."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from punctual_functions.api.errors import Conflict, InvalidInput
from punctual_functions.api.jobs import dispatch_if_due, owned_job, trigger_for, write
from punctual_functions.api.policy import (
    checked_alerts,
    checked_dead_letter,
    checked_target,
    checked_templates,
)
from punctual_functions.api.schedules import (
    calendar_of,
    check_jitter,
    check_max_runs,
    first_fire_time,
    job_timing,
    schedule_of,
)
from punctual_functions.api.views import JobView, as_dispatched, job_view
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.model import JobStatus, RetryPolicy, fire_time
from punctual_functions.core.timing import FireTimes, timing_of
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import PatchJobIn


def patch_job(
    deps: Deps,
    owner: str,
    job_id: str,
    request: PatchJobIn,
    *,
    action: ChangeAction = ChangeAction.UPDATED,
    details: dict[str, Any] | None = None,
) -> JobView:
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if not job.is_live:
        raise Conflict(f"a {job.status.value} job cannot be changed", "status")
    given = request.model_fields_set
    changes: dict[str, Any] = {"updated_at": now}
    if "name" in given:
        changes["name"] = request.name
    if "target" in given:
        if request.target is None:
            raise InvalidInput("a job needs a target", "target")
        changes["target"] = checked_target(deps, request.target.spec(), job.owner)
    if "payload" in given:
        changes["payload"] = request.payload
    if "retry" in given and request.retry is not None:
        changes["retry"] = RetryPolicy(**request.retry.model_dump())
    if "timeout_seconds" in given and request.timeout_seconds is not None:
        changes["timeout_seconds"] = request.timeout_seconds
    if "tags" in given and request.tags is not None:
        changes["tags"] = request.tags
    if "signing_secret" in given:
        changes["secret"] = request.signing_secret
    first = None
    timing: FireTimes | None = None
    known: dict[str, Calendar] | None = None  # a calendar read here, which the view need not read again
    if "schedule" in given:
        if request.schedule is None:
            raise InvalidInput("a job needs a schedule", "schedule")
        schedule = schedule_of(request.schedule, now, deps.settings)
        calendar = calendar_of(deps, job.owner, request.schedule, schedule)
        known = {calendar.name: calendar} if calendar is not None else None
        timing = timing_of(schedule, calendar, request.schedule.on_excluded)
        changes.update(
            schedule=schedule,
            misfire=request.schedule.misfire,
            catchup_seconds=request.schedule.catchup_seconds,
            overlap=request.schedule.overlap,
            calendar=request.schedule.calendar,
            on_excluded=request.schedule.on_excluded,
        )
    if "pause_on_failures" in given:
        changes["pause_on_failures"] = request.pause_on_failures
    if "jitter_seconds" in given and request.jitter_seconds is not None:
        changes["jitter_seconds"] = request.jitter_seconds
    if "max_concurrent" in given:
        changes["max_concurrent"] = request.max_concurrent
    if "max_runs" in given:
        changes["max_runs"] = request.max_runs
    if "alerts" in given:
        changes["alerts"] = checked_alerts(deps, request.alerts, job.owner)
    if "dead_letter" in given:
        changes["dead_letter"] = checked_dead_letter(deps, request.dead_letter, job.owner)
    if "on_complete" in given and request.on_complete is not None:
        changes["on_complete"] = request.on_complete
    if "delete_after_days" in given and request.delete_after_days is not None:
        changes["delete_after_days"] = request.delete_after_days
    if {"schedule", "jitter_seconds", "max_runs"} & given:
        # New fire times (or a new limit, counted again from the history): the triggers written
        # for the old ones must not fire (a new version), a new chain starts.
        schedule = changes.get("schedule", job.schedule)
        check_jitter(schedule, changes.get("jitter_seconds", job.jitter_seconds))
        check_max_runs(schedule, changes.get("max_runs", job.max_runs))
        first = first_fire_time(timing or job_timing(deps, job), now)
        changes.update(
            version=job.version + 1, next_trigger_at=first if job.status is JobStatus.ACTIVE else None
        )
    updated = replace(job, **changes)
    if "target" in given or "payload" in given:
        checked_templates(updated.target, updated.payload)
    # A new schedule of an active job starts its chain again from the first fire time; of a job
    # paused until a time, from its first occurrence after that time, as the pause wrote it (the
    # pause's own trigger belongs to the old version and is dropped).
    trigger = None
    if first is not None and job.status is JobStatus.ACTIVE:
        trigger = trigger_for(deps, updated, first, now)
    elif first is not None and updated.pause_until is not None:
        resumes = updated.first_after_pause(timing or job_timing(deps, job))
        if resumes is not None:
            due = max(fire_time(updated, resumes), updated.pause_until)
            trigger = trigger_for(deps, updated, resumes, now, due)
    updated = write(deps, job, updated, trigger, action, note=request.note, details=details)
    if trigger is not None and dispatch_if_due(deps, trigger, now):
        return as_dispatched(deps, job_view(deps, updated, now, calendars=known))
    return job_view(deps, updated, now, calendars=known)

"""``POST /v1/jobs/{job_id}/pause`` and ``/resume``: a pause with a note and an ``until`` at which the
job resumes by itself, and the resume that continues from the first occurrence at or after now."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from punctual_functions.api.errors import Conflict, InvalidInput
from punctual_functions.api.jobs import dispatch_if_due, owned_job, trigger_for, write
from punctual_functions.api.schedules import instant_of, job_timing
from punctual_functions.api.views import JobView, as_dispatched, job_view
from punctual_functions.core.model import Job, JobStatus, fire_time, iso
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps

# The furthest a pause's ``until`` may be.
MAX_PAUSE: Final = timedelta(days=366)


def pause_job(
    deps: Deps, owner: str, job_id: str, note: str | None = None, until: str | None = None
) -> JobView:
    """Pause, saying why (``note``) and, with ``until``, when it is active again. Pausing a paused
    job again with a note or an ``until`` replaces them (it stays paused since it was)."""
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if job.status is JobStatus.PAUSED and note is None and until is None:
        return job_view(deps, job, now)
    if job.status not in (JobStatus.ACTIVE, JobStatus.PAUSED):
        raise Conflict(f"a {job.status.value} job cannot be paused", "status")
    resume_at = None
    if until is not None:
        resume_at = _parse_until(until, job, now)
    paused = job.paused(now, by=owner, note=note, until=resume_at)
    first = paused.first_after_pause(job_timing(deps, job))
    # The occurrence the job resumes with, dispatched ahead like any other (the dispatcher and the
    # worker count the job active from ``until``), so it fires at its second.
    trigger = None
    if first is not None and resume_at is not None:
        trigger = trigger_for(deps, paused, first, now, max(fire_time(paused, first), resume_at))
    paused = write(deps, job, paused, trigger, ChangeAction.PAUSED, note=note)
    if trigger is not None:
        dispatch_if_due(deps, trigger, now)
    return job_view(deps, paused, now)


def _parse_until(until: str, job: Job, now: datetime) -> datetime:
    moment = instant_of(until, job.schedule.timezone, "until")
    if moment <= now:
        raise InvalidInput(f"until ({iso(moment)}) is not in the future", "until")
    if moment > now + MAX_PAUSE:
        raise InvalidInput("until may be at most a year away; pause without it instead", "until")
    return moment


def resume_job(deps: Deps, owner: str, job_id: str, note: str | None = None) -> JobView:
    """Continue from the first occurrence at or after now: what fell due while paused does not
    run (its row in the history says so; a backfill runs it after all)."""
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if job.status is JobStatus.ACTIVE:
        return job_view(deps, job, now)
    if job.status is not JobStatus.PAUSED:
        raise Conflict(f"a {job.status.value} job cannot be resumed", "status")
    first = job.resume_point(now, job_timing(deps, job))
    resumed = job.resumed(now, first)
    trigger = trigger_for(deps, resumed, first, now) if first else None
    resumed = write(deps, job, resumed, trigger, ChangeAction.RESUMED, note=note)
    row = deps.dispatcher.pause_row(job, now, now)
    if row is not None:
        deps.store.put_run(row)  # the pause in the history: what did not run, why, who paused
    if trigger is not None and dispatch_if_due(deps, trigger, now):
        return as_dispatched(deps, job_view(deps, resumed, now))
    return job_view(deps, resumed, now)

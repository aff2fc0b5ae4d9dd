"""The caller's jobs as the route functions read and write them: the job a caller owns, with its
derived status; the write of a change; the trigger that starts a job's chain, and its dispatch when
it falls due before the next sweep."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from punctual_functions.api.errors import Conflict, NotFound
from punctual_functions.core.model import (
    RUN_COUNT_WINDOW,
    Job,
    JobStatus,
    Run,
    RunKind,
    Trigger,
    TriggerState,
    fire_time,
    is_orphan,
    job_history,
    make_trigger,
    run_id_for,
    runs_made,
)
from punctual_functions.core.ports import ConflictError, NameTaken
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps

# Ids this API hands out; anything else cannot exist (and must not reach DynamoDB's key limits).
_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")


def owned_job(deps: Deps, owner: str, job_id: str) -> Job:
    """The caller's job as it stands; another owner's job is indistinguishable from a missing one (404)."""
    if not _ID.fullmatch(job_id):
        raise NotFound(f"job {job_id[:64]} not found", "job_id")
    job = deps.store.get_job(job_id)
    if job is None or job.owner != owner or job.gone(deps.clock()):
        raise NotFound(f"job {job_id} not found", "job_id")
    return settled(deps, job.as_of(deps.clock()))


def owned_run(deps: Deps, owner: str, job_id: str, run_id: str) -> Run:
    owned_job(deps, owner, job_id)
    run = deps.store.get_run(job_id, run_id) if _ID.fullmatch(run_id) else None
    if run is None:
        raise NotFound(f"run {run_id} not found", "run_id")
    return run


def settled(deps: Deps, job: Job) -> Job:
    """The job with its derived status: an ACTIVE one-off job whose run ended is COMPLETED or
    FAILED (the worker writes the run alone; docs/architecture.md, "The write path")."""
    at = job.schedule.first_fire_time()
    if job.status is not JobStatus.ACTIVE or job.schedule.is_recurring or at is None:
        return job
    run = deps.store.get_run(job.job_id, run_id_for(job.job_id, at, RunKind.SCHEDULED))
    return replace(job, status=job_history(job, [run] if run else []).status)


def recent_runs(deps: Deps, job: Job) -> list[Run]:
    return deps.store.recent_runs(job.job_id, limit=RUN_COUNT_WINDOW)


def ended_name_holder(deps: Deps, owner: str, name: str | None) -> str | None:
    """The id of the ended job still holding ``name``: a one-off job that ran keeps its name item
    (its end is derived from its run, not written), and the next job that wants it takes it."""
    holder = deps.store.name_holder(owner, name) if name else None
    if holder is None:
        return None
    job_id, reserved_at = holder
    job = deps.store.get_job(job_id)
    if job is None:
        # A create that reserved the name and died before writing its job (after the grace: it
        # may still be under way).
        return job_id if is_orphan(reserved_at, deps.clock()) else None
    return None if settled(deps, job).is_live else job.job_id


def write(
    deps: Deps,
    before: Job,
    after: Job,
    trigger: Trigger | None,
    action: ChangeAction,
    *,
    note: str | None = None,
    details: dict[str, Any] | None = None,
) -> Job:
    """The job changed (and the trigger of its new chain), its next revision recorded in the audit
    trail with it, or a 409: a live job holds the name, or the job was changed meanwhile. The job as
    written (its revision)."""
    from punctual_functions.api.trail import change_of

    after = replace(after, revision=before.revision + 1)
    change = change_of(action, before, after, deps.clock(), note=note, details=details)
    try:
        try:
            deps.store.update_job(before, after, trigger=trigger, change=change)
        except NameTaken:
            ended = ended_name_holder(deps, after.owner, after.name)
            if ended is None or ended == after.job_id:
                raise
            deps.store.update_job(before, after, trigger=trigger, replacing_name_of=ended, change=change)
    except ConflictError as error:
        if isinstance(error, NameTaken):
            raise Conflict(f"a live job named {after.name!r} exists already", "name") from error
        raise Conflict("the job was changed concurrently; read it again and retry", "version") from error
    return after


def trigger_for(
    deps: Deps,
    job: Job,
    first: datetime,
    now: datetime,
    fire_at: datetime | None = None,
    *,
    new_job: bool = False,
) -> Trigger:
    """The trigger of ``job``'s first occurrence at ``first``, due at ``fire_at`` (default: its
    time plus its jitter). Held (``make_trigger``) when due within the look-ahead: this request
    dispatches it itself, and a sweep listing it meanwhile (a tick at the same moment) must not
    send it a second time. The chain it starts counts on from the runs made (``max_runs``)."""
    fire = fire_at or fire_time(job, first)
    made = 0 if new_job or job.max_runs is None else runs_made(recent_runs(deps, job))
    return make_trigger(
        job,
        first,
        now=now,
        shard_count=deps.settings.shard_count,
        fire_at=fire,
        held=fire - now <= timedelta(seconds=deps.settings.lookahead_seconds),
        runs_before=made,
    )


def dispatch_if_due(deps: Deps, trigger: Trigger, now: datetime) -> bool:
    """Dispatch the trigger now if it falls due before the next sweep could, that is, if it was
    written held (``trigger_for``); whether it did. One written pending is the sweep's, even when the
    request took long enough for it to fall within the look-ahead since: sent here too, it went
    out twice, the sweep taking it for one no sweep had sent (``punctual_functions/core/frontier.py``)."""
    if trigger.state is not TriggerState.CLAIMED:
        return False
    # The sweep for this minute may have run already: dispatch now (the trigger is the safety net
    # if this process dies before the message is sent).
    deps.dispatcher.dispatch([trigger], now)
    return True

"""``POST /v1/jobs/{job_id}/backfill``: run a job's past occurrences between ``from`` and ``to`` again,
as runs of kind ``backfill`` (their own run ids, beside the scheduled ones in the history).

``buffer_all`` (the default) runs them one after another, oldest first: the API dispatches the first,
and the end of each dispatches the next (the worker, ``RunExecutor._next_backfill``). ``allow``
dispatches them all at once. ``skip`` would run almost nothing (every backfilled run but the first
would find one under way), so it is refused, as are ``buffer_one`` and ``cancel_other``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from punctual_functions.api.errors import Conflict, InvalidInput
from punctual_functions.api.jobs import owned_job
from punctual_functions.api.schedules import instant_of, job_timing
from punctual_functions.api.trail import action_of
from punctual_functions.api.views import BackfillView
from punctual_functions.core.model import JobStatus, OverlapPolicy, RunKind, Trigger, iso, make_trigger
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import BackfillIn

# The most occurrences one request backfills.
MAX_BACKFILL: Final = 1000


def backfill(deps: Deps, owner: str, job_id: str, request: BackfillIn) -> BackfillView:
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if job.status is JobStatus.CANCELLED:
        raise Conflict("a cancelled job cannot be backfilled", "status")
    if request.overlap not in (OverlapPolicy.BUFFER_ALL, OverlapPolicy.ALLOW):
        raise InvalidInput(
            f"{request.overlap} is not for backfills: skip would run almost nothing (each run would find "
            "the one before it under way); use buffer_all (one after another, the default) or allow "
            "(all at once)",
            "overlap",
        )
    start = instant_of(request.from_, job.schedule.timezone, "from")
    end = instant_of(request.to, job.schedule.timezone, "to")
    if end < start:
        raise InvalidInput("to must not be before from", "to")
    if end > now:
        raise InvalidInput(
            f"to ({iso(end)}) is in the future: the schedule fires those occurrences itself", "to"
        )
    one = timedelta(microseconds=1)
    # Under a calendar, the runs it made of the span (moved ones at their moved times).
    occurrences = job_timing(deps, job).occurrences_between(start - one, end, limit=MAX_BACKFILL + 1)
    if not job.schedule.is_recurring:
        at = job.schedule.first_fire_time()
        occurrences = [at] if at is not None and start <= at <= end else []
    if not occurrences:
        raise InvalidInput("the schedule has no occurrence between from and to", "from")
    if len(occurrences) > MAX_BACKFILL:
        raise InvalidInput(
            f"more than {MAX_BACKFILL:,} occurrences between from and to; backfill in parts", "to"
        )
    shards = deps.settings.shard_count

    def trigger_for(moment: datetime) -> Trigger:
        return make_trigger(
            job, moment, now=now, shard_count=shards, kind=RunKind.BACKFILL, fire_at=now, held=True
        )

    if request.overlap is OverlapPolicy.ALLOW:
        triggers = [trigger_for(moment) for moment in occurrences]
    else:  # buffer_all: the first now, each of the others when the one before it ends
        triggers = [replace(trigger_for(occurrences[0]), backfill_until=occurrences[-1])]
    for trigger in triggers:
        deps.store.put_trigger(trigger)
    deps.dispatcher.dispatch(triggers, now)
    details = {
        "from": iso(start),
        "to": iso(end),
        "count": len(occurrences),
        "overlap": request.overlap.value,
    }
    deps.store.put_change(action_of(ChangeAction.BACKFILLED, job, now, details))
    return {
        "job_id": job.job_id,
        "from": iso(start),
        "to": iso(end),
        "overlap": request.overlap.value,
        "count": len(occurrences),
        "occurrences": [iso(moment) for moment in occurrences],
    }

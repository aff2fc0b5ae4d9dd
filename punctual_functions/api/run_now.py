"""``POST /v1/jobs/{job_id}/run``: run the job once, now (also while paused), as a run of kind
``manual``; the API dispatches it itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from punctual_functions.api.errors import Conflict
from punctual_functions.api.jobs import owned_job
from punctual_functions.api.trail import action_of
from punctual_functions.api.views import PendingRunView, RunView, run_view
from punctual_functions.core.model import JobStatus, RunKind, RunStatus, iso, make_trigger
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps


def run_now(deps: Deps, owner: str, job_id: str) -> RunView | PendingRunView:
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if job.status is JobStatus.CANCELLED:
        raise Conflict("a cancelled job cannot run", "status")
    trigger = make_trigger(
        job, now, now=now, shard_count=deps.settings.shard_count, kind=RunKind.MANUAL, held=True
    )
    deps.store.put_trigger(trigger)
    deps.dispatcher.dispatch([trigger], now)
    deps.store.put_change(action_of(ChangeAction.RUN_NOW, job, now, {"run_id": trigger.run_id}))
    run = deps.store.get_run(job_id, trigger.run_id)
    if run is None:  # the trigger is in the table: the next sweep dispatches it
        return {"run_id": trigger.run_id, "status": RunStatus.SCHEDULED.value, "scheduled_for": iso(now)}
    return run_view(run)

"""``DELETE /v1/jobs/{job_id}`` (no further runs; the history is kept) and ``POST
/v1/jobs/{job_id}/runs/{run_id}/cancel`` (a run that has not finished never starts or is aborted)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from punctual_functions.api.errors import Conflict
from punctual_functions.api.jobs import owned_job, owned_run, write
from punctual_functions.api.views import JobView, RunView, job_view, run_view
from punctual_functions.core.model import JobStatus, Reason, RunStatus
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps


def cancel_job(deps: Deps, owner: str, job_id: str, note: str | None = None) -> JobView:
    now = deps.clock()
    job = owned_job(deps, owner, job_id)
    if job.status is JobStatus.CANCELLED:
        return job_view(deps, job, now)
    if not job.is_live:
        raise Conflict(f"a {job.status.value} job has already ended", "status")
    cancelled = replace(
        job, status=JobStatus.CANCELLED, version=job.version + 1, next_trigger_at=None, updated_at=now
    )
    cancelled = write(deps, job, cancelled, None, ChangeAction.CANCELLED, note=note)
    return job_view(deps, cancelled, now)


def cancel_run(deps: Deps, owner: str, job_id: str, run_id: str) -> RunView:
    """A queued run never starts; a running one loses its lease (its worker aborts the call at
    the next heartbeat) and is not retried."""
    now = deps.clock()
    for _ in range(3):
        run = owned_run(deps, owner, job_id, run_id)
        if run.status.is_terminal:
            raise Conflict(f"the run has already finished ({run.status.value})", "status")
        cancelled_by_request = deps.store.mark_run(
            run, RunStatus.CANCELLED, now=now, error="cancelled by request", reason=Reason.CANCELLED
        )
        if cancelled_by_request:
            cancelled = deps.store.get_run(job_id, run_id)
            assert cancelled is not None
            return run_view(cancelled, with_attempts=True)
    raise Conflict("the run kept changing; try again", "status")

"""``POST /v1/jobs/bulk``: pause (with a note and an ``until``), resume or cancel every job of the caller
whose tags match, each answered on its own, as ``POST /v1/jobs/batch`` answers each job it creates.

Each job goes through the same service call as its single-job route (the same checks, the same
writes, the same answer or refusal), so a bulk action is exactly N single actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from functions.api.errors import ApiError, InvalidInput
from functions.api.models import BulkIn
from functions.api.service import JobService
from functions.core.model import Job, JobStatus

# The most jobs one request acts on; the answer says whether more matched (repeat the call: jobs
# already paused, resumed or cancelled no longer match).
MAX_BULK: Final = 500

_ACTS_ON: Final = {
    "pause": (JobStatus.ACTIVE,),
    "resume": (JobStatus.PAUSED,),
    "cancel": (JobStatus.ACTIVE, JobStatus.PAUSED),
}


def bulk_action(jobs: JobService, owner: str, request: BulkIn) -> dict[str, Any]:
    if not request.tags:
        raise InvalidInput(
            "name at least one tag; a bulk action applies to the jobs that carry them all", "tags"
        )
    if request.action != "pause" and (request.note is not None or request.until is not None):
        field = "note" if request.note is not None else "until"
        raise InvalidInput(f"only a pause takes a {field}", field)
    now = jobs.clock()
    wanted = _ACTS_ON[request.action]
    matched = [
        job
        for job in jobs.store.owner_jobs(owner)
        if not job.gone(now)
        and job.as_of(now).status in wanted
        and all(job.tags.get(key) == value for key, value in request.tags.items())
    ]
    matched.sort(key=lambda job: (job.created_at, job.job_id))
    act: Callable[[Job], dict[str, Any]] = {
        "pause": lambda job: jobs.pause_job(owner, job.job_id, request.note, request.until),
        "resume": lambda job: jobs.resume_job(owner, job.job_id),
        "cancel": lambda job: jobs.cancel_job(owner, job.job_id),
    }[request.action]

    def one(job: Job) -> dict[str, Any]:
        try:
            return {"job_id": job.job_id, "status": 200, "job": act(job), "error": None}
        except ApiError as error:
            return {"job_id": job.job_id, "status": error.status_code, "job": None, "error": error.body()}

    chosen = matched[:MAX_BULK]
    items = jobs.clock.parallel(one, chosen, 8, "bulk")
    return {
        "action": request.action,
        "matched": len(matched),
        "items": items,
        "more": len(matched) > MAX_BULK,
    }

"""``POST /v1/jobs/bulk``: pause (with a note and an ``until``), resume or cancel every job of the caller
whose tags match, each answered on its own, as ``POST /v1/jobs/batch`` answers each job it creates.

Each job goes through the same function as its single-job route (the same checks, the same
writes, the same answer or refusal), so a bulk action is exactly N single actions. A request reads the
owner index newest first until ``MAX_BULK`` jobs match (as ``GET /v1/jobs`` pages) and answers a
cursor to go on from: an owner with 100,000 jobs is acted on a page at a time, never read whole
(docs/scale.md, "A bulk action over 100,000 jobs of one owner").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from punctual_functions.api.answer_size import AnswerBudget
from punctual_functions.api.cancel import cancel_job
from punctual_functions.api.errors import ApiError, InvalidInput
from punctual_functions.api.pausing import pause_job, resume_job
from punctual_functions.api.views import BulkItemView, BulkView, JobView
from punctual_functions.core.model import Job, JobStatus
from punctual_functions.core.ports import BadCursorError

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import BulkIn

# The most jobs one request acts on; the answer's ``next_cursor`` goes on from there (a call without
# it works too: jobs already paused, resumed or cancelled no longer match).
MAX_BULK: Final = 500
# The stored statuses a job that can take an action may have (a pause that has ended is stored PAUSED
# and reads ACTIVE); the index's filter drops the ended jobs before they are sent.
_LIVE: Final = frozenset({JobStatus.ACTIVE, JobStatus.PAUSED})

_ACTS_ON: Final = {
    "pause": (JobStatus.ACTIVE,),
    "resume": (JobStatus.PAUSED,),
    "cancel": (JobStatus.ACTIVE, JobStatus.PAUSED),
}


def bulk_action(deps: Deps, owner: str, request: BulkIn) -> BulkView:
    if not request.tags:
        raise InvalidInput(
            "name at least one tag; a bulk action applies to the jobs that carry them all", "tags"
        )
    if request.action != "pause" and (request.note is not None or request.until is not None):
        field = "note" if request.note is not None else "until"
        raise InvalidInput(f"only a pause takes a {field}", field)
    now = deps.clock()
    wanted = _ACTS_ON[request.action]

    budget = AnswerBudget()  # the answer holds each job's view: within Lambda's 6 MB (answer_size.py)

    def matches(job: Job) -> bool:
        chosen = (
            not job.gone(now)
            and job.as_of(now).status in wanted
            and all(job.tags.get(key) == value for key, value in request.tags.items())
        )
        if chosen:
            budget.take(job)
        return chosen

    try:
        chosen, next_cursor = deps.store.list_jobs(
            owner, limit=MAX_BULK, cursor=request.cursor, statuses=_LIVE, name=None, keep=matches
        )
    except BadCursorError as error:
        raise InvalidInput(str(error), "cursor") from error
    act: Callable[[Job], JobView] = {
        "pause": lambda job: pause_job(deps, owner, job.job_id, request.note, request.until),
        "resume": lambda job: resume_job(deps, owner, job.job_id, request.note),
        "cancel": lambda job: cancel_job(deps, owner, job.job_id, request.note),
    }[request.action]

    def one(job: Job) -> BulkItemView:
        try:
            return {"job_id": job.job_id, "status": 200, "job": act(job), "error": None}
        except ApiError as error:
            return {"job_id": job.job_id, "status": error.status_code, "job": None, "error": error.body()}

    items = deps.clock.parallel(one, chosen, 8, "bulk")
    return {
        "action": request.action,
        "matched": len(chosen),
        "items": items,
        "more": next_cursor is not None,
        "next_cursor": next_cursor,
    }

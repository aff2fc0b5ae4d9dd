"""The audit trail as the API makes it (docs/architecture.md, "The audit trail"): who is calling
(``Caller``, set for the request when its owner is read), a change's record, and the routes that read
a job's trail and its versions.

The caller lives in a context variable for the request: the route modules name the owner they act
for, and a change's record names the principal behind it (an assumed role's session, an API key) and
the request's id, which only the event knows."""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from punctual_functions.api.errors import InvalidInput, NotFound
from punctual_functions.api.jobs import owned_job
from punctual_functions.core import trail
from punctual_functions.core.model import Job, iso
from punctual_functions.core.trail import Caller, Change, ChangeAction, definition_of, diff

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import RestoreIn
    from punctual_functions.api.views import JobView

_caller: ContextVar[Caller | None] = ContextVar("punctual_caller", default=None)


def set_caller(caller: Caller) -> None:
    """The request's caller, for the records of the changes it makes."""
    _caller.set(caller)


def caller_for(owner: str) -> Caller:
    """Who makes this request for ``owner``: the caller the API read, or (a call that did not come
    through the API's handler: a test, the simulator) the owner itself, with a request id of its
    own."""
    caller = _caller.get()
    if caller is not None and caller.owner == owner:
        return caller
    return Caller(owner=owner, principal=owner, request_id=uuid.uuid4().hex)


def change_of(
    action: ChangeAction,
    before: Job | None,
    after: Job,
    now: datetime,
    *,
    note: str | None = None,
    details: dict[str, Any] | None = None,
) -> Change:
    """The record of a change the request's caller made, which wrote ``after`` (``before``: the job
    as it was, None for a create)."""
    caller = caller_for(after.owner)
    return trail.change_of(
        action,
        before,
        after,
        now,
        by=caller.principal,
        request_id=caller.request_id,
        note=note,
        details=details,
    )


def action_of(action: ChangeAction, job: Job, now: datetime, details: dict[str, Any]) -> Change:
    """The record of an action on a job that did not change it (run now, backfill)."""
    caller = caller_for(job.owner)
    return Change(
        job_id=job.job_id,
        revision=job.revision,
        at=now,
        action=action,
        by=caller.principal,
        request_id=caller.request_id,
        details=details,
    )


# ------------------------------------------------------------------------------------ the reads


class ChangeView(TypedDict):
    job_id: str
    revision: int
    at: str
    action: str
    by: str
    request_id: str | None
    note: str | None
    diff: dict[str, list[Any]]
    details: dict[str, Any]
    definition: dict[str, Any] | None


class ChangePageView(TypedDict):
    items: list[ChangeView]
    next_cursor: str | None


class VersionsComparedView(TypedDict):
    job_id: str
    from_revision: int
    to_revision: int
    diff: dict[str, list[Any]]


def change_view(change: Change, definition: dict[str, Any] | None = None) -> ChangeView:
    return {
        "job_id": change.job_id,
        "revision": change.revision,
        "at": iso(change.at) or "",
        "action": change.action.value,
        "by": change.by,
        "request_id": change.request_id or None,
        "note": change.note,
        "diff": change.diff,
        "details": change.details,
        "definition": definition,
    }


def list_changes(deps: Deps, owner: str, job_id: str, limit: int, cursor: str | None) -> ChangePageView:
    from punctual_functions.core.ports import BadCursorError

    owned_job(deps, owner, job_id)
    try:
        changes, next_cursor = deps.store.list_changes(job_id, limit, cursor)
    except BadCursorError as error:
        raise InvalidInput(str(error), "cursor") from error
    return {"items": [change_view(change) for change in changes], "next_cursor": next_cursor}


def get_version(deps: Deps, owner: str, job_id: str, revision: int) -> ChangeView:
    """The change that made ``revision``, with the job's definition then: the job's own for its
    current revision, else the one the next revision's change replaced."""
    job = owned_job(deps, owner, job_id)
    made = nxt = None
    for change in deps.store.revision_changes(job_id, revision):
        if change.revision == revision:
            made = change
        elif change.revision == revision + 1:
            nxt = change
    definition = definition_of(job) if revision == job.revision else nxt.before if nxt is not None else None
    if made is None or definition is None:
        raise NotFound(f"the job has no revision {revision} (or it has expired from its trail)", "revision")
    return change_view(made, definition)


def compare_versions(deps: Deps, owner: str, job_id: str, first: int, second: int) -> VersionsComparedView:
    """What changed from revision ``first`` to revision ``second``."""
    earlier = get_version(deps, owner, job_id, first)
    later = get_version(deps, owner, job_id, second)
    return {
        "job_id": job_id,
        "from_revision": first,
        "to_revision": second,
        "diff": diff(earlier["definition"] or {}, later["definition"] or {}),
    }


def revision_of(text: str, field: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput("a revision is a whole number from 1", field)
    return int(text)


# What a restore sets again: the definition a PATCH can change (not the status nor the pause, not the
# signing secret, which the trail does not keep).
RESTORED = (
    "name",
    "schedule",
    "target",
    "payload",
    "retry",
    "timeout_seconds",
    "tags",
    "jitter_seconds",
    "pause_on_failures",
    "max_runs",
    "max_concurrent",
    "alerts",
    "dead_letter",
    "on_complete",
    "delete_after_days",
)


def restore(deps: Deps, owner: str, job_id: str, request: RestoreIn) -> JobView:
    """The job's definition at ``request.revision`` made its definition again, as a PATCH of every
    field it had (checked as a PATCH is: a calendar or a right since gone refuses it, naming the
    field): a new revision, recorded as restored from that one."""
    from pydantic import ValidationError

    from punctual_functions.api.changes import patch_job
    from punctual_functions.api.errors import from_validation
    from punctual_functions.api.requests import PatchJobIn

    definition = get_version(deps, owner, job_id, request.revision)["definition"] or {}
    body: dict[str, Any] = {name: definition.get(name) for name in RESTORED}
    body["schedule"] = {
        key: value for key, value in (definition.get("schedule") or {}).items() if value is not None
    }
    if body.get("delete_after_days") is None:
        body.pop("delete_after_days")
    if body.get("alerts") is not None:
        body["alerts"] = {key: value for key, value in body["alerts"].items() if value is not None}
    try:
        patch = PatchJobIn.model_validate({**body, "note": request.note})
    except ValidationError as error:
        raise from_validation([dict(problem) for problem in error.errors()]) from error
    details = {"restored_from": request.revision}
    return patch_job(deps, owner, job_id, patch, action=ChangeAction.RESTORED, details=details)

"""The ``Job`` construct's custom resource: CloudFormation's Create, Update and Delete of a job,
through the Punctual API, for CDK's ``custom_resources.Provider`` framework (its ``onEvent``: return
the answer, raise to fail with the error's text as the stack event's reason). docs/architecture.md,
"Schedules as code (CDK)".

The API checks the job as it checks any other: a refusal fails the resource with the API's field
and reason.

A create whose answer is lost (a timeout after the API took the job) must not leave the job behind:
CloudFormation then marks the resource failed and never sends it a Delete. Every job a stack makes
is tagged with its stack, resource and request; the failed create cancels its own request's job
before it reports the failure, and a later create of the same resource cancels the leftovers of
earlier requests (if that cancel failed too).

A job that has ended (a one-off job that ran, a recurring one past its ``end_at`` or ``max_runs``,
one cancelled by hand) is the record of what ran: a Delete of it succeeds, an Update of it changes
nothing and answers the ended job (``Status`` says which end); a new construct id schedules a new one.

The job travels as one JSON property (``Job``): CloudFormation hands a custom resource every property
value as a string, numbers and booleans included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from punctual_functions.core.observability import logger

# The custom resource's one property: the job's body as the API takes it, as JSON.
JOB_PROPERTY: Final = "Job"
# Tags every job made by a stack carries (beside the job's own): which stack, resource and request
# made it, so that a job whose create never reached CloudFormation can be found again.
STACK_TAG: Final = "cfn:stack"
RESOURCE_TAG: Final = "cfn:resource"
REQUEST_TAG: Final = "cfn:request"
ORIGIN_TAGS: Final = (STACK_TAG, RESOURCE_TAG, REQUEST_TAG)
# What a PATCH sets a field to that the new properties leave out: the default a create would give
# it; null (the API's "none") for any other. Every field can so change in place: an update never
# replaces the job (a replacement could not take the name the old job still holds).
CLEARED_BY_PATCH: Final[Mapping[str, Any]] = {
    "retry": {},
    "timeout_seconds": 30,
    "tags": {},
    "jitter_seconds": 0,
    "on_complete": "keep",
    "delete_after_days": 7,
    "alerts": None,
    "dead_letter": None,
}


class Refused(Exception):
    """The API refused a request: its status, and the field and reason its answer named."""

    def __init__(self, status: int, reason: str, field: str | None = None) -> None:
        self.status = status
        self.reason = reason
        self.field = field
        super().__init__(f"{field}: {reason}" if field else reason)


class JobsApi(Protocol):
    """What the handler needs of the Punctual API (as the caller it runs as)."""

    def create(self, body: Mapping[str, Any], idempotency_key: str) -> Mapping[str, Any]:
        """``POST /v1/jobs``: the job (the same one again for a key already used). Raises ``Refused``."""

    def get(self, job_id: str) -> Mapping[str, Any]:
        """``GET /v1/jobs/{id}``. Raises ``Refused``."""

    def patch(self, job_id: str, changes: Mapping[str, Any]) -> Mapping[str, Any]:
        """``PATCH /v1/jobs/{id}``: the job as changed. Raises ``Refused``."""

    def cancel(self, job_id: str) -> None:
        """``DELETE /v1/jobs/{id}``. Raises ``Refused`` (404: no such job)."""

    def tagged(self, key: str, value: str) -> list[Mapping[str, Any]]:
        """``GET /v1/jobs?tag=key=value``, every page: the caller's jobs carrying that tag."""


def on_event(event: Mapping[str, Any], api: JobsApi) -> dict[str, Any]:
    """One CloudFormation request: what the framework answers CloudFormation with."""
    request = event["RequestType"]
    if request == "Create":
        _cancel_jobs(api, event, earlier_requests=True)
        try:
            return _answer(api.create(job_body(event), idempotency_key(event)))
        except Refused:
            raise  # the API took nothing
        except Exception:
            # The request may have reached the API, and the resource fails: no job may stay.
            try:
                _cancel_jobs(api, event, earlier_requests=False)
            except Exception:
                logger.exception("a failed create's job could not be cancelled: the next create will")
            raise
    physical = str(event.get("PhysicalResourceId") or "")
    if request == "Update":
        old = job_of(event.get("OldResourceProperties") or {})
        new = job_of(event["ResourceProperties"])
        changes = patch_of(old, new)
        if not changes:
            return _answer(api.get(physical))
        if "tags" in changes:  # a PATCH replaces the tags: the stack's own (from its create) stay
            current = api.get(physical)
            if current.get("status") not in _LIVE:
                return _unchanged_end(current)
            kept = {key: value for key, value in current.get("tags", {}).items() if key in ORIGIN_TAGS}
            changes["tags"] = {**(changes["tags"] or {}), **kept}
        try:
            return _answer(api.patch(physical, changes))
        except Refused as refused:
            ended = _ended(api, physical, refused)
            if ended is None:
                raise
            return _unchanged_end(ended)
    if request == "Delete":
        try:
            api.cancel(physical)
        except Refused as refused:
            # Gone already (404), or ended (409: it ran, passed its end, or was cancelled by hand):
            # either way nothing of it will run, which is what CloudFormation asked for.
            if refused.status != 404 and _ended(api, physical, refused) is None:
                raise
        return {"PhysicalResourceId": physical}
    raise ValueError(f"unknown RequestType {request!r}")


def job_of(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The job's body from the resource's properties (``ValueError`` naming what is wrong)."""
    text = properties.get(JOB_PROPERTY)
    if not isinstance(text, str):
        raise ValueError(f"the custom resource needs its {JOB_PROPERTY} property: the job as JSON")
    body = json.loads(text)
    if not isinstance(body, dict):
        raise ValueError(f"{JOB_PROPERTY} must be a JSON object (a job)")
    return body


def job_body(event: Mapping[str, Any]) -> dict[str, Any]:
    """The job to create: its properties' body, tagged with the stack, resource and request."""
    body = job_of(event["ResourceProperties"])
    body["tags"] = {**(body.get("tags") or {}), **_origin(event)}
    return body


def idempotency_key(event: Mapping[str, Any]) -> str:
    """The same for every delivery of one request (the framework retries an invocation that failed),
    different for every request."""
    seen = "\n".join(str(event.get(name, "")) for name in ("StackId", "LogicalResourceId", "RequestId"))
    return "cfn-" + hashlib.sha256(seen.encode()).hexdigest()[:40]


def patch_of(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The PATCH that makes ``old`` into ``new`` (the job keeps its id and its history): the fields
    that changed, and those left out back to their defaults (``CLEARED_BY_PATCH``)."""
    changes: dict[str, Any] = {}
    for field in sorted(set(old) | set(new)):
        if field in new:
            if old.get(field) != new[field]:
                changes[field] = new[field]
        else:
            changes[field] = CLEARED_BY_PATCH.get(field)
    return changes


# What a job a stack made may still be: a job that ended needs no cancel.
_LIVE: Final = ("ACTIVE", "PAUSED")


def _cancel_jobs(api: JobsApi, event: Mapping[str, Any], *, earlier_requests: bool) -> None:
    """Cancel the live jobs of this stack's resource: those of its earlier (failed) requests, or this
    request's own."""
    origin = _origin(event)
    if earlier_requests:
        found = api.tagged(STACK_TAG, origin[STACK_TAG])
    else:
        found = api.tagged(REQUEST_TAG, origin[REQUEST_TAG])
    for job in found:
        tags = job.get("tags") or {}
        this_request = tags.get(REQUEST_TAG) == origin[REQUEST_TAG]
        ours = tags.get(STACK_TAG) == origin[STACK_TAG] and tags.get(RESOURCE_TAG) == origin[RESOURCE_TAG]
        if not ours or this_request is earlier_requests or job.get("status") not in _LIVE:
            continue
        logger.info("cancelling a job of a failed create", extra={"job_id": job["job_id"], "tags": tags})
        try:
            api.cancel(str(job["job_id"]))
        except Refused as refused:
            if refused.status != 404:
                raise


def _ended(api: JobsApi, job_id: str, refused: Refused) -> Mapping[str, Any] | None:
    """The job, when the API refused a change or cancel of it because it has ended (a one-off job
    that ran, a recurring one past its ``end_at`` or ``max_runs``, one cancelled by hand); else None."""
    if refused.status != 409:
        return None
    job = api.get(job_id)
    return job if job.get("status") not in _LIVE else None


def _unchanged_end(job: Mapping[str, Any]) -> dict[str, Any]:
    """An Update of a job that has ended changes nothing: the job is the record of what ran, and
    making it run again is a Create's (a new construct id). Updating it into a new job could run a
    one-off job twice (an ``at`` in the past runs at once), as a rollback's Update would."""
    logger.warning(
        "the job has ended: the update changes nothing (a new construct id schedules a new job)",
        extra={"job_id": job.get("job_id"), "status": job.get("status")},
    )
    return _answer(job)


def _origin(event: Mapping[str, Any]) -> dict[str, str]:
    return {
        STACK_TAG: str(event.get("StackId", "")),
        RESOURCE_TAG: str(event.get("LogicalResourceId", "")),
        REQUEST_TAG: str(event.get("RequestId", "")),
    }


def _answer(job: Mapping[str, Any]) -> dict[str, Any]:
    """The framework's answer: the job's id as the physical id, and its attributes (``Fn::GetAtt``)."""
    return {
        "PhysicalResourceId": str(job["job_id"]),
        "Data": {
            "JobId": str(job["job_id"]),
            "Name": str(job.get("name") or ""),
            "NextRunAt": str(job.get("next_run_at") or ""),
            "Status": str(job.get("status") or ""),
        },
    }

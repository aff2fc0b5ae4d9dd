"""API Lambda: Powertools REST resolver, typed routes, domain errors mapped to HTTP in one place."""

from __future__ import annotations

import base64
import json
import re
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.api.models import (
    TARGET_TAGS,
    CreateJobIn,
    ErrorOut,
    JobOut,
    JobPage,
    PatchJobIn,
    RunOut,
    RunPage,
    StatsOut,
)
from functions.api.service import ApiError, JobService
from functions.core.model import JobStatus, RunStatus
from functions.core.observability import logger
from functions.core.settings import get_settings
from functions.core.wiring import build_network_policy, build_store, default_dispatcher

MAX_BODY_BYTES = 64 * 1024
# Powertools reports header names in lower case; errors name them as the caller wrote them.
HEADER_NAMES = {"idempotency-key": "Idempotency-Key"}

# The OpenAPI document and Swagger UI are routes of their own (functions/api/openapi.py, imported on
# demand) rather than Powertools' enable_swagger, whose models would be imported on every cold start.
app = APIGatewayRestResolver(enable_validation=True)

ERRORS: dict[int, Any] = {
    status: {"description": text, "content": {"application/json": {"model": ErrorOut}}}
    for status, text in {
        400: "Malformed request",
        401: "Missing or bad credentials",
        404: "No such job or run (or not yours)",
        409: "Conflicts with the job's state",
        413: "Body larger than 64 KiB",
        422: "Invalid input: the body names the field and the reason",
    }.items()
}


def ok(model: type[BaseModel], status: int = 200) -> dict[int, Any]:
    """The documented answers of a route: its success with its model, and the errors."""
    return {status: {"description": "OK", "content": {"application/json": {"model": model}}}, **ERRORS}


class Unauthorized(ApiError):
    status_code = 401
    code = "unauthorized"


@lru_cache(maxsize=1)
def service() -> JobService:
    settings = get_settings()
    return JobService(build_store(settings), default_dispatcher(), settings, build_network_policy(settings))


def current_owner() -> str:
    """The authenticated caller: a Lambda/local authorizer's principal, the IAM caller (a role, or a
    role's session, per the deployment's owner mode), or an API key."""
    context = app.current_event.request_context
    authorizer = context.authorizer
    principal = authorizer.get("principalId") if authorizer else None
    owner = (
        principal
        or owner_of_arn(context.identity.user_arn, get_settings().owner_mode)
        or context.identity.api_key_id
    )
    if not owner:
        raise Unauthorized("missing or invalid credentials")
    return str(owner)


_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/[^/]+$"
)


def owner_of_arn(arn: str | None, mode: str = "role") -> str | None:
    """The owner for an IAM caller.

    ``role`` (the default): a role's sessions (Lambda, ECS, SSO logins) all act as the role, so jobs
    created in one session stay visible in the next, and every SSO user of one permission set shares
    them. ``session``: the assumed-role ARN as it is, with the session name (for SSO, the user), so
    people sharing a role are told apart; a service's sessions then need a stable session name.
    """
    if not arn:
        return None
    match = _ASSUMED_ROLE.match(arn)
    if match and mode == "role":
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return arn


def _json(status: int, body: Any) -> Response[str]:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


@app.exception_handler(ApiError)
def handle_api_error(error: ApiError) -> Response[str]:
    return _json(error.status_code, error.body())


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response[str]:
    problems = []
    for problem in error.errors():
        if problem.get("type") == "json_invalid":
            return _json(
                400, {"error": "bad_request", "field": "body", "reason": "the body is not valid JSON"}
            )
        location = [str(part) for part in problem.get("loc", ()) if part != "body"]
        if location[:1] == ["target"]:
            location = target_location(location, problem)
        if location and location[0] == "header":
            location = [HEADER_NAMES.get(name, name) for name in location[1:]]
        elif location and location[0] in ("query", "path"):
            location = location[1:]
        problems.append({"field": ".".join(location) or "body", "reason": problem.get("msg", "invalid")})
    first = problems[0] if problems else {"field": "body", "reason": "invalid request"}
    return _json(422, {"error": "invalid_input", **first, "problems": problems})


def target_location(location: list[str], problem: dict[str, Any]) -> list[str]:
    """``target.url`` for a field of the target: pydantic puts the discriminator's tag in the location
    (``target.http.url``), and an error about the target's type names it in its context."""
    if len(location) > 1 and location[1] in TARGET_TAGS:
        location = [location[0], *location[2:]]
    context = problem.get("ctx")
    if isinstance(context, dict) and isinstance(context.get("field"), str):
        location = [*location, context["field"]]
    return location


@app.not_found
def handle_unknown_route(_error: Exception) -> Response[str]:
    return _json(404, {"error": "not_found", "field": "path", "reason": "no such route"})


@app.exception_handler(Exception)
def handle_unexpected(error: Exception) -> Response[str]:
    # A bug must not leak details; it is logged with the request for whoever runs the service.
    logger.exception("unhandled error", extra={"path": app.current_event.path})
    return _json(
        500, {"error": "internal_error", "reason": "an unexpected error occurred; it has been logged"}
    )


# --------------------------------------------------------------------------------------- routes


@app.get("/v1/health", tags=["system"])
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    from functions.api import openapi

    document = openapi.openapi_document(app, app.current_event, get_settings().api_auth)
    return _json(200, document)


@app.get("/docs", include_in_schema=False)
def swagger_ui() -> Response[str]:
    from functions.api import openapi

    return Response(
        status_code=200, content_type="text/html; charset=utf-8", body=openapi.swagger_page(app.current_event)
    )


@app.get("/docs/<asset>", include_in_schema=False)
def swagger_ui_asset(asset: str) -> Response[str]:
    from functions.api import openapi

    found = openapi.swagger_asset(asset)
    if found is None:
        return _json(404, {"error": "not_found", "field": "path", "reason": "no such asset"})
    content_type, text = found
    # The assets change only with the Powertools version the deployment ships.
    headers = {"Cache-Control": "public, max-age=86400"}
    return Response(status_code=200, content_type=content_type, body=text, headers=headers)


@app.post(
    "/v1/jobs",
    tags=["jobs"],
    responses=ok(JobOut, 201),
)
def create_job(
    job: CreateJobIn,
    idempotency_key: Annotated[
        str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128)
    ] = None,
) -> Response[str]:
    """Create a job; a retried create with the same Idempotency-Key returns the first result."""
    return _json(201, service().create_job(current_owner(), job, idempotency_key))


@app.get("/v1/jobs", tags=["jobs"], responses=ok(JobPage))
def list_jobs(
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    status: Annotated[JobStatus | None, Query()] = None,
    name: Annotated[str | None, Query(max_length=128)] = None,
) -> JobPage:
    """The caller's jobs, newest first."""
    return JobPage.model_validate(
        service().list_jobs(current_owner(), limit=limit, cursor=cursor, status=status, name=name)
    )


@app.get("/v1/jobs/<job_id>", tags=["jobs"], responses=ok(JobOut))
def get_job(job_id: str) -> JobOut:
    return JobOut.model_validate(service().get_job(current_owner(), job_id))


@app.patch("/v1/jobs/<job_id>", tags=["jobs"], responses=ok(JobOut))
def patch_job(job_id: str, changes: PatchJobIn) -> JobOut:
    """Change schedule, target, payload, retry, timeout, tags or name; future triggers follow."""
    return JobOut.model_validate(service().patch_job(current_owner(), job_id, changes))


@app.delete("/v1/jobs/<job_id>", tags=["jobs"], responses=ok(JobOut))
def cancel_job(job_id: str) -> JobOut:
    """Cancel: no further runs; the history is kept."""
    return JobOut.model_validate(service().cancel_job(current_owner(), job_id))


@app.post("/v1/jobs/<job_id>/pause", tags=["jobs"], responses=ok(JobOut))
def pause_job(job_id: str) -> JobOut:
    return JobOut.model_validate(service().pause_job(current_owner(), job_id))


@app.post("/v1/jobs/<job_id>/resume", tags=["jobs"], responses=ok(JobOut))
def resume_job(job_id: str) -> JobOut:
    """Resume at the next occurrence; the misfire policy decides about occurrences missed meanwhile."""
    return JobOut.model_validate(service().resume_job(current_owner(), job_id))


@app.post(
    "/v1/jobs/<job_id>/run",
    tags=["runs"],
    responses={
        202: {"description": "Accepted", "content": {"application/json": {"model": RunOut}}},
        **ERRORS,
    },
)
def run_job_now(job_id: str) -> Response[str]:
    """Run the job once, now (also while paused)."""
    return _json(202, service().run_now(current_owner(), job_id))


@app.get("/v1/jobs/<job_id>/runs", tags=["runs"], responses=ok(RunPage))
def list_runs(
    job_id: str,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    status: Annotated[RunStatus | None, Query()] = None,
) -> RunPage:
    """Execution history, newest first."""
    return RunPage.model_validate(
        service().list_runs(current_owner(), job_id, limit=limit, cursor=cursor, status=status)
    )


@app.get("/v1/jobs/<job_id>/runs/<run_id>", tags=["runs"], responses=ok(RunOut))
def get_run(job_id: str, run_id: str) -> RunOut:
    return RunOut.model_validate(service().get_run(current_owner(), job_id, run_id))


@app.post("/v1/jobs/<job_id>/runs/<run_id>/cancel", tags=["runs"], responses=ok(RunOut))
def cancel_run(job_id: str, run_id: str) -> RunOut:
    """Cancel a run that has not finished: it never starts, or its HTTP call is aborted; no retries."""
    return RunOut.model_validate(service().cancel_run(current_owner(), job_id, run_id))


@app.get("/v1/stats", tags=["system"], responses=ok(StatsOut))
def stats() -> StatsOut:
    """The caller's job and run counts, plus queue depth, in-flight messages, DLQ depth and lag."""
    return StatsOut.model_validate(service().stats(current_owner()))


def _problem(status: int, error: str, field: str, reason: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"error": error, "field": field, "reason": reason}),
    }


def _reject_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """Checks Powertools leaves to us, answered before routing: size, media type, strict JSON.

    JSON bodies must be one object of standard JSON (no NaN/Infinity, no unpaired surrogates) in
    UTF-8. curl's default form content type is accepted, since curl -d users send JSON that way.
    """
    raw = event.get("body")
    if not raw:
        return None
    data = (
        base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode("utf-8", "surrogatepass")
    )
    if len(data) > MAX_BODY_BYTES:
        return _problem(413, "payload_too_large", "body", "the body exceeds 64 KiB")
    headers = {key.lower(): value for key, value in (event.get("headers") or {}).items()}
    media_type = headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if media_type not in ("application/json", "application/x-www-form-urlencoded", ""):
        return _problem(415, "unsupported_media_type", "Content-Type", "send the body as application/json")
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_refuse_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeError, ValueError) as error:
        return _problem(400, "bad_request", "body", f"the body is not valid JSON: {error}")
    if not isinstance(value, dict):
        return _problem(422, "invalid_input", "body", "the body must be a JSON object")
    # Powertools parses only an exact application/json type.
    event["headers"] = {
        **{k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"},
        "Content-Type": "application/json",
    }
    event["multiValueHeaders"] = {
        **{k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"},
        "Content-Type": ["application/json"],
    }
    event["body"], event["isBase64Encoded"] = text, False
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    rejected = _reject_body(event)
    if rejected is not None:
        return rejected
    return app.resolve(event, context)

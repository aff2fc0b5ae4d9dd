"""API Lambda: Powertools REST resolver, typed routes, domain errors mapped to HTTP in one place."""

from __future__ import annotations

import base64
import json
import re
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Server
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.api.models import (
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
TITLE = "Punctual"
DESCRIPTION = (
    "Schedule one-off and recurring jobs that fire at their second. Authenticate with AWS SigV4 "
    "(deployed) or `Authorization: Bearer <token>` (local stack)."
)

app = APIGatewayRestResolver(enable_validation=True)
app.enable_swagger(
    path="/docs",
    title=TITLE,
    version="0.1.0",
    description=DESCRIPTION,
    security_schemes={"bearer": HTTPBearer()},
    security=[{"bearer": []}],
)

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
    """The authenticated caller: a Lambda/local authorizer's principal, the IAM caller (a role for
    its sessions), or an API key."""
    context = app.current_event.request_context
    authorizer = context.authorizer
    principal = authorizer.get("principalId") if authorizer else None
    owner = principal or owner_of_arn(context.identity.user_arn) or context.identity.api_key_id
    if not owner:
        raise Unauthorized("missing or invalid credentials")
    return str(owner)


_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/[^/]+$"
)


def owner_of_arn(arn: str | None) -> str | None:
    """The owner for an IAM caller: a role's sessions (Lambda, ECS, SSO logins) all act as the role,
    so jobs created in one session stay visible in the next."""
    if not arn:
        return None
    match = _ASSUMED_ROLE.match(arn)
    if match:
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
        if location and location[0] == "header":
            location = [HEADER_NAMES.get(name, name) for name in location[1:]]
        elif location and location[0] in ("query", "path"):
            location = location[1:]
        problems.append({"field": ".".join(location) or "body", "reason": problem.get("msg", "invalid")})
    first = problems[0] if problems else {"field": "body", "reason": "invalid request"}
    return _json(422, {"error": "invalid_input", **first, "problems": problems})


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


@app.get("/openapi.json", tags=["system"], include_in_schema=False)
def openapi_document() -> Response[str]:
    document = json.loads(
        app.get_openapi_json_schema(
            title=TITLE,
            version="0.1.0",
            description=DESCRIPTION,
            security_schemes={"bearer": HTTPBearer()},
            security=[{"bearer": []}],
            servers=[Server(url="/")],
        )
    )
    # Powertools drops an empty per-route security list; health is the one route without auth.
    document["paths"]["/v1/health"]["get"]["security"] = []
    add_links(document)
    return Response(status_code=200, content_type="application/json", body=json.dumps(document))


# OpenAPI links: which answer's ids feed which operation, so a client (and schemathesis's stateful
# phase) can chain calls with real ids: create a job, read, change, pause, resume, run and cancel it,
# then read and cancel the run it started. Every answer carrying a job (JobOut) leads to the job's
# other operations; every answer carrying a run (RunOut) to the run's and to its job. Lists have no
# links: `items/0` of an empty page does not resolve.
_JOB = "/v1/jobs/{job_id}"
_RUN = "/v1/jobs/{job_id}/runs/{run_id}"
JOB_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetJob": ("get", _JOB),
    "ChangeJob": ("patch", _JOB),
    "CancelJob": ("delete", _JOB),
    "PauseJob": ("post", _JOB + "/pause"),
    "ResumeJob": ("post", _JOB + "/resume"),
    "RunJobNow": ("post", _JOB + "/run"),
    "ListRuns": ("get", _JOB + "/runs"),
}
RUN_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetRun": ("get", _RUN),
    "CancelRun": ("post", _RUN + "/cancel"),
}
# The answers that carry a job, and those that carry a run: (method, path, status).
JOB_ANSWERS = [
    ("post", "/v1/jobs", "201"),
    ("get", _JOB, "200"),
    ("patch", _JOB, "200"),
    ("delete", _JOB, "200"),
    ("post", _JOB + "/pause", "200"),
    ("post", _JOB + "/resume", "200"),
]
RUN_ANSWERS = [("post", _JOB + "/run", "202"), ("get", _RUN, "200"), ("post", _RUN + "/cancel", "200")]


def add_links(document: dict[str, Any]) -> None:
    """Adds the ``links`` of every answer that carries a job or a run, naming targets by operationId."""
    paths = document["paths"]

    def link(target: tuple[str, str], parameters: dict[str, str]) -> dict[str, Any]:
        method, path = target
        names = {p["name"] for p in paths[path][method].get("parameters", []) if p["in"] == "path"}
        return {
            "operationId": paths[path][method]["operationId"],
            "parameters": {f"path.{name}": parameters[name] for name in sorted(names)},
        }

    job = {"job_id": "$response.body#/job_id"}
    run = {**job, "run_id": "$response.body#/run_id"}
    for answers, targets, ids in (
        (JOB_ANSWERS, JOB_OPERATIONS, job),
        (RUN_ANSWERS, {**RUN_OPERATIONS, "GetJob": JOB_OPERATIONS["GetJob"]}, run),
    ):
        for method, path, status in answers:
            response = paths[path][method]["responses"][status]
            response["links"] = {
                name: link(target, ids) for name, target in targets.items() if target != (method, path)
            }


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

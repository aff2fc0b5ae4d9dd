"""API Lambda: Powertools REST resolver, typed routes, domain errors mapped to HTTP in one place."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.models import CreateJobIn
from functions.api.service import ApiError, JobService
from functions.core.model import RunStatus
from functions.core.observability import logger
from functions.core.settings import get_settings
from functions.core.wiring import build_network_policy, build_store, default_dispatcher

MAX_BODY_BYTES = 64 * 1024

app = APIGatewayRestResolver(enable_validation=True)


class Unauthorized(ApiError):
    status_code = 401
    code = "unauthorized"


@lru_cache(maxsize=1)
def service() -> JobService:
    settings = get_settings()
    return JobService(build_store(settings), default_dispatcher(), settings, build_network_policy(settings))


def current_owner() -> str:
    """The authenticated caller: a Lambda/local authorizer's principal, the IAM caller, or an API key."""
    context = app.current_event.request_context
    authorizer = context.authorizer
    principal = authorizer.get("principalId") if authorizer else None
    owner = principal or context.identity.user_arn or context.identity.api_key_id
    if not owner:
        raise Unauthorized("missing or invalid credentials")
    return str(owner)


def _json(status: int, body: dict[str, Any]) -> Response[str]:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


@app.exception_handler(ApiError)
def handle_api_error(error: ApiError) -> Response[str]:
    return _json(error.status_code, error.body())


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response[str]:
    problems = []
    for problem in error.errors():
        location = [str(part) for part in problem.get("loc", ()) if part not in ("body",)]
        if location and location[0] in ("query", "path", "header"):
            location = location[1:]
        problems.append({"field": ".".join(location) or "body", "reason": problem.get("msg", "invalid")})
    first = problems[0] if problems else {"field": "body", "reason": "invalid request"}
    return _json(422, {"error": "invalid_input", **first, "problems": problems})


@app.get("/v1/health")
def health() -> dict[str, Any]:
    return {"status": "ok"}


@app.post("/v1/jobs")
def create_job(job: CreateJobIn) -> Response[str]:
    return _json(201, service().create_job(current_owner(), job))


@app.get("/v1/jobs/<job_id>")
def get_job(job_id: str) -> dict[str, Any]:
    return service().get_job(current_owner(), job_id)


@app.get("/v1/jobs/<job_id>/runs")
def list_runs(
    job_id: str,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    status: Annotated[RunStatus | None, Query()] = None,
) -> dict[str, Any]:
    return service().list_runs(current_owner(), job_id, limit=limit, cursor=cursor, status=status)


@app.get("/v1/jobs/<job_id>/runs/<run_id>")
def get_run(job_id: str, run_id: str) -> dict[str, Any]:
    return service().get_run(current_owner(), job_id, run_id)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    body = event.get("body") or ""
    if len(body.encode() if isinstance(body, str) else body) > MAX_BODY_BYTES:
        return {
            "statusCode": 413,
            "headers": {"Content-Type": "application/json"},
            "body": json.dumps(
                {"error": "payload_too_large", "field": "body", "reason": "the body exceeds 64 KiB"}
            ),
        }
    return app.resolve(event, context)

"""API Lambda: the routes, served by Powertools' resolvers for both API Gateway flavours.

A deployment with API keys sends REST API proxy events (payload 1.0); one with IAM (the default)
sends HTTP API events (payload 2.0, which carries the IAM caller). The routes live on one ``Router``
that both resolvers include; ``handler`` picks the resolver by the event's ``version``.

Who is calling is ``auth.py``; the body checks made before routing are ``guards.py``; how every
refusal becomes an HTTP answer is ``errors.py``; the OpenAPI document and Swagger UI are
``openapi.py``; what each route does is ``service.py``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.api.auth import owner_of, owner_of_arn
from functions.api.errors import (
    ApiError,
    InternalError,
    NotFound,
    from_validation,
    proxy_result,
    target_location,
)
from functions.api.guards import check_body
from functions.api.models import (
    BackfillIn,
    BackfillOut,
    BulkIn,
    BulkOut,
    CreatedJobsOut,
    CreateJobIn,
    CreateJobsIn,
    ErrorOut,
    JobOut,
    JobPage,
    PatchJobIn,
    PauseIn,
    PreviewIn,
    PreviewOut,
    RunOut,
    RunPage,
    StatsOut,
)
from functions.api.service import JobService
from functions.core.factories import build_network_policy, build_store, default_dispatcher
from functions.core.model import JobStatus, Reason, RunStatus
from functions.core.observability import logger
from functions.core.settings import get_settings

# The OpenAPI document and Swagger UI are routes of their own (functions/api/openapi.py, imported on
# demand) rather than Powertools' enable_swagger, whose models would be imported on every cold start.
app = Router()  # type: ignore[no-untyped-call]
rest_app = APIGatewayRestResolver(enable_validation=True)
http_app = APIGatewayHttpResolver(enable_validation=True)

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


__all__ = ["app", "handler", "http_app", "owner_of_arn", "rest_app", "target_location"]


@lru_cache(maxsize=1)
def service() -> JobService:
    settings = get_settings()
    return JobService(build_store(settings), default_dispatcher(), settings, build_network_policy(settings))


def current_owner() -> str:
    return owner_of(app.current_event, get_settings().owner_mode)


def _json(status: int, body: Any) -> Response[str]:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


def _answer(error: ApiError) -> Response[str]:
    return _json(error.status_code, error.body())


def handle_api_error(error: ApiError) -> Response[str]:
    return _answer(error)


def handle_validation_error(error: RequestValidationError) -> Response[str]:
    return _answer(from_validation(list(error.errors())))


def handle_unknown_route(_error: Exception) -> Response[str]:
    return _answer(NotFound("no such route", "path"))


def handle_unexpected(error: Exception) -> Response[str]:
    # A bug must not leak details; it is logged with the request for whoever runs the service.
    logger.exception("unhandled error", extra={"path": app.current_event.path})
    return _answer(InternalError("an unexpected error occurred; it has been logged"))


# --------------------------------------------------------------------------------------- routes


@app.get("/v1/health", tags=["system"])
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    from functions.api import openapi

    document = openapi.openapi_document(rest_app, app.current_event, get_settings().api_auth)
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


IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128)]
# A batch stores job i under "<key>#<i>": room for the suffix within the same 128.
BatchIdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=120)]


@app.post(
    "/v1/jobs",
    tags=["jobs"],
    responses=ok(JobOut, 201),
)
def create_job(job: CreateJobIn, idempotency_key: IdempotencyKey = None) -> Response[str]:
    """Create a job; a retried create with the same Idempotency-Key returns the first result."""
    return _json(201, service().create_job(current_owner(), job, idempotency_key))


@app.post("/v1/jobs/batch", tags=["jobs"], responses=ok(CreatedJobsOut))
def create_jobs(batch: CreateJobsIn, idempotency_key: BatchIdempotencyKey = None) -> Response[str]:
    """Create up to 100 jobs, each validated and answered on its own (index, and the job or the
    error POST /v1/jobs would have answered); with an Idempotency-Key a retried batch answers each
    job as the first time."""
    return _json(200, {"items": service().create_jobs(current_owner(), batch.jobs, idempotency_key)})


@app.post("/v1/jobs/bulk", tags=["jobs"], responses=ok(BulkOut))
def bulk_action(request: BulkIn) -> Response[str]:
    """Pause (with a note and until), resume or cancel every job of yours that carries all the given
    tags, each answered on its own (job_id, and the job or the error its single-job route would give)."""
    from functions.api.bulk import bulk_action as act

    return _json(200, act(service(), current_owner(), request))


@app.get("/v1/jobs", tags=["jobs"], responses=ok(JobPage))
def list_jobs(
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    status: Annotated[JobStatus | None, Query()] = None,
    name: Annotated[str | None, Query(max_length=128)] = None,
    name_prefix: Annotated[str | None, Query(max_length=128)] = None,
) -> JobPage:
    """The caller's jobs, newest first; ``name`` matches a name exactly, ``name_prefix`` its start."""
    return JobPage.model_validate(
        service().list_jobs(
            current_owner(), limit=limit, cursor=cursor, status=status, name=name, name_prefix=name_prefix
        )
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
def pause_job(job_id: str, pause: Annotated[PauseIn | None, Body()] = None) -> JobOut:
    """Pause, optionally with a note and an ``until`` at which it resumes by itself."""
    note, until = (pause.note, pause.until) if pause is not None else (None, None)
    return JobOut.model_validate(service().pause_job(current_owner(), job_id, note, until))


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


@app.post(
    "/v1/jobs/<job_id>/backfill",
    tags=["runs"],
    responses={
        202: {"description": "Accepted", "content": {"application/json": {"model": BackfillOut}}},
        **ERRORS,
    },
)
def backfill_job(job_id: str, request: BackfillIn) -> Response[str]:
    """Run the job's past occurrences between from and to again (runs of kind backfill), one after
    another (overlap buffer_all, the default) or all at once (allow)."""
    from functions.api.backfill import backfill

    return _json(202, backfill(service(), current_owner(), job_id, request))


@app.get("/v1/jobs/<job_id>/runs", tags=["runs"], responses=ok(RunPage))
def list_runs(
    job_id: str,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    status: Annotated[RunStatus | None, Query()] = None,
    reason: Annotated[Reason | None, Query(description="only the non-runs of this reason")] = None,
) -> RunPage:
    """Execution history, newest first, with a row for every occurrence that did not run (skipped by
    overlap or misfire, not run while paused, cancelled) and its reason."""
    page = service().list_runs(
        current_owner(), job_id, limit=limit, cursor=cursor, status=status, reason=reason
    )
    return RunPage.model_validate(page)


@app.get("/v1/jobs/<job_id>/runs/<run_id>", tags=["runs"], responses=ok(RunOut))
def get_run(job_id: str, run_id: str) -> RunOut:
    return RunOut.model_validate(service().get_run(current_owner(), job_id, run_id))


@app.post("/v1/jobs/<job_id>/runs/<run_id>/cancel", tags=["runs"], responses=ok(RunOut))
def cancel_run(job_id: str, run_id: str) -> RunOut:
    """Cancel a run that has not finished: it never starts, or its HTTP call is aborted; no retries."""
    return RunOut.model_validate(service().cancel_run(current_owner(), job_id, run_id))


@app.post("/v1/schedules/preview", tags=["schedules"], responses=ok(PreviewOut))
def preview_schedule(preview: PreviewIn) -> Response[str]:
    """The next fire times of a schedule (UTC and its zone, DST gaps and repeats marked) and, given an
    outage, what its misfire policy would run afterwards. Nothing is created."""
    from functions.api.previews import preview_schedule as preview_of

    current_owner()  # the caller must be authenticated, as on every /v1 route
    jobs = service()
    return _json(200, preview_of(preview, jobs.settings, jobs.clock()))


@app.get("/v1/stats", tags=["system"], responses=ok(StatsOut))
def stats() -> StatsOut:
    """The caller's job and run counts, plus queue depth, in-flight messages, DLQ depth and lag."""
    return StatsOut.model_validate(service().stats(current_owner()))


for _resolver in (rest_app, http_app):
    _resolver.include_router(app)
    _resolver.exception_handler(ApiError)(handle_api_error)
    _resolver.exception_handler(RequestValidationError)(handle_validation_error)
    _resolver.exception_handler(Exception)(handle_unexpected)
    _resolver.not_found(handle_unknown_route)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        check_body(event)
    except ApiError as refused:
        return proxy_result(refused)
    resolver = http_app if event.get("version") == "2.0" else rest_app
    return resolver.resolve(event, context)

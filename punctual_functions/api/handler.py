"""API Lambda: the routes, for both API Gateway flavours.

A deployment with API keys sends REST API proxy events (payload 1.0); one with IAM (the default)
sends HTTP API events (payload 2.0, which carries the IAM caller). ``routing.py`` reads both and
resolves them to the routes declared here, each with its parameters, body model and answer model
(by name: the models, and pydantic with them, load with the first request that has a body).

Who is calling is ``auth.py``; the body checks made before routing are ``guards.py``; how every
refusal becomes an HTTP answer is ``errors.py``; the OpenAPI document and Swagger UI are
``openapi.py``. What each route does is a function of its route module (``create.py``, ``changes.py``,
``pausing.py``, ``cancel.py``, ``run_now.py``, ``reads.py``; ``bulk.py``, ``backfill.py`` and
``previews.py`` imported on demand), given the process's ``Deps``; what it answers is ``views.py``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from punctual_functions.api import calendars, cancel, changes, create, pausing, reads, run_now, trail
from punctual_functions.api.auth import caller_of, owner_of, owner_of_arn
from punctual_functions.api.deps import Deps
from punctual_functions.api.errors import InvalidInput, NotFound, target_location
from punctual_functions.api.routing import Answer, Body, Param, Request, Router
from punctual_functions.api.trail import set_caller
from punctual_functions.core.factories import build_job_service
from punctual_functions.core.model import JobStatus, Reason, RunStatus
from punctual_functions.core.observability import logger
from punctual_functions.core.settings import get_settings

if TYPE_CHECKING:
    from punctual_functions.api.calendar_views import CalendarDaysView, CalendarPageView, CalendarView
    from punctual_functions.api.limit_views import LimitPageView, LimitView
    from punctual_functions.api.requests import (
        BackfillIn,
        BulkIn,
        CalendarRulesIn,
        CreateCalendarIn,
        CreateJobIn,
        CreateJobsIn,
        LimitIn,
        NoteIn,
        PatchJobIn,
        PauseIn,
        PreviewIn,
        RestoreIn,
    )
    from punctual_functions.api.views import (
        BulkView,
        CreatedJobsView,
        JobPageView,
        JobView,
        PreviewView,
        RunPageView,
        RunView,
        StatsView,
    )

app = Router()

__all__ = ["app", "handler", "owner_of_arn", "target_location"]


@lru_cache(maxsize=1)
def deps() -> Deps:
    return build_job_service(get_settings())


def owner(request: Request) -> str:
    """The request's owner; the caller behind it is kept for the records of the changes it makes."""
    found = owner_of(request.event, get_settings().owner_mode)
    set_caller(caller_of(request.event, found))
    return found


LIMIT = Param("limit", int, default=20, ge=1, le=100)
CURSOR = Param("cursor", max_length=2048)
IDEMPOTENCY_KEY = Param("Idempotency-Key", where="header", min_length=1, max_length=128)
# A batch stores job i under "<key>#<i>": room for the suffix within the same 128.
BATCH_IDEMPOTENCY_KEY = Param("Idempotency-Key", where="header", min_length=1, max_length=120)


# --------------------------------------------------------------------------------------- routes


@app.route("GET", "/v1/health", tags=("system",))
def health(request: Request) -> dict[str, str]:
    return {"status": "ok"}


@app.route("GET", "/openapi.json", in_schema=False)
def openapi_document(request: Request) -> Answer:
    from punctual_functions.api import openapi

    return Answer(200, openapi.openapi_document(app, request, get_settings().api_auth))


@app.route("GET", "/docs", in_schema=False)
def swagger_ui(request: Request) -> Answer:
    from punctual_functions.api import openapi

    return Answer(200, openapi.swagger_page(request), content_type="text/html; charset=utf-8")


@app.route("GET", "/docs/<asset>", in_schema=False)
def swagger_ui_asset(request: Request, asset: str) -> Answer:
    from punctual_functions.api import openapi

    found = openapi.swagger_asset(asset)
    if found is None:
        raise NotFound("no such asset", "path")
    content_type, text = found
    # The assets change only with the Powertools version the deployment ships.
    return Answer(200, text, content_type=content_type, headers={"Cache-Control": "public, max-age=86400"})


@app.route(
    "POST",
    "/v1/jobs",
    params=(IDEMPOTENCY_KEY,),
    body=Body("CreateJobIn", "job"),
    status=201,
    answer="JobOut",
    tags=("jobs",),
)
def create_job(request: Request, job: CreateJobIn, idempotency_key: str | None) -> Answer:
    """Create a job; a retried create with the same Idempotency-Key returns the first result."""
    return Answer(201, create.create_job(deps(), owner(request), job, idempotency_key))


@app.route(
    "POST",
    "/v1/jobs/batch",
    params=(BATCH_IDEMPOTENCY_KEY,),
    body=Body("CreateJobsIn", "batch"),
    answer="CreatedJobsOut",
    tags=("jobs",),
)
def create_jobs(request: Request, batch: CreateJobsIn, idempotency_key: str | None) -> CreatedJobsView:
    """Create up to 100 jobs, each validated and answered on its own (index, and the job or the
    error POST /v1/jobs would have answered); with an Idempotency-Key a retried batch answers each
    job as the first time."""
    return {"items": create.create_jobs(deps(), owner(request), batch.jobs, idempotency_key)}


@app.route("POST", "/v1/jobs/bulk", body=Body("BulkIn"), answer="BulkOut", tags=("jobs",))
def bulk_action(request: Request, body: BulkIn) -> BulkView:
    """Pause (with a note and until), resume or cancel every job of yours that carries all the given
    tags, each answered on its own (job_id, and the job or the error its single-job route would give)."""
    from punctual_functions.api.bulk import bulk_action as act

    return act(deps(), owner(request), body)


@app.route(
    "GET",
    "/v1/jobs",
    params=(
        LIMIT,
        CURSOR,
        Param("status", JobStatus),
        Param("name", max_length=128),
        Param("name_prefix", max_length=128),
        Param("tag", max_length=400, description="key=value: the jobs carrying this tag"),
    ),
    answer="JobPage",
    tags=("jobs",),
)
def list_jobs(
    request: Request,
    limit: int,
    cursor: str | None,
    status: JobStatus | None,
    name: str | None,
    name_prefix: str | None,
    tag: str | None,
) -> JobPageView:
    """The caller's jobs, newest first; ``name`` matches a name exactly, ``name_prefix`` its start,
    ``tag`` (``key=value``) a tag the job carries."""
    return reads.list_jobs(
        deps(),
        owner(request),
        limit=limit,
        cursor=cursor,
        status=status,
        name=name,
        name_prefix=name_prefix,
        tag=reads.tag_filter(tag),
    )


@app.route("GET", "/v1/jobs/<job_id>", answer="JobOut", tags=("jobs",))
def get_job(request: Request, job_id: str) -> JobView:
    return reads.get_job(deps(), owner(request), job_id)


@app.route("PATCH", "/v1/jobs/<job_id>", body=Body("PatchJobIn", "patch"), answer="JobOut", tags=("jobs",))
def patch_job(request: Request, job_id: str, patch: PatchJobIn) -> JobView:
    """Change schedule, target, payload, retry, timeout, tags or name; future triggers follow."""
    return changes.patch_job(deps(), owner(request), job_id, patch)


@app.route("DELETE", "/v1/jobs/<job_id>", answer="JobOut", tags=("jobs",))
def cancel_job(request: Request, job_id: str) -> JobView:
    """Cancel: no further runs; the history is kept."""
    return cancel.cancel_job(deps(), owner(request), job_id)


@app.route(
    "POST",
    "/v1/jobs/<job_id>/pause",
    body=Body("PauseIn", "pause", optional=True),
    answer="JobOut",
    tags=("jobs",),
)
def pause_job(request: Request, job_id: str, pause: PauseIn | None) -> JobView:
    """Pause, optionally with a note and an ``until`` at which it resumes by itself."""
    note, until = (pause.note, pause.until) if pause is not None else (None, None)
    return pausing.pause_job(deps(), owner(request), job_id, note, until)


@app.route(
    "POST",
    "/v1/jobs/<job_id>/resume",
    body=Body("NoteIn", "resume", optional=True),
    answer="JobOut",
    tags=("jobs",),
)
def resume_job(request: Request, job_id: str, resume: NoteIn | None) -> JobView:
    """Resume at the next occurrence; the misfire policy decides about occurrences missed meanwhile."""
    note = resume.note if resume is not None else None
    return pausing.resume_job(deps(), owner(request), job_id, note)


@app.route("POST", "/v1/jobs/<job_id>/run", status=202, answer="RunOut", tags=("runs",))
def run_job_now(request: Request, job_id: str) -> Answer:
    """Run the job once, now (also while paused)."""
    return Answer(202, run_now.run_now(deps(), owner(request), job_id))


@app.route(
    "POST",
    "/v1/jobs/<job_id>/backfill",
    body=Body("BackfillIn"),
    status=202,
    answer="BackfillOut",
    tags=("runs",),
)
def backfill_job(request: Request, job_id: str, body: BackfillIn) -> Answer:
    """Run the job's past occurrences between from and to again (runs of kind backfill), one after
    another (overlap buffer_all, the default) or all at once (allow)."""
    from punctual_functions.api.backfill import backfill

    return Answer(202, backfill(deps(), owner(request), job_id, body))


@app.route(
    "GET",
    "/v1/jobs/<job_id>/runs",
    params=(
        LIMIT,
        CURSOR,
        Param("status", RunStatus),
        Param("reason", Reason, description="only the non-runs of this reason"),
    ),
    answer="RunPage",
    tags=("runs",),
)
def list_runs(
    request: Request,
    job_id: str,
    limit: int,
    cursor: str | None,
    status: RunStatus | None,
    reason: Reason | None,
) -> RunPageView:
    """Execution history, newest first, with a row for every occurrence that did not run (skipped by
    overlap or misfire, not run while paused, cancelled) and its reason."""
    return reads.list_runs(
        deps(), owner(request), job_id, limit=limit, cursor=cursor, status=status, reason=reason
    )


@app.route("GET", "/v1/jobs/<job_id>/changes", params=(LIMIT, CURSOR), answer="ChangePage", tags=("changes",))
def list_changes(request: Request, job_id: str, limit: int, cursor: str | None) -> trail.ChangePageView:
    """The job's audit trail, newest first: every change, who made it, when, why, and what changed."""
    return trail.list_changes(deps(), owner(request), job_id, limit, cursor)


@app.route("GET", "/v1/jobs/<job_id>/versions/<revision>", answer="ChangeOut", tags=("changes",))
def get_version(request: Request, job_id: str, revision: str) -> trail.ChangeView:
    """One revision of the job: the change that made it, with the job's definition then."""
    return trail.get_version(deps(), owner(request), job_id, trail.revision_of(revision, "revision"))


@app.route(
    "GET",
    "/v1/jobs/<job_id>/compare",
    params=(Param("from", int, ge=1, arg="first"), Param("to", int, ge=1, arg="second")),
    answer="VersionsCompared",
    tags=("changes",),
)
def compare_versions(
    request: Request, job_id: str, first: int | None, second: int | None
) -> trail.VersionsComparedView:
    """What differs between two revisions of the job (``from`` and ``to``)."""
    if first is None or second is None:
        raise InvalidInput("name both revisions: from and to", "from" if first is None else "to")
    return trail.compare_versions(deps(), owner(request), job_id, first, second)


@app.route(
    "POST", "/v1/jobs/<job_id>/restore", body=Body("RestoreIn", "restore"), answer="JobOut", tags=("changes",)
)
def restore_version(request: Request, job_id: str, restore: RestoreIn) -> JobView:
    """Make an earlier revision's definition the job's again: a new revision, validated as a PATCH."""
    return trail.restore(deps(), owner(request), job_id, restore)


@app.route("GET", "/v1/jobs/<job_id>/runs/<run_id>", answer="RunOut", tags=("runs",))
def get_run(request: Request, job_id: str, run_id: str) -> RunView:
    return reads.get_run(deps(), owner(request), job_id, run_id)


@app.route("POST", "/v1/jobs/<job_id>/runs/<run_id>/cancel", answer="RunOut", tags=("runs",))
def cancel_run(request: Request, job_id: str, run_id: str) -> RunView:
    """Cancel a run that has not finished: it never starts, or its HTTP call is aborted; no retries."""
    return cancel.cancel_run(deps(), owner(request), job_id, run_id)


@app.route(
    "POST",
    "/v1/schedules/preview",
    body=Body("PreviewIn", "preview"),
    answer="PreviewOut",
    tags=("schedules",),
)
def preview_schedule(request: Request, preview: PreviewIn) -> PreviewView:
    """The next fire times of a schedule (UTC and its zone, DST gaps and repeats marked) and, given an
    outage, what its misfire policy would run afterwards. Nothing is created."""
    from punctual_functions.api.previews import preview_schedule as preview_of

    return preview_of(deps(), owner(request), preview)


@app.route(
    "POST",
    "/v1/calendars",
    body=Body("CreateCalendarIn", "calendar"),
    status=201,
    answer="CalendarOut",
    tags=("calendars",),
)
def create_calendar(request: Request, calendar: CreateCalendarIn) -> Answer:
    """Create a business calendar: the days it excludes (weekdays, public holidays, exchanges' closed
    days, dates, yearly dates). 409 if you have a calendar of that name."""
    return Answer(201, calendars.create_calendar(deps(), owner(request), calendar))


@app.route("GET", "/v1/calendars", answer="CalendarPage", tags=("calendars",))
def list_calendars(request: Request) -> CalendarPageView:
    """Your calendars, by name."""
    return calendars.list_calendars(deps(), owner(request))


@app.route("GET", "/v1/calendars/<name>", answer="CalendarOut", tags=("calendars",))
def get_calendar(request: Request, name: str) -> CalendarView:
    return calendars.get_calendar(deps(), owner(request), name)


@app.route(
    "PUT",
    "/v1/calendars/<name>",
    body=Body("CalendarRulesIn", "rules"),
    answer="CalendarOut",
    tags=("calendars",),
)
def replace_calendar(request: Request, name: str, rules: CalendarRulesIn) -> CalendarView:
    """Replace the calendar's rules as a whole (creating it if you have none of that name); a change
    moves its version on and applies from the next dispatch. Exchanges are expanded again."""
    return calendars.replace_calendar(deps(), owner(request), name, rules)


@app.route("DELETE", "/v1/calendars/<name>", answer="CalendarOut", tags=("calendars",))
def delete_calendar(request: Request, name: str) -> CalendarView:
    """Delete the calendar; refused (409, naming them under jobs) while live jobs use it."""
    return calendars.delete_calendar(deps(), owner(request), name)


@app.route(
    "GET",
    "/v1/calendars/<name>/days",
    params=(
        Param("from", arg="from_day", max_length=10, description="YYYY-MM-DD, default today"),
        Param("to", arg="to_day", max_length=10, description="YYYY-MM-DD, included; default a month on"),
    ),
    answer="CalendarDaysOut",
    tags=("calendars",),
)
def calendar_days(request: Request, name: str, from_day: str | None, to_day: str | None) -> CalendarDaysView:
    """The days from ``from`` to ``to`` (at most 400) the calendar excludes, each with its reason."""
    return calendars.calendar_days(deps(), owner(request), name, from_day, to_day)


@app.route(
    "POST", "/v1/limits", body=Body("LimitIn", "limit"), status=201, answer="LimitOut", tags=("limits",)
)
def create_limit(request: Request, limit: LimitIn) -> Answer:
    """Create a target limit: the targets it covers (a URL prefix or an ARN) and how it caps them
    (max_concurrent, per_second with burst), across all workers. Applies within seconds."""
    from punctual_functions.api import limits

    return Answer(201, limits.create_limit(deps(), owner(request), limit))


@app.route("GET", "/v1/limits", answer="LimitPage", tags=("limits",))
def list_limits(request: Request) -> LimitPageView:
    """Your target limits, by name, each with its current use and the runs waiting on it."""
    from punctual_functions.api import limits

    return limits.list_limits(deps(), owner(request))


@app.route("GET", "/v1/limits/<name>", answer="LimitOut", tags=("limits",))
def get_limit(request: Request, name: str) -> LimitView:
    """A target limit with its current use (the runs holding its slots, its tokens) and the runs
    waiting on it."""
    from punctual_functions.api import limits

    return limits.get_limit(deps(), owner(request), name)


@app.route("PUT", "/v1/limits/<name>", body=Body("LimitIn", "limit"), answer="LimitOut", tags=("limits",))
def replace_limit(request: Request, name: str, limit: LimitIn) -> LimitView:
    """Replace a target limit as a whole (with version: only that version, else 409)."""
    from punctual_functions.api import limits

    return limits.replace_limit(deps(), owner(request), name, limit)


@app.route("DELETE", "/v1/limits/<name>", answer="LimitOut", tags=("limits",))
def delete_limit(request: Request, name: str) -> LimitView:
    """Delete a target limit; the runs waiting on it start within seconds, and its slots lapse."""
    from punctual_functions.api import limits

    return limits.delete_limit(deps(), owner(request), name)


@app.route("GET", "/v1/stats", answer="StatsOut", tags=("system",))
def stats(request: Request) -> StatsView:
    """The caller's job and run counts, plus queue depth, in-flight messages, DLQ depth and lag."""
    return reads.stats(deps(), owner(request))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event)

"""``Punctual``: the typed client for users' own Python code (docs/client.md), exported by
``punctual.client``.

It sends its requests through the CLI's ``Client`` (one transport: authentication, errors as
``ApiError`` subclasses) and reads each answer with the API's own answer models
(``punctual_functions/api/responses.py``), so its types are the API's and cannot drift from them. Each answer
keeps the JSON it was read from in ``raw``.

Leniency, decided: the answer models ignore fields they do not declare (pydantic's default
``extra="ignore"``; ``Answer`` sets no other, and a target model's ``extra="forbid"`` never applies
because ``AsGiven`` keeps a stored target as given), so a field a later API adds is left out of the
types and kept in ``raw``; ``tests/unit/test_client_typed.py`` holds every level of a job and a run to
that. A *value* the models do not know (a status, a reason or a target type added later) cannot be
typed without lying about it: that answer raises ``UnexpectedAnswer``, which carries the JSON too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, PrivateAttr, ValidationError, ValidatorFunctionWrapHandler, model_validator

from punctual.client import DEFAULT_ENDPOINT, Client, Config, ConfigError, PunctualError, is_local
from punctual_functions.api.responses import (
    BulkItemOut,
    BulkOut,
    ChangeOut,
    CreatedJobsOut,
    JobOut,
    RunOut,
    VersionsCompared,
)
from punctual_functions.core.model import JobStatus, Reason, RunKind, RunStatus

# The answers' enums too (the domain's, punctual_functions.core.model), so that a user imports from one place.
__all__ = [
    "BulkResult",
    "Change",
    "Compared",
    "CreatedJobs",
    "Health",
    "Job",
    "JobStatus",
    "Page",
    "Punctual",
    "Reason",
    "Run",
    "RunKind",
    "RunStatus",
    "UnexpectedAnswer",
]

# The role session name of the typed client's AssumeRole (the CLI's is punctual-cli): what CloudTrail
# shows, and with the deployment's owner_mode=session part of the owner.
ROLE_SESSION_NAME = "punctual-client"
# An API Gateway URL names its region: abc123.execute-api.eu-west-1.amazonaws.com.
_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?(:\d+)?(/|$)")


class UnexpectedAnswer(PunctualError):
    """The API answered successfully, but with something the answer models of this version of the
    client cannot read (a status or target type added to the API later): upgrade ``punctual``. The
    answer is in ``raw``, pydantic's account in ``errors``."""

    def __init__(self, model: str, raw: Any, errors: list[dict[str, Any]]) -> None:
        self.raw = raw
        self.errors = errors
        first = errors[0] if errors else {}
        where = ".".join(str(part) for part in first.get("loc", ())) or "the answer"
        super().__init__(
            f"cannot read the API's answer as {model}: {where}: {first.get('msg', 'not as expected')} "
            "(a value newer than this client? pip install -U punctual-aws); the answer is in .raw"
        )


class Raw(BaseModel):
    """An answer that keeps the JSON object it was read from (``raw``): the fields the types do not
    name (added to the API after this client) are there."""

    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_raw(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, Mapping):
            model._raw = dict(data)
        return model

    @property
    def raw(self) -> dict[str, Any]:
        """The answer's JSON object as the API sent it."""
        return self._raw


class Job(JobOut, Raw):
    """A job: the API's ``JobOut`` (docs/api.md, "The job object"), with ``raw``."""


class Run(RunOut, Raw):
    """A run: the API's ``RunOut`` (docs/api.md, "The run object"), with ``raw``."""


class Change(ChangeOut, Raw):
    """One change of a job in its audit trail: the API's ``ChangeOut`` (docs/api.md, "The audit
    trail"), with ``raw``."""


class Compared(VersionsCompared, Raw):
    """``GET /v1/jobs/{job_id}/compare``'s answer: each field that differs between two revisions."""


class CreatedJobs(CreatedJobsOut, Raw):
    """``POST /v1/jobs/batch``'s answer: per job of the request, in order, its ``index`` and ``status``
    (201, or what ``POST /v1/jobs`` would have answered) and the ``job`` or the ``error``."""


class BulkResult(BulkOut, Raw):
    """``POST /v1/jobs/bulk``'s answer: the jobs acted on (``items``, each its ``status`` and ``job`` or
    ``error``) and, when ``more``, the ``next_cursor`` to go on from."""


class Health(Raw):
    """``GET /v1/health``'s answer (the API declares no model for it: ``{"status": "ok"}``)."""

    status: str


ItemT = TypeVar("ItemT", Job, Run, Change)


class Page(Raw, Generic[ItemT]):
    """One page of a listing, newest first: the fields of the API's ``JobPage`` and ``RunPage``
    (``items``, ``next_cursor``: pass it back as ``cursor`` for the next page; None after the last),
    each item a ``Job`` or ``Run`` with its own ``raw``."""

    items: list[ItemT]
    next_cursor: str | None = None


ModelT = TypeVar("ModelT", bound=BaseModel)


def _read(model: type[ModelT], answer: Any) -> ModelT:
    try:
        return model.model_validate(answer)
    except ValidationError as error:
        errors = [dict(detail) for detail in error.errors(include_url=False)]
        raise UnexpectedAnswer(model.__name__, answer, errors) from error


def _jsonable(value: Any) -> Any:
    """``value`` with every ``datetime`` in it as ISO 8601 (a naive one is read by the API in the
    schedule's zone), so a body may carry them as they are."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None: those a request sends (a body leaves the others to their defaults)."""
    return {key: value for key, value in fields.items() if value is not None}


def region_of(endpoint: str) -> str | None:
    """The region an API Gateway URL names (``...execute-api.eu-west-1.amazonaws.com``); None for any
    other (a custom domain)."""
    found = _EXECUTE_API_HOST.search(endpoint)
    return found.group(1) if found else None


class Punctual:
    """The Punctual HTTP API, typed: each method is one request and answers the API's own model
    (``Job``, ``Run``, ``Page[...]``, ...) or raises an ``ApiError`` subclass (``NotFound``,
    ``Conflict``, ``InvalidRequest``, ``Unauthorized``, ``Throttled``, ``ServerError``), or
    ``ConnectionFailed``.

    ``Punctual(endpoint, region=...)`` signs with SigV4 from the standard AWS credential chain;
    ``role_arn=`` signs as that role instead (assumed with the chain's credentials, refreshed before
    they expire); ``api_key=`` sends the key (a deployment with ``api_auth=api_key``); ``token=`` the
    bearer token of a local stack (a local endpoint without any of them: ``local-dev-token``). The
    region defaults to the one an ``execute-api`` URL names, else the AWS profile's.

    The routes without a typed method here (calendars, limits, backfill, stats, preview) are on
    ``client``, the untyped ``Client`` underneath, answering JSON.
    """

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        region: str | None = None,
        role_arn: str | None = None,
        api_key: str | None = None,
        token: str | None = None,
        role_session_name: str = ROLE_SESSION_NAME,
        timeout: float = 30.0,
    ) -> None:
        if token and api_key:
            raise ConfigError("give a token (bearer) or an API key, not both")
        if role_arn and (token or api_key):
            raise ConfigError("role_arn is for SigV4 signing; with a token or an API key nothing is signed")
        endpoint = endpoint.rstrip("/")
        if token:
            auth = "bearer"
        elif api_key:
            auth = "api_key"
        elif is_local(endpoint) and not role_arn:
            auth, token = "bearer", "local-dev-token"
        else:
            auth = "sigv4"
        if role_arn:
            from punctual.client import check_role_arn

            check_role_arn(role_arn)
        config = Config(
            endpoint=endpoint,
            token=token,
            auth=auth,
            region=region or region_of(endpoint),
            api_key=api_key,
            role_arn=role_arn,
            role_session_name=role_session_name,
        )
        self.client = Client(config, timeout)

    @classmethod
    def from_config(cls, config: Config | None = None, *, timeout: float = 30.0) -> Punctual:
        """A client configured as the ``punctual`` CLI is (``Config.load``: ``PUNCTUAL_ENDPOINT``,
        ``PUNCTUAL_TOKEN``, ``PUNCTUAL_API_KEY``, ``PUNCTUAL_ROLE_ARN``, the config file), or by
        ``config``."""
        typed = cls.__new__(cls)
        typed.client = Client(config or Config.load(None, None), timeout)
        return typed

    @property
    def config(self) -> Config:
        return self.client.config

    def close(self) -> None:
        """Close the pooled connections (a later request opens new ones)."""
        self.client.http.clear()

    def __enter__(self) -> Punctual:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------- jobs

    def health(self) -> Health:
        """``GET /v1/health``: the API answers (no credentials needed)."""
        return _read(Health, self.client.health())

    def create_job(
        self,
        schedule: Mapping[str, Any],
        target: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> Job:
        """``POST /v1/jobs``: a job of ``schedule`` (one of ``at``, ``cron``, ``rate``, with its options)
        calling ``target``; any other field of the body as a keyword (``name``, ``payload``, ``tags``,
        ``retry``, ``timeout_seconds``, ``signing_secret``, ``alerts``, ...; docs/api.md). With
        ``idempotency_key``, sending the same body again answers the job created the first time."""
        body = _jsonable({"schedule": schedule, "target": target, **fields})
        return _read(Job, self.client.create_job(body, idempotency_key))

    def create_jobs(
        self, jobs: Iterable[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> CreatedJobs:
        """``POST /v1/jobs/batch``: up to 100 jobs (each a body of ``POST /v1/jobs``) in one request,
        each created or refused on its own (``items``, in order). With ``idempotency_key`` (up to 120
        characters), the same batch again answers every job as the first time."""
        bodies = [_jsonable(job) for job in jobs]
        return _read(CreatedJobs, self.client.create_jobs(bodies, idempotency_key))

    def get_job(self, job_id: str) -> Job:
        """``GET /v1/jobs/{job_id}``; ``NotFound`` for no such job (or another owner's)."""
        return _read(Job, self.client.get_job(job_id))

    def list_jobs(
        self,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: str | None = None,
        name: str | None = None,
        name_prefix: str | None = None,
        tag: str | None = None,
    ) -> Page[Job]:
        """``GET /v1/jobs``: one page of your jobs, newest first (``limit`` 1 to 100), after ``cursor``
        (an earlier page's ``next_cursor``, with the same filters); ``tag`` is ``key=value``."""
        answer = self.client.list_jobs(
            limit=limit, cursor=cursor, status=status, name=name, name_prefix=name_prefix, tag=tag
        )
        return _read(Page[Job], answer)

    def iter_jobs(
        self,
        *,
        status: str | None = None,
        name: str | None = None,
        name_prefix: str | None = None,
        tag: str | None = None,
        page_size: int = 100,
    ) -> Iterator[Job]:
        """Every job of yours (with the filters), newest first, reading page after page as the
        iteration goes on."""
        cursor: str | None = None
        while True:
            page = self.list_jobs(
                limit=page_size, cursor=cursor, status=status, name=name, name_prefix=name_prefix, tag=tag
            )
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def patch_job(self, job_id: str, **changes: Any) -> Job:
        """``PATCH /v1/jobs/{job_id}``: only the fields given change (``schedule``, ``target`` and
        ``tags`` as a whole; ``name=None`` or ``payload=None`` clears them). ``Conflict`` unless the
        job is ACTIVE or PAUSED."""
        return _read(Job, self.client.patch_job(job_id, _jsonable(changes)))

    def pause_job(self, job_id: str, *, note: str | None = None, until: str | datetime | None = None) -> Job:
        """``POST /v1/jobs/{job_id}/pause``: no occurrence fires until it is resumed, or until ``until``
        (within a year) by itself; ``note`` says why."""
        body = _jsonable(_given(note=note, until=until))
        return _read(Job, self.client.job_action(job_id, "pause", body or None))

    def resume_job(self, job_id: str, *, note: str | None = None) -> Job:
        """``POST /v1/jobs/{job_id}/resume``: on with its first occurrence from now (what fell due while
        paused does not run); ``note`` says why, in the audit trail."""
        return _read(Job, self.client.job_action(job_id, "resume", _given(note=note) or None))

    def cancel_job(self, job_id: str) -> Job:
        """``DELETE /v1/jobs/{job_id}``: no further runs; the job and its history stay readable."""
        return _read(Job, self.client.cancel_job(job_id))

    def run_now(self, job_id: str) -> Run:
        """``POST /v1/jobs/{job_id}/run``: one run now, outside the schedule (also while paused); the
        run as it is at that moment (QUEUED, or RUNNING already)."""
        return _read(Run, self.client.job_action(job_id, "run"))

    def bulk(
        self,
        action: Literal["pause", "resume", "cancel"],
        tags: Mapping[str, str],
        *,
        note: str | None = None,
        until: str | datetime | None = None,
        cursor: str | None = None,
    ) -> BulkResult:
        """``POST /v1/jobs/bulk``: ``action`` on every job of yours carrying all of ``tags``, up to 500
        in one request, each answered on its own; when the answer says ``more``, call again with its
        ``next_cursor`` as ``cursor`` (``bulk_all`` does)."""
        body: dict[str, Any] = {"action": action, "tags": dict(tags)}
        body.update(_given(note=note, until=until, cursor=cursor))
        return _read(BulkResult, self.client.bulk(_jsonable(body)))

    def bulk_all(
        self,
        action: Literal["pause", "resume", "cancel"],
        tags: Mapping[str, str],
        *,
        note: str | None = None,
        until: str | datetime | None = None,
    ) -> list[BulkItemOut]:
        """``bulk`` until no job is left, request after request: every job acted on, each its
        ``status`` and ``job`` or ``error``. All of them before it returns: acting is not left to an
        iteration the caller might not finish."""
        items: list[BulkItemOut] = []
        cursor: str | None = None
        while True:
            answer = self.bulk(action, tags, note=note, until=until, cursor=cursor)
            items += answer.items
            if not answer.next_cursor:
                return items
            cursor = answer.next_cursor

    # ------------------------------------------------------------------------------- audit trail

    def list_changes(self, job_id: str, *, limit: int = 20, cursor: str | None = None) -> Page[Change]:
        """``GET /v1/jobs/{job_id}/changes``: one page of its audit trail, newest first."""
        return _read(Page[Change], self.client.list_changes(job_id, limit=limit, cursor=cursor))

    def get_version(self, job_id: str, revision: int) -> Change:
        """``GET /v1/jobs/{job_id}/versions/{revision}``: the change that made ``revision``, with the
        job's ``definition`` then."""
        return _read(Change, self.client.get_version(job_id, revision))

    def compare_versions(self, job_id: str, first: int, second: int) -> Compared:
        """``GET /v1/jobs/{job_id}/compare``: what differs between two revisions."""
        return _read(Compared, self.client.compare_versions(job_id, first, second))

    def restore_job(self, job_id: str, revision: int, *, note: str | None = None) -> Job:
        """``POST /v1/jobs/{job_id}/restore``: ``revision``'s definition made the job's again, as a new
        revision (checked as a PATCH: a calendar or a right gone since refuses it)."""
        return _read(Job, self.client.restore_job(job_id, revision, note))

    # ---------------------------------------------------------------------------------------- runs

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: str | None = None,
        reason: str | None = None,
    ) -> Page[Run]:
        """``GET /v1/jobs/{job_id}/runs``: one page of its history, newest first, with a row for each
        occurrence that did not run (``reason`` filters those)."""
        answer = self.client.list_runs(job_id, limit=limit, cursor=cursor, status=status, reason=reason)
        return _read(Page[Run], answer)

    def iter_runs(
        self, job_id: str, *, status: str | None = None, reason: str | None = None, page_size: int = 100
    ) -> Iterator[Run]:
        """The job's whole history (with the filters), newest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_runs(job_id, limit=page_size, cursor=cursor, status=status, reason=reason)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_run(self, job_id: str, run_id: str) -> Run:
        """``GET /v1/jobs/{job_id}/runs/{run_id}``: one run with its ``attempts``."""
        return _read(Run, self.client.get_run(job_id, run_id))

    def cancel_run(self, job_id: str, run_id: str) -> Run:
        """``POST /v1/jobs/{job_id}/runs/{run_id}/cancel``: a run that has not finished; ``Conflict``
        for one that has."""
        return _read(Run, self.client.cancel_run(job_id, run_id))

"""Request and response bodies of the HTTP API; the OpenAPI document is generated from them.

Pydantic checks structure (types, ranges, unknown fields); the domain checks meaning (cron syntax,
time zones, target rules) and reports the field it refused. Both end as a 4xx naming the field. The
target is one model per type (``Target``, chosen by ``type``) for the document's sake; its fields are
left to the domain's ``validate_target`` (see :class:`TargetIn`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from functions.core.resources import MAX_JOB_TIMEOUT_SECONDS
from functions.core.ssrf_guard import MAX_URL_LENGTH
from functions.core.targets.validation import (
    BUS_ARN,
    BUS_NAME,
    DEFAULT_EVENT_BUS,
    DEFAULT_EVENT_DETAIL_TYPE,
    DEFAULT_EVENT_SOURCE,
    DEFAULT_HTTP_METHOD,
    FUNCTION_NAME,
    MAX_HEADER_NAME,
    MAX_HEADER_VALUE,
    MAX_HEADERS,
    MAX_LENGTHS,
    MAX_TIMEOUT_SECONDS,
    TARGET_TYPES,
    TOPIC_ARN,
)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
JobStatusName = Literal["ACTIVE", "PAUSED", "COMPLETED", "FAILED", "CANCELLED"]
RunStatusName = Literal[
    "SCHEDULED", "QUEUED", "RUNNING", "SUCCEEDED", "RETRYING", "FAILED", "CANCELLED", "SKIPPED"
]


def _whole_number(value: Any) -> Any:
    """JSON has one number type: ``30.0`` is the integer 30 (JSON Schema's ``integer`` says so, and a
    JavaScript client cannot tell them apart), while ``30.5``, ``true`` and ``"30"`` are not integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def whole_numbers(*fields: str) -> Any:
    """For strict integer fields (strict, so that booleans and strings are refused): whole floats
    such as ``30.0`` are accepted as integers, as the OpenAPI document's ``integer`` promises."""
    return field_validator(*fields, mode="before")(_whole_number)


class Answer(BaseModel):
    """An answer's model: it documents what a route answers (the OpenAPI document) and the tests check
    every answer against it; the api serves the service's JSON as it is, so these are built only when
    the document is asked for (``defer_build``), not on a cold start."""

    model_config = ConfigDict(defer_build=True)


class ScheduleIn(BaseModel):
    """Exactly one of ``at``, ``cron`` or ``rate``, with its options."""

    model_config = ConfigDict(extra="forbid")

    at: str | None = Field(default=None, max_length=64, examples=["2026-11-22T13:00:05+01:00"])
    cron: str | None = Field(
        default=None, max_length=256, examples=["0 13 * * 1-5", "*/10 * * * * *", "cron(0 13 ? * MON-FRI *)"]
    )
    rate: str | None = Field(default=None, max_length=64, examples=["5 minutes", "rate(1 hour)"])
    timezone: str | None = Field(default=None, max_length=64, description="IANA time zone, default UTC")
    start_at: str | None = Field(default=None, max_length=64)
    end_at: str | None = Field(default=None, max_length=64)
    misfire: Literal["run_once", "skip", "run_all"] = "run_once"
    catchup_seconds: int | None = Field(default=None, ge=0, le=31 * 24 * 3600, strict=True)
    overlap: Literal["allow", "skip", "buffer_one", "buffer_all", "cancel_other"] = Field(
        default="allow",
        description=(
            "an occurrence due while an earlier run is under way: allow (runs overlap), skip (it does "
            "not run), buffer_one (it waits for the one under way; if one already waits, it does not "
            "run), buffer_all (each waits its turn), cancel_other (the one under way is cancelled)"
        ),
    )

    _whole_numbers = whole_numbers("catchup_seconds")


class RetryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=10, strict=True)
    backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    max_backoff_seconds: float = Field(default=600.0, ge=0, le=12 * 3600)

    _whole_numbers = whole_numbers("max_attempts")


# ------------------------------------------------------------------------------------------ targets


class TargetIn(BaseModel):
    """A target as the caller sent it, described for the OpenAPI document by one model per type.

    The ``type`` picks the model (an unknown or missing type is refused here); the fields are checked by
    the domain's ``validate_target``, which names the field it refuses (``target.url``) in the words the
    API has always used, after the schedule. So these models do not validate their fields: they keep the
    object as given (:meth:`spec`, also what they serialize to), and their types and constraints only
    document what ``validate_target`` accepts. A stored target read back (``JobOut``) is the same dict.
    """

    model_config = ConfigDict(extra="forbid", regex_engine="python-re")

    _given: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_as_given(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(data, Mapping):
            return handler(data)
        target = cls.model_construct(**{key: value for key, value in data.items() if key in cls.model_fields})
        target._given = dict(data)
        return target

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        # No return annotation: the serialization schema stays the model's, as documented.
        return self._given

    def spec(self) -> dict[str, Any]:
        """The target object exactly as given, for ``validate_target``."""
        return self._given


def _anchored(*patterns: str) -> str:
    """A JSON Schema pattern matching what ``re.fullmatch`` with any of ``patterns`` accepts."""
    return "^(?:" + "|".join(patterns) + ")$"


HeaderName = Annotated[str, StringConstraints(max_length=MAX_HEADER_NAME)]
HeaderValue = Annotated[str, StringConstraints(pattern=r"^[^\r\n\x00]*$", max_length=MAX_HEADER_VALUE)]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


class HttpTargetIn(TargetIn):
    """A webhook: one HTTP request per attempt. A 2xx answer is success; 408, 429, 5xx, connection
    errors and timeouts are retried. Loopback, private, link-local and metadata addresses are refused
    unless the deployment allows them."""

    type: Literal["http"]
    url: str = Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="http or https, without user:password@; its path, query and fragment may use "
        "{{scheduled_for}}, {{run_id}}, {{attempt}} and {{job_id}}, filled in (percent-encoded) per attempt",
        examples=["https://example.com/hook", "https://example.com/runs/{{run_id}}?attempt={{attempt}}"],
    )
    method: HttpMethod | None = Field(
        default=DEFAULT_HTTP_METHOD, description="any case; a GET sends no body", examples=["POST"]
    )
    headers: dict[HeaderName, HeaderValue] | None = Field(
        default=None,
        max_length=MAX_HEADERS,
        description="sent with every request (none by default); values may use the four template "
        "names, as the URL; names are HTTP tokens; Host, "
        "Content-Length, Transfer-Encoding, Connection and other hop-by-hop headers, Idempotency-Key, "
        "traceparent and Punctual-* are refused",
        examples=[{"X-Team": "data"}],
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="the call ends at this or the job's timeout_seconds, whichever is smaller "
        "(none by default: the job's)",
        examples=[10],
    )


class LambdaTargetIn(TargetIn):
    """A synchronous Lambda invoke; a function error or throttling is retried."""

    type: Literal["lambda"]
    function: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["function"],
        pattern=_anchored(FUNCTION_NAME.pattern),
        description="a function name, a name with :alias, or an ARN",
        examples=["my-function"],
    )


class SqsTargetIn(TargetIn):
    """SendMessage: the payload is the body, the delivery headers are message attributes; a FIFO queue
    groups by job and deduplicates by run."""

    type: Literal["sqs"]
    queue_url: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["queue_url"],
        description="an SQS queue URL: http(s)://<host>/<12-digit account>/<queue name>",
        examples=["https://sqs.eu-central-1.amazonaws.com/123456789012/reports"],
    )


class SnsTargetIn(TargetIn):
    """Publish: the payload is the message, the delivery headers are message attributes."""

    type: Literal["sns"]
    topic_arn: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["topic_arn"],
        pattern=_anchored(TOPIC_ARN.pattern),
        description="an SNS topic ARN",
        examples=["arn:aws:sns:eu-central-1:123456789012:reports"],
    )


class EventBridgeTargetIn(TargetIn):
    """PutEvents: one event whose detail holds the payload and the delivery's identifiers."""

    type: Literal["eventbridge"]
    bus: str | None = Field(
        default=DEFAULT_EVENT_BUS,
        min_length=1,
        max_length=MAX_LENGTHS["bus"],
        pattern=_anchored(BUS_NAME.pattern, BUS_ARN.pattern),
        description="an event bus name or ARN",
    )
    source: str | None = Field(
        default=DEFAULT_EVENT_SOURCE,
        min_length=1,
        max_length=MAX_LENGTHS["source"],
        description="not starting with aws. (reserved for AWS services)",
    )
    detail_type: str | None = Field(
        default=DEFAULT_EVENT_DETAIL_TYPE, min_length=1, max_length=MAX_LENGTHS["detail_type"]
    )


def _target_object(value: Any) -> Any:
    """Refuses, before the discriminator, what the domain refused before the target had models: a
    target that is not an object, or without a known type (the error handler names ``target.type``)."""
    if not isinstance(value, Mapping):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    if not isinstance(value.get("type"), str) or value["type"] not in TARGET_TYPES:
        raise PydanticCustomError(
            "target_type", "must be one of {types}", {"types": ", ".join(TARGET_TYPES), "field": "type"}
        )
    return value


Target = Annotated[
    HttpTargetIn | LambdaTargetIn | SqsTargetIn | SnsTargetIn | EventBridgeTargetIn,
    Field(discriminator="type"),
    BeforeValidator(_target_object),
]


# Like EventBridge Scheduler's flexible time window, at most a day (1,440 minutes).
MAX_JITTER_SECONDS = 86_400
JITTER_TEXT = (
    "each scheduled occurrence fires after a random delay of 0 to this many seconds, fixed per occurrence "
    "(a retry keeps it); less than the schedule's shortest interval; run now is not delayed"
)


PAUSE_ON_FAILURES_TEXT = (
    "pause the job after this many consecutive FAILED runs (paused by 'punctual', the reason in its note); "
    "null: never"
)


class PauseIn(BaseModel):
    """Why and how long; both optional (an empty or missing body pauses until resumed)."""

    model_config = ConfigDict(extra="forbid")

    note: str | None = Field(default=None, max_length=500, description="why, shown with the pause")
    until: str | None = Field(
        default=None,
        max_length=64,
        description="ISO 8601 (naive: in the schedule's zone), within a year: the job resumes by itself "
        "then; its first occurrence at or after it fires at its second",
    )


class BulkIn(BaseModel):
    """Act on every job of the caller that carries all of ``tags``."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["pause", "resume", "cancel"]
    tags: dict[str, str] = Field(max_length=50, description="the jobs carrying all of these (at least one)")
    note: str | None = Field(default=None, max_length=500, description="pause only: why")
    until: str | None = Field(default=None, max_length=64, description="pause only: resume by itself then")
    cursor: str | None = Field(
        default=None, max_length=2048, description="an earlier answer's next_cursor: go on from there"
    )


class BackfillIn(BaseModel):
    """Run the job's occurrences between ``from`` and ``to`` (both included, both past) again."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", max_length=64, description="ISO 8601 (naive: in the schedule's zone)")
    to: str = Field(max_length=64, description="ISO 8601, not before from, not in the future")
    overlap: Literal["buffer_all", "allow", "skip", "buffer_one", "cancel_other"] = Field(
        default="buffer_all",
        description="buffer_all: one after another, oldest first (the default); allow: all at once; the "
        "others are refused for a backfill",
    )


class BackfillOut(Answer):
    model_config = ConfigDict(populate_by_name=True)

    job_id: str
    from_: str = Field(alias="from")
    to: str
    overlap: str
    count: int = Field(description="occurrences backfilled (at most 1,000 a request)")
    occurrences: list[str] = Field(description="their scheduled times, oldest first: the runs' scheduled_for")


class PauseOut(Answer):
    at: str
    by: str | None
    note: str | None
    until: str | None


MAX_RUNS_TEXT = (
    "a recurring job ends (COMPLETED) once this many of its occurrences were set off, whatever became "
    "of each; run now and backfills do not count (at most 1,000)"
)
ON_COMPLETE_TEXT = (
    "what becomes of the job once it ends (a one-off's run done, end_at passed, max_runs reached): "
    "keep it, or delete it, with its history, delete_after_days after"
)
DEAD_LETTER_TEXT = (
    "an SQS queue of the deployment's allow-list that receives each run that ended FAILED: the job, "
    'the run, its last error and the payload (docs/api.md, "Dead letters")'
)
DELETE_AFTER_TEXT = "on_complete delete: how long the ended job and its history stay readable, in days"


class AlertsIn(BaseModel):
    """A job's alerts (docs/api.md, "Alerts"): where they go and on what, at least one kind."""

    model_config = ConfigDict(extra="forbid")

    target: Target = Field(
        description="an SNS topic of the deployment's allow-list, or a webhook (signed with the job's "
        "signing_secret, if it has one)"
    )
    failed: bool = Field(default=False, description="a run ended FAILED")
    missed: bool = Field(
        default=False, description="an occurrence did not run: skipped by the misfire or the overlap policy"
    )
    late_seconds: int | None = Field(
        default=None, ge=1, le=86_400, strict=True, description="a run started more than this late"
    )
    running_seconds: int | None = Field(
        default=None, ge=1, le=86_400, strict=True, description="an attempt still running after this long"
    )

    _whole_numbers = whole_numbers("late_seconds", "running_seconds")


class CreateJobIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    schedule: ScheduleIn
    target: Target = Field(description="where each run is delivered, by type (see docs/api.md)")
    payload: Any = Field(
        default=None,
        description="any JSON: the body, message or event detail; its strings may use {{scheduled_for}}, "
        "{{run_id}}, {{attempt}} and {{job_id}}, filled in per attempt (no other names, no expressions)",
    )
    retry: RetryIn = Field(default_factory=RetryIn)
    timeout_seconds: int = Field(default=30, ge=1, le=MAX_JOB_TIMEOUT_SECONDS, strict=True)
    tags: dict[str, str] = Field(default_factory=dict, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)
    jitter_seconds: int = Field(default=0, ge=0, le=MAX_JITTER_SECONDS, strict=True, description=JITTER_TEXT)
    pause_on_failures: int | None = Field(
        default=None, ge=1, le=100, strict=True, description=PAUSE_ON_FAILURES_TEXT
    )
    max_runs: int | None = Field(default=None, ge=1, le=1000, strict=True, description=MAX_RUNS_TEXT)
    alerts: AlertsIn | None = None
    dead_letter: SqsTargetIn | None = Field(default=None, description=DEAD_LETTER_TEXT)
    on_complete: Literal["keep", "delete"] = Field(default="keep", description=ON_COMPLETE_TEXT)
    delete_after_days: int = Field(default=7, ge=1, le=365, strict=True, description=DELETE_AFTER_TEXT)

    _whole_numbers = whole_numbers(
        "timeout_seconds", "jitter_seconds", "pause_on_failures", "max_runs", "delete_after_days"
    )


class PatchJobIn(BaseModel):
    """Fields to change; those left out keep their value. ``schedule`` is replaced as a whole."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    schedule: ScheduleIn | None = None
    target: Target | None = None
    payload: Any = None
    retry: RetryIn | None = None
    timeout_seconds: int | None = Field(default=None, ge=1, le=MAX_JOB_TIMEOUT_SECONDS, strict=True)
    tags: dict[str, str] | None = Field(default=None, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)
    jitter_seconds: int | None = Field(
        default=None, ge=0, le=MAX_JITTER_SECONDS, strict=True, description=JITTER_TEXT
    )
    pause_on_failures: int | None = Field(
        default=None, ge=1, le=100, strict=True, description=PAUSE_ON_FAILURES_TEXT
    )
    max_runs: int | None = Field(default=None, ge=1, le=1000, strict=True, description=MAX_RUNS_TEXT)
    alerts: AlertsIn | None = Field(default=None, description="replaced as a whole; null removes them")
    dead_letter: SqsTargetIn | None = Field(default=None, description=DEAD_LETTER_TEXT + "; null removes it")
    on_complete: Literal["keep", "delete"] | None = Field(default=None, description=ON_COMPLETE_TEXT)
    delete_after_days: int | None = Field(
        default=None, ge=1, le=365, strict=True, description=DELETE_AFTER_TEXT
    )

    _whole_numbers = whole_numbers(
        "timeout_seconds", "jitter_seconds", "pause_on_failures", "max_runs", "delete_after_days"
    )


class OutageIn(BaseModel):
    """A window in which nothing is dispatched: what would the misfire policy run afterwards?"""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", max_length=64, description="ISO 8601; naive: in the schedule's zone")
    to: str = Field(max_length=64, description="ISO 8601, after `from`; naive: in the schedule's zone")


class PreviewIn(BaseModel):
    """A schedule as ``POST /v1/jobs`` takes it; nothing is created."""

    model_config = ConfigDict(extra="forbid")

    schedule: ScheduleIn
    count: int = Field(default=10, ge=1, le=100, strict=True, description="how many fire times to list")
    after: str | None = Field(
        default=None, max_length=64, description="list the fire times after this instant (default: now)"
    )
    outage: OutageIn | None = None

    _whole_numbers = whole_numbers("count")


# ---------------------------------------------------------------------------------------- responses


RunReasonName = Literal[
    "paused", "superseded", "overlap", "misfire_skipped", "misfire_collapsed", "job_cancelled", "cancelled"
]


class RunSummaryOut(Answer):
    run_id: str
    status: RunStatusName
    scheduled_for: str | None = None
    finished_at: str | None = None
    lateness_ms: int | None = None
    attempt: int = 0
    error: str | None = None


class AttemptOut(Answer):
    attempt: int
    started_at: str | None
    finished_at: str | None
    outcome: str | None
    duration_ms: int | None
    status_code: int | None
    error: str | None
    response: str


class RunOut(Answer):
    run_id: str
    job_id: str
    status: RunStatusName
    kind: Literal["scheduled", "manual", "pause", "backfill"]
    scheduled_for: str
    queued_at: str | None
    started_at: str | None
    finished_at: str | None
    lateness_ms: int | None = Field(
        description="first attempt's start minus its due time (scheduled_for + jitter_ms), in milliseconds"
    )
    jitter_ms: int = Field(
        default=0, description="the job's jitter for this occurrence: due this long after scheduled_for"
    )
    reason: RunReasonName | None = Field(default=None, description="why it did not run (SKIPPED, CANCELLED)")
    covers: int = Field(
        default=1, description="the occurrences this row stands for (a pause span, a misfire stretch)"
    )
    covers_until: str | None = Field(default=None, description="the last of them")
    note: str | None = Field(default=None, description="a pause span: the pause's note")
    by: str | None = Field(default=None, description="a pause span: who paused")
    overlap_with: str | None = Field(
        default=None,
        description=(
            "the overlap policy's other run: the one this run waits behind or waited behind (buffer), "
            "was skipped for (skip, buffer_one), or was cancelled for (cancel_other)"
        ),
    )
    attempt: int = Field(description="attempts started")
    duration_ms: int | None = Field(
        default=None, description="how long the target took on the last attempt that finished"
    )
    executions: int = Field(description="attempt starts including re-executions after a worker crash")
    next_attempt_at: str | None
    error: str | None
    attempts: list[AttemptOut] | None = None


class JobOut(Answer):
    job_id: str
    name: str | None
    status: JobStatusName
    schedule: dict[str, Any]
    target: Target = Field(description="the target with its defaults filled in")
    payload: Any
    retry: dict[str, Any]
    timeout_seconds: int
    tags: dict[str, str]
    has_signing_secret: bool
    next_run_at: str | None
    upcoming: list[str] = Field(description="the next five fire times")
    last_run: RunSummaryOut | None
    run_counts: dict[str, int]
    jitter_seconds: int = 0
    pause_on_failures: int | None = None
    max_runs: int | None = None
    alerts: dict[str, Any] | None = Field(
        default=None, description="target (with its defaults), failed, missed, late_seconds, running_seconds"
    )
    remaining_runs: int | None = Field(
        default=None, description="with max_runs: the runs left, max_runs less those set off so far"
    )
    dead_letter: dict[str, Any] | None = Field(
        default=None, description="the SQS queue that receives the job's failed runs (type, queue_url)"
    )
    on_complete: Literal["keep", "delete"] = "keep"
    delete_after_days: int | None = Field(default=None, description="with on_complete delete")
    deletes_at: str | None = Field(
        default=None, description="an ended job with on_complete delete: when it and its history go"
    )
    pause: PauseOut | None = Field(
        default=None, description="while PAUSED: since when, by whom, why, until when"
    )
    version: int
    created_at: str
    updated_at: str


class JobPage(Answer):
    items: list[JobOut]
    next_cursor: str | None


class RunPage(Answer):
    items: list[RunOut]
    next_cursor: str | None


class QueueStats(Answer):
    queued: int
    in_flight: int
    delayed: int
    dlq: int


class StatsOut(Answer):
    jobs: dict[str, int] = Field(description="the caller's jobs by status")
    runs: dict[str, int] = Field(description="the caller's finished runs by outcome")
    queue: QueueStats
    dispatcher_lag_seconds: float | None = Field(description="now minus the oldest unswept bucket")


class ErrorOut(Answer):
    error: str
    reason: str
    field: str | None = None


class CreateJobsIn(BaseModel):
    """Up to 100 jobs in one request, each validated and answered on its own."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=100,
        description="each as the body of POST /v1/jobs",
        json_schema_extra={"items": {"$ref": "#/components/schemas/CreateJobIn"}},
    )


class CreatedJobOut(Answer):
    """One job of a batch: its place in the request, and the job created or why it was not."""

    index: int
    status: int = Field(description="201, or the HTTP status POST /v1/jobs would have answered")
    job: JobOut | None = None
    error: ErrorOut | None = None


class CreatedJobsOut(Answer):
    items: list[CreatedJobOut]


class DstOut(Answer):
    kind: Literal["gap", "repeat"] = Field(
        description="gap: the local time does not exist that day, it fires at the first instant after; "
        "repeat: the local time happens twice, it fires once, on the first pass"
    )
    local: str = Field(description="the local wall time the schedule names, in its zone (no offset)")


class FireTimeOut(Answer):
    at: str = Field(description="UTC")
    local: str = Field(description="in the schedule's zone, with its offset")
    dst: DstOut | None = None


class MissedOut(Answer):
    scheduled_for: str
    local: str
    fate: Literal["runs", "skipped", "collapsed"] = Field(
        description="runs: dispatched by the first sweep after the outage; skipped: dropped by the policy; "
        "collapsed: merged into the occurrence run_once runs"
    )
    lateness_ms: int | None = Field(
        default=None, description="for a run: the end of the outage minus its time"
    )


class OutageOut(Answer):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    misfire: Literal["run_once", "skip", "run_all"]
    catchup_seconds: int | None
    counts: dict[str, int] = Field(description="occurrences due in the window, by fate")
    occurrences: list[MissedOut] = Field(description="the first 100 occurrences due in the window")
    listed_all: bool
    resumes_with: str | None = Field(description="the first occurrence after the outage: on time again")


class PreviewOut(Answer):
    schedule: dict[str, Any]
    timezone: str
    fire_times: list[FireTimeOut]
    outage: OutageOut | None
    notes: list[str]


class BulkItemOut(Answer):
    job_id: str
    status: int = Field(description="what the single-job route would have answered: 200, or 4xx with error")
    job: JobOut | None
    error: ErrorOut | None


class BulkOut(Answer):
    action: Literal["pause", "resume", "cancel"]
    matched: int = Field(
        description="the caller's jobs in this page that carry the tags and can take the action"
    )
    items: list[BulkItemOut] = Field(description="one per job acted on (at most 500), newest first")
    more: bool = Field(description="others may match: call again with next_cursor")
    next_cursor: str | None = Field(description="pass it back as cursor to go on; null when done")

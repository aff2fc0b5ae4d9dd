"""The answers of the HTTP API, as the OpenAPI document describes them (the ``*Out`` models).

The api serves the route functions' JSON as built (the ``TypedDict`` views of ``views.py``, which mypy
checks); these models document it, are built only when the document is asked for (``defer_build``,
not on a cold start), and the tests check every answer against them (``tests/integration/conftest.py``)
and that each agrees with its view field for field (``tests/unit/test_api_views.py``). Times are ISO
8601 strings in UTC with milliseconds (``model.iso``), described as ``format: date-time``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)

from punctual_functions.api.requests import OVERLAP_TEXT, BulkAction
from punctual_functions.api.targets import SqsTargetOut, StoredTarget
from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import (
    JobStatus,
    MisfirePolicy,
    OnComplete,
    OverlapPolicy,
    Reason,
    RunKind,
    RunStatus,
)
from punctual_functions.core.preview import Fate

# An instant as every answer gives it: "2026-11-22T12:00:05.000Z". A string on the wire and in the
# views; the document says date-time, so that generated clients parse it.
Instant = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]


class Answer(BaseModel):
    """An answer's model: it documents what a route answers (the OpenAPI document) and the tests check
    every answer against it; the api serves the views as they are, so these are built only when the
    document is asked for (``defer_build``), not on a cold start."""

    model_config = ConfigDict(defer_build=True)


# The schedule's fields an answer leaves out when they do not apply (one of at, cron, rate; the bounds).
_ABSENT_WHEN_NONE = frozenset({"at", "cron", "rate", "start_at", "end_at"})


class ScheduleTimesOut(Answer):
    """When a schedule fires, normalized: exactly one of ``at`` (UTC), ``cron`` or ``rate`` (``5
    minutes``), its zone, and the bounds it was given (UTC)."""

    at: Instant | None = Field(default=None, description="a one-off: its time, UTC")
    cron: str | None = Field(default=None, description="a cron expression, as given")
    rate: str | None = Field(default=None, description="a rate, normalized", examples=["5 minutes"])
    timezone: str = Field(description="IANA time zone")
    start_at: Instant | None = Field(default=None, description="no fire time before this, when given")
    end_at: Instant | None = Field(default=None, description="no fire time after this, when given")

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        # No return annotation: the serialization schema stays the model's, as documented.
        data = handler(self)
        return {
            key: value for key, value in data.items() if value is not None or key not in _ABSENT_WHEN_NONE
        }


class ScheduleOut(ScheduleTimesOut):
    """A job's schedule as ``ScheduleIn`` takes it, normalized (times in UTC), with its policies."""

    misfire: MisfirePolicy
    overlap: OverlapPolicy = Field(description=OVERLAP_TEXT)
    catchup_seconds: int | None
    calendar: str | None = Field(default=None, description="the business calendar it follows")
    on_excluded: OnExcluded | None = Field(
        default=None, description="with a calendar: what becomes of a fire time on an excluded day"
    )


class RetryOut(Answer):
    max_attempts: int
    backoff_seconds: float
    max_backoff_seconds: float


class AlertsOut(Answer):
    target: StoredTarget = Field(description="an SNS topic or a webhook, with its defaults")
    failed: bool
    missed: bool
    late_seconds: int | None
    running_seconds: int | None
    limited_seconds: int | None = None


class BackfillOut(Answer):
    model_config = ConfigDict(populate_by_name=True)

    job_id: str
    from_: Instant = Field(alias="from")
    to: Instant
    overlap: OverlapPolicy
    count: int = Field(description="occurrences backfilled (at most 1,000 a request)")
    occurrences: list[Instant] = Field(
        description="their scheduled times, oldest first: the runs' scheduled_for"
    )


class PauseOut(Answer):
    at: Instant
    by: str | None
    note: str | None
    until: Instant | None


class RunSummaryOut(Answer):
    run_id: str
    status: RunStatus
    scheduled_for: Instant | None = None
    finished_at: Instant | None = None
    lateness_ms: int | None = None
    attempt: int = 0
    error: str | None = None


class AttemptOut(Answer):
    attempt: int
    started_at: Instant | None
    finished_at: Instant | None
    outcome: str | None
    duration_ms: int | None
    status_code: int | None
    error: str | None
    response: str


class RunOut(Answer):
    run_id: str
    job_id: str
    status: RunStatus
    kind: RunKind
    scheduled_for: Instant
    queued_at: Instant | None
    started_at: Instant | None
    finished_at: Instant | None
    lateness_ms: int | None = Field(
        description="first attempt's start minus its due time (scheduled_for + jitter_ms), in milliseconds"
    )
    jitter_ms: int = Field(
        default=0, description="the job's jitter for this occurrence: due this long after scheduled_for"
    )
    reason: Reason | None = Field(default=None, description="why it did not run (SKIPPED, CANCELLED)")
    covers: int = Field(
        default=1, description="the occurrences this row stands for (a pause span, a misfire stretch)"
    )
    covers_until: Instant | None = Field(default=None, description="the last of them")
    note: str | None = Field(default=None, description="a pause span: the pause's note")
    by: str | None = Field(default=None, description="a pause span: who paused")
    overlap_with: str | None = Field(
        default=None,
        description=(
            "the overlap policy's other run: the one this run waits behind or waited behind (buffer), "
            "was skipped for (skip, buffer_one), or was cancelled for (cancel_other)"
        ),
    )
    calendar: str | None = Field(
        default=None,
        description="the job's calendar, on a row of a day it excluded (reason calendar) or a run it moved",
    )
    moved_from: list[Instant] = Field(
        default_factory=list,
        description="the occurrences of excluded days moved onto this run's time (on_excluded: "
        "next_business_day or previous_business_day), at their original times",
    )
    limited_by: str | None = Field(
        default=None,
        description="the target limit it waits on (reason limited) or waited on; job:<job_id> for the job's "
        "own max_concurrent",
    )
    limited_since: Instant | None = Field(default=None, description="since when it waits (or waited) on it")
    limited_ms: int | None = Field(
        default=None, description="how long its attempts waited on target limits before they started, in all"
    )
    attempt: int = Field(description="attempts started")
    duration_ms: int | None = Field(
        default=None, description="how long the target took on the last attempt that finished"
    )
    executions: int = Field(description="attempt starts including re-executions after a worker crash")
    next_attempt_at: Instant | None
    error: str | None
    attempts: list[AttemptOut] | None = None


class JobOut(Answer):
    job_id: str
    name: str | None
    status: JobStatus
    schedule: ScheduleOut
    target: StoredTarget = Field(description="the target with its defaults filled in")
    payload: Any
    retry: RetryOut
    timeout_seconds: int
    tags: dict[str, str]
    has_signing_secret: bool
    next_run_at: Instant | None
    upcoming: list[Instant] = Field(description="the next five fire times")
    last_run: RunSummaryOut | None
    run_counts: dict[str, int]
    jitter_seconds: int = 0
    pause_on_failures: int | None = None
    max_runs: int | None = None
    max_concurrent: int | None = Field(
        default=None, description="at most this many of its attempts in flight at once (its own limit)"
    )
    alerts: AlertsOut | None = Field(default=None, description="where the job's alerts go, and on what")
    remaining_runs: int | None = Field(
        default=None, description="with max_runs: the runs left, max_runs less those set off so far"
    )
    dead_letter: SqsTargetOut | None = Field(
        default=None, description="the SQS queue that receives the job's failed runs"
    )
    on_complete: OnComplete = OnComplete.KEEP
    delete_after_days: int | None = Field(default=None, description="with on_complete delete")
    deletes_at: Instant | None = Field(
        default=None, description="an ended job with on_complete delete: when it and its history go"
    )
    pause: PauseOut | None = Field(
        default=None, description="while PAUSED: since when, by whom, why, until when"
    )
    version: int
    revision: int = Field(
        default=0,
        description="one more at each change of the job (1 at its create): its audit trail keeps each "
        "revision's definition, which can be read, compared and restored",
    )
    created_at: Instant
    updated_at: Instant


class JobPage(Answer):
    items: list[JobOut]
    next_cursor: str | None


class RunPage(Answer):
    items: list[RunOut]
    next_cursor: str | None


class ChangeOut(Answer):
    """One change of a job in its audit trail: who, when, why, and what changed."""

    job_id: str
    revision: int = Field(description="the job's revision after the change")
    at: Instant
    action: str = Field(
        description="created, updated, paused, resumed, cancelled, restored, run_now or backfilled"
    )
    by: str = Field(description="the principal as the API saw it (punctual: Punctual itself)")
    request_id: str | None = None
    note: str | None = None
    diff: dict[str, list[Any]] = Field(description="each field that changed: [before, after]")
    details: dict[str, Any] = Field(
        description="what the action did besides (a run's id, a backfill's range)"
    )
    definition: dict[str, Any] | None = Field(
        default=None, description="a version's read: the job's definition at that revision"
    )


class ChangePage(Answer):
    items: list[ChangeOut]
    next_cursor: str | None


class VersionsCompared(Answer):
    job_id: str
    from_revision: int
    to_revision: int
    diff: dict[str, list[Any]] = Field(
        description="each field that differs: [at from_revision, at to_revision]"
    )


class QueueStats(Answer):
    queued: int
    in_flight: int
    delayed: int
    dlq: int


class StatsOut(Answer):
    jobs: dict[str, int] = Field(description="the caller's jobs by status")
    runs: dict[str, int] = Field(description="the caller's finished runs by outcome")
    queue: QueueStats
    dispatcher_lag_seconds: float | None = Field(
        description="how far the slowest shard's sweep is behind where a healthy one would be (0: keeping up)"
    )


class ErrorOut(Answer):
    error: str
    reason: str
    field: str | None = None


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
    at: Instant = Field(description="UTC")
    local: str = Field(description="in the schedule's zone, with its offset")
    dst: DstOut | None = None
    moved_from: list[Instant] = Field(
        default_factory=list, description="occurrences of excluded days its calendar moved onto this time"
    )


class PreviewExcludedDayOut(Answer):
    day: str = Field(description="YYYY-MM-DD, in the calendar's zone")
    reason: str = Field(description="why the calendar excludes it")
    fate: Literal["skipped", "moved"]
    moved_to: Instant | None = Field(default=None, description="where its occurrences run instead")


class PreviewCalendarOut(Answer):
    name: str
    on_excluded: OnExcluded
    excluded: list[PreviewExcludedDayOut] = Field(
        description="the excluded days on which the schedule had fire times, in the listed span"
    )


class MissedOut(Answer):
    scheduled_for: Instant
    local: str
    fate: Fate = Field(
        description="runs: dispatched by the first sweep after the outage; skipped: dropped by the policy; "
        "collapsed: merged into the occurrence run_once runs"
    )
    lateness_ms: int | None = Field(
        default=None, description="for a run: the end of the outage minus its time"
    )


class OutageOut(Answer):
    model_config = ConfigDict(populate_by_name=True)

    from_: Instant = Field(alias="from")
    to: Instant
    misfire: MisfirePolicy
    catchup_seconds: int | None
    counts: dict[str, int] = Field(description="occurrences due in the window, by fate")
    occurrences: list[MissedOut] = Field(description="the first 100 occurrences due in the window")
    listed_all: bool
    resumes_with: Instant | None = Field(description="the first occurrence after the outage: on time again")


class PreviewOut(Answer):
    schedule: ScheduleTimesOut
    timezone: str
    fire_times: list[FireTimeOut]
    calendar: PreviewCalendarOut | None = None
    outage: OutageOut | None
    notes: list[str]


class BulkItemOut(Answer):
    job_id: str
    status: int = Field(description="what the single-job route would have answered: 200, or 4xx with error")
    job: JobOut | None
    error: ErrorOut | None


class BulkOut(Answer):
    action: BulkAction
    matched: int = Field(
        description="the caller's jobs in this page that carry the tags and can take the action"
    )
    items: list[BulkItemOut] = Field(description="one per job acted on (at most 500), newest first")
    more: bool = Field(description="others may match: call again with next_cursor")
    next_cursor: str | None = Field(description="pass it back as cursor to go on; null when done")


# ------------------------------------------------------------------------------- business calendars


class HolidaySourceOut(Answer):
    country: str = Field(description="ISO 3166-1 alpha-2", examples=["DE"])
    subdivision: str | None = Field(description="the subdivision's code, as the holidays package has it")


class CalendarOut(Answer):
    """A business calendar: its rules as stored (normalized: codes upper case, lists sorted)."""

    name: str
    timezone: str
    weekdays: list[int] = Field(description="the working days, ISO numbers (Monday 1)")
    holidays: list[HolidaySourceOut]
    exchanges: list[str] = Field(description="MIC codes")
    dates: list[str] = Field(description="excluded dates, YYYY-MM-DD")
    yearly: list[str] = Field(description="dates excluded every year, MM-DD")
    expanded_until: str | None = Field(
        description="with exchanges: the last day their closed days are known for (YYYY-MM-DD); a write "
        "of the calendar expands them again"
    )
    version: int = Field(description="moves on with every change")


class CalendarPage(Answer):
    items: list[CalendarOut]


class ExcludedDayOut(Answer):
    date: str = Field(description="YYYY-MM-DD")
    reason: str = Field(description="the first rule that excludes it", examples=["holiday in DE-BY: Neujahr"])


class CalendarDaysOut(Answer):
    model_config = ConfigDict(populate_by_name=True)

    name: str
    from_: str = Field(alias="from", description="YYYY-MM-DD")
    to: str = Field(description="YYYY-MM-DD, included")
    excluded: list[ExcludedDayOut] = Field(
        description="the days of the range the calendar excludes, in order"
    )


class LimitSlotOut(Answer):
    job_id: str | None
    run_id: str = Field(description="the run holding the slot")
    taken_at: Instant | None
    lease_until: Instant | None = Field(description="the slot is free from then on if not released")


class LimitWaiterOut(Answer):
    job_id: str
    run_id: str
    since: Instant | None = Field(description="since when it waits on the limit")
    waited_ms: int


class LimitOut(Answer):
    name: str
    match: str = Field(description="the targets it covers: a URL prefix or an ARN")
    max_concurrent: int | None
    per_second: float | None
    burst: int | None
    version: int
    created_at: Instant | None
    updated_at: Instant | None
    in_use: int = Field(description="its slots held now (attempts in flight under it)")
    running: list[LimitSlotOut] = Field(description="the runs holding its slots")
    tokens: float | None = Field(description="with per_second: the tokens in its bucket now")
    waiting_count: int = Field(description="the runs waiting on it (QUEUED, reason limited)")
    waiting: list[LimitWaiterOut] = Field(description="the first 100 of them, longest waiting first")


class LimitPage(Answer):
    items: list[LimitOut]

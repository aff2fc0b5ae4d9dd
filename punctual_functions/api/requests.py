"""The request bodies of the HTTP API (pydantic); the OpenAPI document is generated from them.

Pydantic checks structure (types, ranges, unknown fields, enum members); the domain checks meaning
(cron syntax, time zones, target rules) and reports the field it refused. Both end as a 4xx naming the
field. Choices are the domain's own enums (``punctual_functions.core.model``), so a policy added there is
accepted here and listed in the document. The target models are ``targets.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from punctual_functions.api.names import MAX_NAME_LENGTH, NAME_PATTERN
from punctual_functions.api.targets import SqsTargetIn, Target
from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import MisfirePolicy, OnComplete, OverlapPolicy
from punctual_functions.core.resources import MAX_JOB_TIMEOUT_SECONDS

# What POST /v1/jobs/bulk does to each job it matches.
BulkAction = Literal["pause", "resume", "cancel"]


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


OVERLAP_TEXT = (
    "an occurrence due while an earlier run is under way: allow (runs overlap), skip (it does not run), "
    "buffer_one (it waits for the one under way; if one already waits, it does not run), buffer_all "
    "(each waits its turn), cancel_other (the one under way is cancelled)"
)


MAX_CONCURRENT_TEXT = (
    "at most this many of the job's attempts in flight at once, across all workers (a limit of its own: "
    "a run over it waits its turn, QUEUED with reason limited); a cap for overlap allow"
)


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
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    catchup_seconds: int | None = Field(default=None, ge=0, le=31 * 24 * 3600, strict=True)
    overlap: OverlapPolicy = Field(default=OverlapPolicy.ALLOW, description=OVERLAP_TEXT)
    calendar: str | None = Field(
        default=None,
        max_length=64,
        description="the name of one of your business calendars (cron and rate only): a fire time on a "
        "day it excludes is skipped or moved, per on_excluded",
    )
    on_excluded: OnExcluded = Field(
        default=OnExcluded.SKIP,
        description="what becomes of a fire time on an excluded day: skip it (one row per day, reason "
        "calendar), or move it to the next or previous business day at the same wall time",
    )

    _whole_numbers = whole_numbers("catchup_seconds")


class RetryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=10, strict=True)
    backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    max_backoff_seconds: float = Field(default=600.0, ge=0, le=12 * 3600)

    _whole_numbers = whole_numbers("max_attempts")


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


class NoteIn(BaseModel):
    """Why (optional): kept with the change in the job's audit trail."""

    model_config = ConfigDict(extra="forbid")

    note: str | None = Field(default=None, max_length=500, description="why, kept in the audit trail")


class RestoreIn(BaseModel):
    """Make an earlier revision of the job its definition again (a new revision)."""

    model_config = ConfigDict(extra="forbid")

    revision: int = Field(ge=1, strict=True, description="the revision whose definition to restore")
    note: str | None = Field(default=None, max_length=500, description="why, kept in the audit trail")


class BulkIn(BaseModel):
    """Act on every job of the caller that carries all of ``tags``."""

    model_config = ConfigDict(extra="forbid")

    action: BulkAction
    tags: dict[str, str] = Field(max_length=50, description="the jobs carrying all of these (at least one)")
    note: str | None = Field(default=None, max_length=500, description="why, kept in each job's audit trail")
    until: str | None = Field(default=None, max_length=64, description="pause only: resume by itself then")
    cursor: str | None = Field(
        default=None, max_length=2048, description="an earlier answer's next_cursor: go on from there"
    )


class BackfillIn(BaseModel):
    """Run the job's occurrences between ``from`` and ``to`` (both included, both past) again."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", max_length=64, description="ISO 8601 (naive: in the schedule's zone)")
    to: str = Field(max_length=64, description="ISO 8601, not before from, not in the future")
    overlap: OverlapPolicy = Field(
        default=OverlapPolicy.BUFFER_ALL,
        description="buffer_all: one after another, oldest first (the default); allow: all at once; the "
        "others are refused for a backfill",
    )


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
    limited_seconds: int | None = Field(
        default=None,
        ge=1,
        le=86_400,
        strict=True,
        description="a run waited on a target limit longer than this",
    )

    _whole_numbers = whole_numbers("late_seconds", "running_seconds", "limited_seconds")


class CreateJobIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_PATTERN)
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
    max_concurrent: int | None = Field(
        default=None, ge=1, le=1000, strict=True, description=MAX_CONCURRENT_TEXT
    )
    alerts: AlertsIn | None = None
    dead_letter: SqsTargetIn | None = Field(default=None, description=DEAD_LETTER_TEXT)
    on_complete: OnComplete = Field(default=OnComplete.KEEP, description=ON_COMPLETE_TEXT)
    delete_after_days: int = Field(default=7, ge=1, le=365, strict=True, description=DELETE_AFTER_TEXT)

    _whole_numbers = whole_numbers(
        "timeout_seconds",
        "jitter_seconds",
        "pause_on_failures",
        "max_runs",
        "max_concurrent",
        "delete_after_days",
    )


class PatchJobIn(BaseModel):
    """Fields to change; those left out keep their value. ``schedule`` is replaced as a whole."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_PATTERN)
    schedule: ScheduleIn | None = None
    target: Target | None = None
    payload: Any = None
    retry: RetryIn | None = None
    timeout_seconds: int | None = Field(default=None, ge=1, le=MAX_JOB_TIMEOUT_SECONDS, strict=True)
    tags: dict[str, str] | None = Field(default=None, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)
    note: str | None = Field(
        default=None, max_length=500, description="why: kept with the change in the job's audit trail"
    )
    jitter_seconds: int | None = Field(
        default=None, ge=0, le=MAX_JITTER_SECONDS, strict=True, description=JITTER_TEXT
    )
    pause_on_failures: int | None = Field(
        default=None, ge=1, le=100, strict=True, description=PAUSE_ON_FAILURES_TEXT
    )
    max_runs: int | None = Field(default=None, ge=1, le=1000, strict=True, description=MAX_RUNS_TEXT)
    max_concurrent: int | None = Field(
        default=None, ge=1, le=1000, strict=True, description=MAX_CONCURRENT_TEXT
    )
    alerts: AlertsIn | None = Field(default=None, description="replaced as a whole; null removes them")
    dead_letter: SqsTargetIn | None = Field(default=None, description=DEAD_LETTER_TEXT + "; null removes it")
    on_complete: OnComplete | None = Field(default=None, description=ON_COMPLETE_TEXT)
    delete_after_days: int | None = Field(
        default=None, ge=1, le=365, strict=True, description=DELETE_AFTER_TEXT
    )

    _whole_numbers = whole_numbers(
        "timeout_seconds",
        "jitter_seconds",
        "pause_on_failures",
        "max_runs",
        "max_concurrent",
        "delete_after_days",
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
    until: str | None = Field(
        default=None,
        max_length=64,
        description="list every fire time up to this instant instead of `count` (at most 1,000 of them)",
    )
    outage: OutageIn | None = None

    _whole_numbers = whole_numbers("count")


class CreateJobsIn(BaseModel):
    """Up to 100 jobs in one request, each validated and answered on its own."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=100,
        description="each as the body of POST /v1/jobs",
        json_schema_extra={"items": {"$ref": "#/components/schemas/CreateJobIn"}},
    )


# ------------------------------------------------------------------------------- business calendars

HOLIDAYS_TEXT = (
    "public holidays of a country (ISO 3166-1 alpha-2) or one of its subdivisions, from the `holidays` "
    'package: {"country": "DE", "subdivision": "BY"}, or the short form "DE-BY" (or "DE")'
)
EXCHANGES_TEXT = (
    "exchanges by MIC code (XNYS, XLON, ...), from the `exchange-calendars` package: the days they do "
    "not trade are excluded (expanded when the calendar is written, about three years ahead)"
)
Text = Annotated[str, Field(max_length=64)]


class HolidaySourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    country: str = Field(min_length=1, max_length=8, examples=["DE"])
    subdivision: str | None = Field(default=None, min_length=1, max_length=32, examples=["BY"])


class CalendarRulesIn(BaseModel):
    """A calendar's rules: a day is a business day unless one of them excludes it. ``PUT`` replaces
    them as a whole (those left out take their defaults)."""

    model_config = ConfigDict(extra="forbid")

    timezone: str = Field(
        default="UTC", max_length=64, description="IANA time zone in which a day is judged, default UTC"
    )
    weekdays: list[Annotated[int, Field(strict=True)]] = Field(
        default_factory=lambda: [1, 2, 3, 4, 5],
        min_length=1,
        max_length=7,
        description="the working days, ISO numbers (Monday 1 ... Sunday 7); default Monday to Friday",
        json_schema_extra={"items": {"type": "integer", "minimum": 1, "maximum": 7}},
    )
    holidays: list[HolidaySourceIn | Text] = Field(
        default_factory=list, max_length=20, description=HOLIDAYS_TEXT, examples=[["DE-BY"]]
    )
    exchanges: list[Text] = Field(
        default_factory=list, max_length=5, description=EXCHANGES_TEXT, examples=[["XNYS"]]
    )
    dates: list[Text] = Field(
        default_factory=list,
        max_length=1000,
        description="excluded dates, YYYY-MM-DD",
        examples=[["2026-12-24"]],
    )
    yearly: list[Text] = Field(
        default_factory=list,
        max_length=366,
        description="dates excluded every year, MM-DD",
        examples=[["12-31"]],
    )

    _whole_numbers = field_validator("weekdays", mode="before")(
        lambda value: [_whole_number(day) for day in value] if isinstance(value, list) else value
    )


class CreateCalendarIn(CalendarRulesIn):
    """A new calendar: its name (unique among the caller's calendars) and its rules."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_PATTERN)


class LimitIn(BaseModel):
    """A target limit (docs/api.md, "Target limits"): which targets it covers and how it caps them."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="the limit's name (required to create; on PUT, the path's)",
    )
    match: str = Field(
        min_length=1,
        max_length=1024,
        description="the targets it covers: an http(s) URL prefix (scheme, host, port and an optional path "
        "prefix, matched on path segments) or an ARN (exact, with a qualifier, or a prefix ending in *)",
    )
    max_concurrent: int | None = Field(
        default=None, ge=1, le=1000, strict=True, description="attempts in flight at once, across all workers"
    )
    per_second: float | None = Field(
        default=None,
        ge=0.001,
        le=10_000,
        description="calls started per second (a token bucket), 0.001 to 10,000",
    )
    burst: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        strict=True,
        description="with per_second: the bucket's size (default: per_second rounded up)",
    )
    version: int | None = Field(
        default=None, ge=1, strict=True, description="on PUT: replace only this version (else 409)"
    )

    _whole_numbers = whole_numbers("max_concurrent", "burst", "version")

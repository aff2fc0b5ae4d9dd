"""Request and response bodies of the HTTP API; the OpenAPI document is generated from them.

Pydantic checks structure (types, ranges, unknown fields); the domain checks meaning (cron syntax,
time zones, target rules) and reports the field it refused. Both end as a 4xx naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from functions.core.definitions import MAX_JOB_TIMEOUT_SECONDS

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
    overlap: Literal["allow", "skip"] = "allow"

    _whole_numbers = whole_numbers("catchup_seconds")


class RetryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=10, strict=True)
    backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    max_backoff_seconds: float = Field(default=600.0, ge=0, le=12 * 3600)

    _whole_numbers = whole_numbers("max_attempts")


class CreateJobIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    schedule: ScheduleIn
    target: dict[str, Any] = Field(
        description="http, lambda, sqs, sns or eventbridge target (see docs/api.md)"
    )
    payload: Any = None
    retry: RetryIn = Field(default_factory=RetryIn)
    timeout_seconds: int = Field(default=30, ge=1, le=MAX_JOB_TIMEOUT_SECONDS, strict=True)
    tags: dict[str, str] = Field(default_factory=dict, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)

    _whole_numbers = whole_numbers("timeout_seconds")


class PatchJobIn(BaseModel):
    """Fields to change; those left out keep their value. ``schedule`` is replaced as a whole."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    schedule: ScheduleIn | None = None
    target: dict[str, Any] | None = None
    payload: Any = None
    retry: RetryIn | None = None
    timeout_seconds: int | None = Field(default=None, ge=1, le=MAX_JOB_TIMEOUT_SECONDS, strict=True)
    tags: dict[str, str] | None = Field(default=None, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)

    _whole_numbers = whole_numbers("timeout_seconds")


# ---------------------------------------------------------------------------------------- responses


class RunSummaryOut(BaseModel):
    run_id: str
    status: RunStatusName
    scheduled_for: str | None = None
    finished_at: str | None = None
    lateness_ms: int | None = None
    attempt: int = 0
    error: str | None = None


class AttemptOut(BaseModel):
    attempt: int
    started_at: str | None
    finished_at: str | None
    outcome: str | None
    duration_ms: int | None
    status_code: int | None
    error: str | None
    response: str


class RunOut(BaseModel):
    run_id: str
    job_id: str
    status: RunStatusName
    kind: Literal["scheduled", "manual"]
    scheduled_for: str
    queued_at: str | None
    started_at: str | None
    finished_at: str | None
    lateness_ms: int | None = Field(description="attempt start minus scheduled time, in milliseconds")
    attempt: int = Field(description="attempts started")
    executions: int = Field(description="attempt starts including re-executions after a worker crash")
    next_attempt_at: str | None
    error: str | None
    attempts: list[AttemptOut] | None = None


class JobOut(BaseModel):
    job_id: str
    name: str | None
    status: JobStatusName
    schedule: dict[str, Any]
    target: dict[str, Any]
    payload: Any
    retry: dict[str, Any]
    timeout_seconds: int
    tags: dict[str, str]
    has_signing_secret: bool
    next_run_at: str | None
    upcoming: list[str] = Field(description="the next five fire times")
    last_run: RunSummaryOut | None
    run_counts: dict[str, int]
    version: int
    created_at: str
    updated_at: str


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None


class RunPage(BaseModel):
    items: list[RunOut]
    next_cursor: str | None


class QueueStats(BaseModel):
    queued: int
    in_flight: int
    delayed: int
    dlq: int


class StatsOut(BaseModel):
    jobs: dict[str, int] = Field(description="the caller's jobs by status")
    runs: dict[str, int] = Field(description="the caller's finished runs by outcome")
    queue: QueueStats
    dispatcher_lag_seconds: float | None = Field(description="now minus the oldest unswept bucket")


class ErrorOut(BaseModel):
    error: str
    reason: str
    field: str | None = None

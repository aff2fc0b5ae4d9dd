"""Request bodies of the HTTP API: their shape and types.

Pydantic checks structure (types, ranges, unknown fields); the domain checks meaning (cron syntax,
time zones, target rules) and reports the field it refused. Both end as a 4xx naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ScheduleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: str | None = Field(
        default=None, description='One-off: "2026-11-22T13:00:05+01:00" or "at(2026-11-22T13:00:05)"'
    )
    cron: str | None = Field(
        default=None,
        description='"0 13 * * 1-5", "*/10 * * * * *" (leading seconds) or "cron(0 13 ? * MON-FRI *)"',
    )
    rate: str | None = Field(default=None, description='"5 minutes", "30 seconds", "rate(1 hour)"')
    timezone: str | None = Field(default=None, description="IANA time zone, default UTC")
    start_at: str | None = None
    end_at: str | None = None
    misfire: Literal["run_once", "skip", "run_all"] = "run_once"
    catchup_seconds: int | None = Field(default=None, ge=0, le=31 * 24 * 3600)
    overlap: Literal["allow", "skip"] = "allow"


class RetryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=10)
    backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    max_backoff_seconds: float = Field(default=600.0, ge=0, le=12 * 3600)


class CreateJobIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
    )
    schedule: ScheduleIn
    target: dict[str, Any]
    payload: Any = None
    retry: RetryIn = Field(default_factory=RetryIn)
    timeout_seconds: int = Field(default=30, ge=1, le=900)
    tags: dict[str, str] = Field(default_factory=dict, max_length=50)
    signing_secret: str | None = Field(default=None, min_length=16, max_length=256)

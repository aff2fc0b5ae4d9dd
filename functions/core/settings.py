"""One typed settings object, read once from the environment.

Every role (api, dispatcher, worker, local runtime) builds its configuration here and nowhere else, so
the names of the variables are documented in one place and logic never reads ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """Runtime configuration; each field maps to the environment variable ``PUNCTUAL_<FIELD>``."""

    model_config = ConfigDict(frozen=True)

    table_name: str = "punctual"
    queue_url: str = ""
    dlq_url: str = ""
    region: str = "us-east-1"
    # Set locally (moto server, LocalStack); unset on AWS.
    aws_endpoint_url: str | None = None

    shard_count: int = Field(default=8, ge=1, le=1000)
    lookahead_seconds: int = Field(default=120, ge=60, le=840)
    min_interval_seconds: int = Field(default=10, ge=1)
    # A CLAIMED trigger older than this belongs to a dispatcher that died before sending it.
    claim_timeout_seconds: int = Field(default=30, ge=5)
    # A recurring occurrence claimed later than this was missed; the job's misfire policy decides.
    misfire_threshold_seconds: int = Field(default=60, ge=1)
    # A passed bucket is only left behind once it ended this long ago (clock skew between writers).
    bucket_safety_seconds: int = Field(default=5, ge=0)
    # How far back a shard's cursor starts on its first tick.
    initial_catchup_seconds: int = Field(default=3600, ge=60)
    # Worker: lease on a RUNNING run and on its SQS message, renewed by a heartbeat every third of it.
    # Short, so a crashed worker's run is taken over within seconds (precision under faults): an
    # attempt starts a second before its due time, so a worker dying then is replaced 3 s after it.
    lease_seconds: int = Field(default=4, ge=3)
    # Worker: a message that arrives up to this early is held in-process; later ones go back to SQS.
    max_early_wait_seconds: int = Field(default=20, ge=0)
    run_retention_days: int = Field(default=30, ge=1)
    max_attempts_limit: int = Field(default=10, ge=1)

    # HTTP targets: loopback is allowed only locally; the allow-list names private hosts/CIDRs.
    http_allow_loopback: bool = False
    http_allow_list: tuple[str, ...] = ()
    # AWS resources jobs may target (Lambda functions, SQS queues, SNS topics, EventBridge buses), as
    # ARN patterns with `*` wildcards. The deployment grants the worker exactly these; "*" allows all.
    allowed_target_arns: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = env.get(f"PUNCTUAL_{name.upper()}")
            if raw is None or raw == "":
                continue
            if name in ("http_allow_list", "allowed_target_arns"):
                values[name] = tuple(part.strip() for part in raw.split(",") if part.strip())
            else:
                values[name] = raw
        return cls.model_validate(values)

    def to_env(self) -> dict[str, str]:
        """The environment that makes ``from_env`` rebuild these settings (used to start roles)."""
        env: dict[str, str] = {}
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, tuple):
                env[f"PUNCTUAL_{name.upper()}"] = ",".join(value)
            elif isinstance(value, bool):
                env[f"PUNCTUAL_{name.upper()}"] = "true" if value else "false"
            else:
                env[f"PUNCTUAL_{name.upper()}"] = str(value)
        return env


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()

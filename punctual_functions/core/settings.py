"""One typed settings object, read once from the environment.

Every role (api, dispatcher, worker, local runtime) builds its configuration here and nowhere else, so
the names of the variables are documented in one place and logic never reads ``os.environ``.

A plain dataclass rather than a pydantic model: the dispatcher and the worker use pydantic nowhere
else, and importing it was a fifth of their cold start.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from typing import Any, Self, get_type_hints

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _bounded(default: int, low: int, high: int | None = None) -> Any:
    """An int field with inclusive bounds, checked on construction."""
    return field(default=default, metadata={"bounds": (low, high)})


def _one_of(default: str, *choices: str) -> Any:
    """A str field that takes one of ``choices``, checked on construction."""
    return field(default=default, metadata={"choices": (default, *choices)})


@dataclass(frozen=True)
class Settings:
    """Runtime configuration; each field maps to the environment variable ``PUNCTUAL_<FIELD>``."""

    table_name: str = "punctual"
    queue_url: str = ""
    dlq_url: str = ""
    region: str = "us-east-1"
    # The deployment's own account and partition: a target named by bare name (a function name, the
    # bus "default") is checked against allowed_target_arns as the ARN it resolves to in this account.
    account_id: str = ""
    partition: str = "aws"
    # Set locally (moto server, LocalStack); unset on AWS.
    aws_endpoint_url: str | None = None
    # How callers authenticate, for the API's description of itself: the local stack's bearer tokens,
    # or the deployment's SigV4 (iam) or API keys.
    api_auth: str = _one_of("bearer", "iam", "api_key")
    # Who owns what an IAM caller creates: its role ("role": every session of a role, such as every
    # SSO user of one permission set, shares the jobs) or the role and session name ("session").
    owner_mode: str = _one_of("role", "session")

    shard_count: int = _bounded(8, 1, 1000)
    lookahead_seconds: int = _bounded(120, 60, 840)
    min_interval_seconds: int = _bounded(10, 1)
    # A CLAIMED trigger older than this belongs to a dispatcher that died before sending it.
    claim_timeout_seconds: int = _bounded(30, 5)
    # A recurring occurrence dispatched later than this was missed; the job's misfire policy decides.
    misfire_threshold_seconds: int = _bounded(60, 1)
    # A passed bucket is only left behind once it ended this long ago (clock skew between writers).
    bucket_safety_seconds: int = _bounded(5, 0)
    # How far back a shard's cursor starts on its first tick.
    initial_catchup_seconds: int = _bounded(3600, 60)
    # Dispatcher: how many sweeps a tick fans out to, each over its own range of shards (on AWS an
    # asynchronous invocation of the dispatcher each; locally threads), and how many triggers each
    # shard's sweep dispatches at once. docs/scale.md has what a million jobs a minute takes.
    sweep_invocations: int = _bounded(1, 1, 1000)
    dispatch_concurrency: int = _bounded(4, 1, 64)
    # Worker: lease on a RUNNING run and on its SQS message, renewed by a heartbeat every third of it.
    # Short, so a crashed worker's run is taken over within seconds (precision under faults): an
    # attempt starts half a second before its due time, so a worker dying then is replaced 3.5 s after it.
    lease_seconds: int = _bounded(4, 3)
    # Worker: a message that arrives up to this early is held in-process; later ones go back to SQS.
    max_early_wait_seconds: int = _bounded(20, 0)
    # How long before its due time a work message becomes visible: what the worker needs before the
    # call (the event source mapping's latency, p99 105 ms published, plus its reads and start write).
    # Each run's hold shows whether it is right (docs/deploy.md, "Tuning the head start").
    head_start_ms: int = _bounded(250, 0, 5000)
    run_retention_days: int = _bounded(30, 1)
    # How long a change stays in its job's audit trail (DynamoDB TTL), whatever becomes of the job.
    audit_retention_days: int = _bounded(365, 1, 3650)
    # Worker: the share of runs whose trace is recorded in X-Ray (a segment per attempt), in percent
    # (punctual_functions/core/tracing.py). X-Ray bills each trace; Lambda's own default samples about 5%.
    run_trace_percent: int = _bounded(5, 0, 100)
    max_attempts_limit: int = _bounded(10, 1)

    # HTTP targets: loopback is allowed only locally; the allow-list names private hosts/CIDRs.
    http_allow_loopback: bool = False
    http_allow_list: tuple[str, ...] = ()
    # AWS resources jobs may target (Lambda functions, SQS queues, SNS topics, EventBridge buses), as
    # ARN patterns with `*` wildcards. The deployment grants the worker exactly these; "*" allows all.
    allowed_target_arns: tuple[str, ...] = ()
    # Inside that fence, who may deliver where: "owner", a job only where its owner has a delivery
    # right (the deployment's rights item, core/rights.py); "deployment", any owner anywhere on the
    # allow-list (a deployment that serves one team).
    delivery_rights_mode: str = _one_of("owner", "deployment")

    def __post_init__(self) -> None:
        hints = _hints()
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            kind = hints[spec.name]
            if not _is_instance(value, kind):
                raise ValueError(f"{spec.name}: expected {_describe(kind)}, got {value!r}")
            choices = spec.metadata.get("choices")
            if choices is not None and value not in choices:
                raise ValueError(f"{spec.name}: must be one of {', '.join(choices)}, got {value!r}")
            low, high = spec.metadata.get("bounds", (None, None))
            if low is not None and value < low:
                raise ValueError(f"{spec.name}: must be at least {low}, got {value}")
            if high is not None and value > high:
                raise ValueError(f"{spec.name}: must be at most {high}, got {value}")

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> Self:
        """Build from loosely typed values (environment strings, CLI options), converting each."""
        hints = _hints()
        unknown = sorted(set(values) - set(hints))
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}")
        converted: dict[str, Any] = {
            name: _convert(name, value, hints[name]) for name, value in values.items()
        }
        return cls(**converted)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in _hints():
            raw = env.get(f"PUNCTUAL_{name.upper()}")
            if raw is not None and raw != "":
                values[name] = raw
        return cls.from_values(values)

    @property
    def head_start(self) -> timedelta:
        return timedelta(milliseconds=self.head_start_ms)

    def replace(self, **changes: object) -> Self:
        """A copy with some fields changed (validated like any other)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        return {spec.name: getattr(self, spec.name) for spec in dataclasses.fields(self)}

    def to_env(self) -> dict[str, str]:
        """The environment that makes ``from_env`` rebuild these settings (used to start roles)."""
        env: dict[str, str] = {}
        for name, value in self.as_dict().items():
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
def _hints() -> dict[str, Any]:
    return get_type_hints(Settings)


def _is_instance(value: object, kind: Any) -> bool:
    if isinstance(kind, types.UnionType):  # str | None
        return any(_is_instance(value, member) for member in kind.__args__)
    if kind is type(None):
        return value is None
    if getattr(kind, "__origin__", None) is tuple:
        return isinstance(value, tuple) and all(isinstance(item, str) for item in value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _describe(kind: Any) -> str:
    if getattr(kind, "__origin__", None) is tuple:
        return "a list of strings"
    return {int: "an integer", bool: "a boolean", str: "a string"}.get(kind, str(kind))


def _convert(name: str, value: object, kind: Any) -> object:
    if not isinstance(value, str):
        if getattr(kind, "__origin__", None) is tuple and isinstance(value, list):
            return tuple(value)
        return value
    if kind is int:
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"{name}: expected an integer, got {value!r}") from None
    if kind is bool:
        lowered = value.strip().lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ValueError(f"{name}: expected true or false, got {value!r}")
    if getattr(kind, "__origin__", None) is tuple:
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()

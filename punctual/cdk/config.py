"""The deployment's settings: ``SchedulerProps``, the ``Scheduler`` construct's typed props, and
``DeploymentConfig``, the project's own app's (the same, and where to deploy), read once from CDK
context (``cdk.json`` or ``cdk synth -c key=value``).

Runtime settings (shards, look-ahead, minimum interval, HTTP allow-list, retention, allowed targets) are
validated by the functions' own :class:`~punctual_functions.core.settings.Settings`, so a value the functions
would refuse at start-up fails the synth instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from punctual_functions.core.rights import DeliveryRights, RightsError
from punctual_functions.core.settings import Settings

# The worker's event source: at most this many invocations at once (its MaximumConcurrency). The local
# stack's event source takes the same (punctual/local/roles.py).
WORKER_MAX_CONCURRENCY: Final = 50
# The event source's provisioned mode, as AWS defaults it (Lambda API, ProvisionedPollerConfig).
PROVISIONED_MINIMUM_POLLERS: Final = 2
PROVISIONED_MAXIMUM_POLLERS: Final = 200
# The worker's recursive-loop detection. It continues chains of its own on its own queue (the next
# occurrence of a buffered backfill, a slot handed on under a target limit, a run woken after the one
# it waited for), which Lambda's default (Terminate) stops after 16 invocations. Each chain ends by
# itself (docs/aws-behaviours.md, "Recursive-loop detection"). The local stack's event source counts
# chains the same way and reads this setting (punctual/local/recursion.py).
WORKER_RECURSIVE_LOOP: Final = "Allow"

# The services whose resources jobs may target, and the one action the worker needs on each.
TARGET_ACTIONS: Final = {
    "lambda": "lambda:InvokeFunction",
    "sqs": "sqs:SendMessage",
    "sns": "sns:Publish",
    "events": "events:PutEvents",
}
ALLOW_ALL_TARGETS: Final = "*"

_LIST_FIELDS: Final = ("http_allow_list", "allowed_target_arns", "target_kms_key_arns", "api_key_names")
# A KMS key's ARN (a single- or multi-Region key). IAM authorises a key's use by this ARN only: an
# alias ARN in a policy's Resource grants nothing.
_KMS_KEY_ARN: Final = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/(mrk-[0-9a-f]{32}|[0-9a-f-]{36})")
# The retention periods CloudWatch Logs accepts, in days.
LOG_RETENTION_DAYS: Final = frozenset(
    (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)
)


class SchedulerProps(BaseModel):
    """How a ``Scheduler`` is deployed: every setting has a default; docs/deploy.md explains each.
    Validated when made: ``SchedulerProps(shard_count=0)`` fails at once, with the field's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Names the functions (punctual-<stage>-api, ...) and the API; prod keeps logs and the table
    # when the stack is deleted.
    stage: Literal["dev", "prod"] = "dev"

    # Runtime settings of the functions (PUNCTUAL_* environment variables).
    shard_count: int = 8
    lookahead_seconds: int = 120
    min_interval_seconds: int = 10
    run_retention_days: int = 30
    # How long a change stays in its job's audit trail.
    audit_retention_days: int = Field(default=365, ge=1, le=3650)
    # The share of runs whose X-Ray trace (a segment per attempt) is recorded, in percent.
    run_trace_percent: int = 5
    http_allow_list: tuple[str, ...] = ()
    allowed_target_arns: tuple[str, ...] = ()
    # Inside that fence, who may deliver where (docs/security.md): "owner", a job only where its
    # owner has a delivery right (the rights below, and those allow_target gives); "deployment", any
    # owner anywhere on the allow-list (a deployment that serves one team).
    delivery_rights_mode: Literal["owner", "deployment"] = "owner"
    # Rights as core/rights.py reads them: [{"owners": [...], "targets": [...], "hosts": [...]}].
    delivery_rights: tuple[dict[str, Any], ...] = ()
    # Webhooks need a right naming their host too (otherwise any host the SSRF guard lets through).
    webhook_hosts_per_owner: bool = False
    # Customer-managed KMS keys of encrypted targets (SNS topics, SQS queues): publishing to them
    # encrypts with the key as the worker, which may use only the keys named here.
    target_kms_key_arns: tuple[str, ...] = ()
    # Fan-out of each tick's sweep (asynchronous invocations of the dispatcher, each over a group of
    # shards) and the triggers each shard's sweep dispatches at once; docs/scale.md sizes them for a
    # million jobs a minute.
    sweep_invocations: int = Field(default=1, ge=1, le=1000)
    dispatch_concurrency: int = Field(default=4, ge=1, le=64)
    # How long before its second a work message reaches the worker (docs/deploy.md, "Tuning the head
    # start"): enough for the event source's latency and the worker's reads and start write.
    head_start_ms: int = Field(default=250, ge=0, le=5000)

    # The API: who may call it, and how fast.
    api_auth: Literal["iam", "api_key"] = "iam"
    # IAM callers: jobs belong to the role ("role", every session of it shares them) or to the role's
    # session ("session": people sharing one SSO permission set are told apart by session name).
    owner_mode: Literal["role", "session"] = "role"
    api_key_names: tuple[str, ...] = ("default",)
    api_throttle_rate_limit: float = Field(default=50, gt=0)
    api_throttle_burst_limit: int = Field(default=100, ge=1)
    api_quota_per_day: int | None = Field(default=None, ge=1)
    # API-key mode: the account-wide role API Gateway writes a REST API's logs through. "if_absent":
    # the stack's role, set only if the account names none (punctual/cdk/api_account.py); "always":
    # set it whatever the account had (CDK's own); "never": leave the account's setting alone (it
    # must name a role, or the REST stage's logs fail the deploy). true and false read as the last two.
    api_gateway_cloudwatch_role: Literal["if_absent", "always", "never"] = "if_absent"
    # API-key mode: the stage's per-method CloudWatch metrics (detailed metrics, billed as custom
    # metrics for each route and method). The stage's own metrics come without them.
    api_detailed_metrics: bool = False

    # The table's capacity. "on_demand" (the default): billed by the request, nothing to size.
    # "provisioned": capacity units a second, scaled by Application Auto Scaling to keep consumption
    # near ``table_target_utilization`` percent, within the bounds below (table and owner index
    # apart); cheaper for a steady, dense load (``punctual plan`` says which). AWS allows a table's
    # mode to change once in 24 hours.
    table_capacity_mode: Literal["on_demand", "provisioned"] = "on_demand"
    table_min_write_units: int = Field(default=5, ge=1)
    table_max_write_units: int = Field(default=4_000, ge=1)
    table_min_read_units: int = Field(default=5, ge=1)
    table_max_read_units: int = Field(default=12_000, ge=1)
    index_min_write_units: int = Field(default=5, ge=1)
    index_max_write_units: int = Field(default=1_000, ge=1)
    index_min_read_units: int = Field(default=5, ge=1)
    index_max_read_units: int = Field(default=1_000, ge=1)
    table_target_utilization: int = Field(default=70, ge=20, le=90)

    # The worker's SQS event source.
    worker_batch_size: int = Field(default=10, ge=1, le=10_000)
    # 0: the event source hands over each record as soon as it is there (a window holds records back
    # to fill a batch, which only a batch above 10 needs).
    worker_batching_window_seconds: int = Field(default=0, ge=0, le=300)
    # Unset: WORKER_MAX_CONCURRENCY, unless the pollers below are set (``worker_maximum_concurrency``).
    worker_max_concurrency: int | None = Field(default=None, ge=2, le=1000)
    # Provisioned mode: pollers kept ready (MinimumPollers) and the most it scales to
    # (MaximumPollers); setting either turns it on. AWS takes it or a maximum concurrency, never
    # both: in provisioned mode the pollers bound the invocations, and worker_max_concurrency must
    # stay unset. Billed per poller-hour (docs/deploy.md).
    worker_minimum_pollers: int | None = Field(default=None, ge=2, le=200)
    worker_maximum_pollers: int | None = Field(default=None, ge=2, le=2000)

    # Operations.
    log_retention_days: int = Field(default=30, ge=1)
    oldest_message_alarm_seconds: int = Field(default=1800, ge=60)
    dispatcher_lag_alarm_seconds: int = Field(default=180, ge=60)
    # Where alarms notify: an existing topic of yours, or (unset) a topic the stack creates, which
    # alarm_email subscribes to (AWS sends a confirmation e-mail first).
    alarm_topic_arn: str | None = None
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    # Concurrency kept for the dispatcher, so that a busy worker or api cannot throttle its ticks.
    # Opt-in: Lambda refuses a reservation that leaves an account fewer than 10 unreserved, and a new
    # account's quota is 10, so any default reservation would fail a first deploy. Unset or 0: none.
    dispatcher_reserved_concurrency: int | None = Field(default=None, ge=0, le=1000)

    @field_validator(*_LIST_FIELDS, mode="before")
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        # From the command line every context value is a string: "a,b" or a JSON list.
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return tuple(json.loads(text))
            return tuple(part.strip() for part in text.split(",") if part.strip())
        return value

    @field_validator("api_gateway_cloudwatch_role", mode="before")
    @classmethod
    def _role_choice(cls, value: object) -> object:
        """The setting was a boolean: true (always set the role) and false (never) still read."""
        if isinstance(value, bool):
            return "always" if value else "never"
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return "always" if value.strip().lower() == "true" else "never"
        return value

    @field_validator("allowed_target_arns")
    @classmethod
    def _check_target_patterns(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            if pattern == ALLOW_ALL_TARGETS:
                continue
            service = target_service(pattern)
            if service not in TARGET_ACTIONS:
                raise ValueError(
                    f"allowed_target_arns: {pattern!r} is not an ARN of a Lambda function, SQS queue, "
                    "SNS topic or EventBridge bus (or '*' for all of them)"
                )
            if "[" in pattern or "]" in pattern:
                raise ValueError(f"allowed_target_arns: {pattern!r}: IAM patterns know only '*' and '?'")
        return patterns

    @field_validator("delivery_rights", mode="before")
    @classmethod
    def _read_rights(cls, value: Any) -> Any:
        # From the command line a JSON list; each right as the functions read it, or the reason.
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except json.JSONDecodeError as error:
                raise ValueError(f"delivery_rights: not a JSON list: {error.msg}") from error
        try:
            DeliveryRights.from_value(list(value) if isinstance(value, tuple) else value)
        except RightsError as error:
            raise ValueError(f"{error.field}: {error.reason}") from error
        return tuple(value)

    @field_validator("target_kms_key_arns")
    @classmethod
    def _check_key_arns(cls, arns: tuple[str, ...]) -> tuple[str, ...]:
        for arn in arns:
            if not _KMS_KEY_ARN.fullmatch(arn):
                raise ValueError(
                    f"target_kms_key_arns: {arn!r} is not a KMS key ARN "
                    "(arn:aws:kms:<region>:<account>:key/<key id>; not an alias, no wildcards)"
                )
        return arns

    @field_validator("log_retention_days")
    @classmethod
    def _check_log_retention(cls, days: int) -> int:
        if days not in LOG_RETENTION_DAYS:
            raise ValueError(f"log_retention_days must be one of {sorted(LOG_RETENTION_DAYS)}")
        return days

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        # Fails with the functions' own message if a runtime setting is out of range.
        self.runtime_settings()
        if self.worker_batch_size > 10 and self.worker_batching_window_seconds < 1:
            raise ValueError("worker_batch_size above 10 needs worker_batching_window_seconds >= 1")
        if self.api_auth == "api_key" and not self.api_key_names:
            raise ValueError("api_auth=api_key needs at least one name in api_key_names")
        if self.worker_provisioned_pollers is not None:
            if self.worker_max_concurrency is not None:
                # AWS refuses an event source mapping with both (CreateEventSourceMapping).
                raise ValueError(
                    "worker_max_concurrency cannot be set with worker_minimum_pollers or"
                    " worker_maximum_pollers: AWS takes a maximum concurrency or provisioned pollers,"
                    " not both (in provisioned mode the maximum pollers bound the invocations)"
                )
            minimum, maximum = self.worker_provisioned_pollers
            if minimum > maximum:
                raise ValueError(
                    f"worker_minimum_pollers ({minimum}) must not exceed worker_maximum_pollers ({maximum})"
                )
        for part in ("table", "index"):
            for unit in ("write", "read"):
                low, high = (
                    getattr(self, f"{part}_min_{unit}_units"),
                    getattr(self, f"{part}_max_{unit}_units"),
                )
                if low > high:
                    raise ValueError(
                        f"{part}_min_{unit}_units ({low}) must not exceed {part}_max_{unit}_units ({high})"
                    )
        reserved = self.dispatcher_concurrency
        if reserved is not None and reserved < self.sweep_invocations + 1:
            # A tick runs beside its fanned-out sweeps; fewer would throttle its own sweeps.
            raise ValueError(
                f"dispatcher_reserved_concurrency must be at least sweep_invocations + 1 "
                f"({self.sweep_invocations + 1}): a tick and its sweeps run at once"
            )
        return self

    @property
    def worker_maximum_concurrency(self) -> int | None:
        """The event source's MaximumConcurrency: the setting, or WORKER_MAX_CONCURRENCY; None in
        provisioned mode, where AWS takes none."""
        if self.worker_provisioned_pollers is not None:
            return None
        return self.worker_max_concurrency or WORKER_MAX_CONCURRENCY

    @property
    def worker_provisioned_pollers(self) -> tuple[int, int] | None:
        """The worker's event source in provisioned mode: (minimum, maximum) pollers, each defaulting
        to AWS's own (2 and 200) when only the other is set; None in the default mode."""
        if self.worker_minimum_pollers is None and self.worker_maximum_pollers is None:
            return None
        return (
            self.worker_minimum_pollers or PROVISIONED_MINIMUM_POLLERS,
            self.worker_maximum_pollers or PROVISIONED_MAXIMUM_POLLERS,
        )

    @property
    def dispatcher_concurrency(self) -> int | None:
        """The dispatcher's reserved concurrency, or None for no reservation (the default; 0 too,
        since a reservation of 0 would throttle every tick)."""
        return self.dispatcher_reserved_concurrency or None

    @property
    def may_target_sns(self) -> bool:
        """Whether jobs may publish to some SNS topic (the stack's own alarm topic among them)."""
        return any(
            pattern == ALLOW_ALL_TARGETS or target_service(pattern) == "sns"
            for pattern in self.allowed_target_arns
        )

    @property
    def is_production(self) -> bool:
        return self.stage == "prod"

    @property
    def name_prefix(self) -> str:
        return f"punctual-{self.stage}"

    def runtime_settings(
        self,
        *,
        table_name: str = "punctual",
        queue_url: str = "",
        dlq_url: str = "",
        region: str = "us-east-1",
        account_id: str = "",
        partition: str = "aws",
    ) -> Settings:
        """The functions' settings for this deployment, given the names of its table, queues, region,
        account and partition. The allow-list of targets is not among them: the API reads it from
        the table (punctual/cdk/functions.py writes it there)."""
        return Settings(
            table_name=table_name,
            queue_url=queue_url,
            dlq_url=dlq_url,
            region=region,
            account_id=account_id,
            partition=partition,
            api_auth=self.api_auth,
            owner_mode=self.owner_mode,
            shard_count=self.shard_count,
            lookahead_seconds=self.lookahead_seconds,
            min_interval_seconds=self.min_interval_seconds,
            run_retention_days=self.run_retention_days,
            audit_retention_days=self.audit_retention_days,
            run_trace_percent=self.run_trace_percent,
            http_allow_list=self.http_allow_list,
            sweep_invocations=self.sweep_invocations,
            dispatch_concurrency=self.dispatch_concurrency,
            head_start_ms=self.head_start_ms,
            delivery_rights_mode=self.delivery_rights_mode,
        )


class DeploymentConfig(SchedulerProps):
    """The project's own app's settings: a ``Scheduler``'s, and where its stack goes. Each field is the
    context key of the same name."""

    # Pin the stack to an account/region; by default the template is environment-agnostic.
    account: str | None = None
    region: str | None = None

    @property
    def props(self) -> SchedulerProps:
        """The ``Scheduler``'s share of these settings."""
        return SchedulerProps.model_validate(self.model_dump(exclude={"account", "region"}))

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> DeploymentConfig:
        """Read every field from a context getter (``node.try_get_context``); unset keys keep defaults."""
        values = {name: get(name) for name in cls.model_fields}
        return cls.model_validate({name: value for name, value in values.items() if value is not None})

    @classmethod
    def from_mapping(cls, context: Mapping[str, Any]) -> DeploymentConfig:
        return cls.from_context(context.get)


def target_service(arn_pattern: str) -> str | None:
    """The service of an ARN pattern (``arn:aws:sqs:...`` → ``sqs``), or None if it is not an ARN."""
    parts = arn_pattern.split(":")
    if len(parts) < 6 or parts[0] != "arn":
        return None
    return parts[2]

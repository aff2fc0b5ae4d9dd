"""Every figure the scale model uses, with its source and its default: the simulator (``punctual/sim/``) and
``punctual plan`` read them from here, and docs/scale.md lists them (``parameter_table``).

A figure AWS publishes cites the page; a published measurement cites who measured it; a figure
measured on this project cites the benchmark and its file under ``bench/results/``; a figure nobody
publishes says so and is a stated assumption, to be replaced by a measurement on AWS.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from typing import Any

from punctual.scale.prices import Prices, _about
from punctual.scale.sources import (
    AWS_DDB_LATENCY,
    AWS_DDB_ON_DEMAND,
    AWS_DDB_PARTITIONS,
    AWS_DDB_THROTTLING,
    AWS_DDB_WARM,
    AWS_ESM_SCALING_MODES,
    AWS_LAMBDA_LIFECYCLE,
    AWS_LAMBDA_MEMORY,
    AWS_LAMBDA_QUOTAS,
    AWS_LAMBDA_SCALING,
    AWS_POLLER_INVOCATIONS,
    AWS_PROVISIONED_POLLERS,
    AWS_SQS_ESM_SCALING,
    AWS_SQS_QUOTAS,
    AWS_SQS_TIMERS,
    BENCH_COLDSTART,
    BENCH_COST,
    BENCH_DISPATCH,
    BENCH_WORKER_CPU,
    BOTOCORE_STANDARD_RETRIES,
    ESM_LATENCY,
    EVENTBRIDGE_RULE,
)
from punctual_functions.core.resources import (
    API_MEMORY_MB,
    API_TABLE_ATTEMPTS,
    DISPATCHER_MEMORY_MB,
    TABLE_ATTEMPTS,
    WORKER_MEMORY_MB,
)


@dataclass(frozen=True)
class Parameters(Prices):
    """The model of AWS and of the engine's own costs. ``replace`` makes a variant (a scenario's)."""

    # ---------------------------------------------------------------------------------- DynamoDB
    ddb_partition_wcu: float = field(
        default=1000,
        metadata=_about(
            "WCU/s",
            AWS_DDB_PARTITIONS + "; " + AWS_DDB_THROTTLING,
            "write units a second on one partition key value (its reads limited apart)",
        ),
    )
    ddb_partition_rcu: float = field(
        default=3000,
        metadata=_about(
            "RCU/s",
            AWS_DDB_PARTITIONS + "; " + AWS_DDB_THROTTLING,
            "read units a second on one partition key value (its writes limited apart)",
        ),
    )
    ddb_table_wcu: float = field(
        default=40_000,
        metadata=_about(
            "WRU/s",
            AWS_DDB_ON_DEMAND,
            "on-demand table quota, writes (adjustable)",
        ),
    )
    ddb_table_rcu: float = field(
        default=40_000,
        metadata=_about(
            "RRU/s",
            AWS_DDB_ON_DEMAND,
            "on-demand table quota, reads (adjustable)",
        ),
    )
    ddb_initial_peak_wcu: float = field(
        default=2000,
        metadata=_about(
            "WRU/s",
            AWS_DDB_ON_DEMAND,
            "a new on-demand table's 'previous peak' (it serves double at once)",
        ),
    )
    ddb_initial_peak_rcu: float = field(
        default=6000,
        metadata=_about(
            "RRU/s",
            AWS_DDB_ON_DEMAND,
            "the same for reads",
        ),
    )
    ddb_index_initial_peak_wcu: float = field(
        default=2000,
        metadata=_about(
            "WRU/s",
            AWS_DDB_WARM,
            "a new owner index's 'previous peak' (it serves double at once, apart from the table; the"
            " table's on-demand quota applies to it too)",
        ),
    )
    ddb_index_initial_peak_rcu: float = field(
        default=6000,
        metadata=_about(
            "RRU/s",
            AWS_DDB_WARM,
            "the same for reads",
        ),
    )
    ddb_latency_ms: tuple[tuple[float, float], ...] = field(
        default=((0.0, 2.5), (0.5, 4.5), (0.9, 7.0), (0.99, 15.0), (1.0, 40.0)),
        metadata=_about(
            "quantile, ms",
            AWS_DDB_LATENCY,
            "round trip of one request from a Lambda in the table's region",
        ),
    )
    ddb_max_attempts: dict[str, int] = field(
        default_factory=lambda: {
            "dispatcher": TABLE_ATTEMPTS,
            "worker": TABLE_ATTEMPTS,
            "api": API_TABLE_ATTEMPTS,
        },
        metadata=_about(
            "attempts",
            BOTOCORE_STANDARD_RETRIES,
            "SDK attempts before a throttled request fails, per function",
        ),
    )
    ddb_max_backoff_seconds: float = field(
        default=20.0,
        metadata=_about(
            "s",
            BOTOCORE_STANDARD_RETRIES,
            "longest SDK backoff",
        ),
    )

    # --------------------------------------------------------------------------------------- SQS
    sqs_max_delay_seconds: int = field(
        default=900,
        metadata=_about(
            "s",
            AWS_SQS_TIMERS,
            "longest DelaySeconds (whole seconds)",
        ),
    )
    sqs_in_flight_limit: int = field(
        default=120_000,
        metadata=_about(
            "messages",
            AWS_SQS_QUOTAS,
            "standard queue, received and not deleted",
        ),
    )
    sqs_latency_ms: tuple[tuple[float, float], ...] = field(
        default=((0.0, 3.0), (0.5, 6.0), (0.9, 10.0), (0.99, 25.0), (1.0, 60.0)),
        metadata=_about(
            "quantile, ms",
            "not published as a distribution; a stated assumption (SQS 'single-digit to tens of ms')",
            "round trip of one SendMessageBatch / ChangeMessageVisibility / DeleteMessageBatch",
        ),
    )
    esm_latency_ms: tuple[tuple[float, float], ...] = field(
        default=(
            (0.0, 10.0),
            (0.1, 13.7),
            (0.5, 16.2),
            (0.9, 33.8),
            (0.99, 105.0),
            (0.999, 250.0),
            (1.0, 1000.0),
        ),
        metadata=_about(
            "quantile, ms",
            ESM_LATENCY + "; the tails below p10 and beyond p99 are assumed (one message in a thousand"
            " beyond the 250 ms head start, at most a second: such a run starts late)",
            "a message visible to the handler running with it (poll, batch, invoke)",
        ),
    )
    esm_initial_concurrency: int = field(
        default=5,
        metadata=_about(
            "batches",
            AWS_SQS_ESM_SCALING,
            "concurrent batches the mapping starts with",
        ),
    )
    esm_scale_per_minute: int = field(
        default=300,
        metadata=_about(
            "invocations/min",
            AWS_SQS_ESM_SCALING,
            "added each minute while messages wait",
        ),
    )
    esm_max_concurrency: int = field(
        default=1250,
        metadata=_about(
            "invocations",
            AWS_SQS_ESM_SCALING,
            "most concurrent batches (default mode)",
        ),
    )
    esm_maximum_concurrency_setting: int = field(
        default=1000,
        metadata=_about(
            "invocations",
            AWS_ESM_SCALING_MODES,
            "the most MaximumConcurrency may be set to (default mode; provisioned mode has none: its"
            " MaximumPollers bound it)",
        ),
    )
    esm_maximum_pollers: int = field(
        default=2000,
        metadata=_about(
            "pollers",
            AWS_ESM_SCALING_MODES,
            "provisioned mode: the most MaximumPollers may be set to (200 when unset)",
        ),
    )
    esm_provisioned_scale_per_minute: int = field(
        default=1000,
        metadata=_about(
            "invocations/min",
            AWS_PROVISIONED_POLLERS,
            "provisioned mode: scaling a minute",
        ),
    )
    esm_provisioned_max_concurrency: int = field(
        default=20_000,
        metadata=_about(
            "invocations",
            AWS_PROVISIONED_POLLERS,
            "provisioned mode: most concurrent executions",
        ),
    )
    esm_invocations_per_poller: int = field(
        default=10,
        metadata=_about(
            "invocations",
            AWS_POLLER_INVOCATIONS,
            "provisioned mode: concurrent invocations one event poller serves (MinimumPollers of"
            " them are kept ready, at most 200)",
        ),
    )

    # ------------------------------------------------------------------------------------ Lambda
    lambda_account_concurrency: int = field(
        default=1000,
        metadata=_about(
            "executions",
            AWS_LAMBDA_QUOTAS,
            "account concurrency (default quota)",
        ),
    )
    lambda_scaling_environments: int = field(
        default=1000,
        metadata=_about(
            "environments / 10 s",
            AWS_LAMBDA_SCALING,
            "new execution environments a function may get in 10 s (a cold start beyond it is throttled)",
        ),
    )
    lambda_idle_expiry_seconds: float = field(
        default=300.0,
        metadata=_about(
            "s",
            AWS_LAMBDA_LIFECYCLE,
            "an execution environment left idle this long is gone (its next invocation starts cold)",
        ),
    )
    lambda_environment_lifetime_seconds: float = field(
        default=7200.0,
        metadata=_about(
            "s",
            AWS_LAMBDA_LIFECYCLE,
            "an execution environment is replaced after this long, however busy it is",
        ),
    )
    lambda_full_vcpu_mb: int = field(
        default=1769,
        metadata=_about(
            "MB",
            AWS_LAMBDA_MEMORY,
            "memory at which a function has one full vCPU",
        ),
    )
    lambda_invoke_ms: float = field(
        default=15.0,
        metadata=_about(
            "ms",
            "not published; a stated assumption (asynchronous Invoke to handler start, warm)",
            "fan-out latency",
        ),
    )
    cold_start_ms: dict[str, float] = field(
        default_factory=lambda: {"dispatcher": 177.5 + 100.0, "worker": 208.0 + 100.0, "api": 191.6 + 100.0},
        metadata=_about(
            "ms",
            BENCH_COLDSTART + " (import, as deployed) plus an assumed 100 ms for the runtime's own start",
            "a new execution environment's start, per function",
        ),
    )
    memory_mb: dict[str, int] = field(
        default_factory=lambda: {
            "dispatcher": DISPATCHER_MEMORY_MB,
            "worker": WORKER_MEMORY_MB,
            "api": API_MEMORY_MB,
        },
        metadata=_about(
            "MB",
            "the deployment's defaults (punctual_functions/core/resources.py)",
            "memory per function (CPU in proportion)",
        ),
    )

    # ---------------------------------------------------------------------- the engine's own CPU
    # On this machine's core (one full vCPU: 1,769 MB on Lambda). What the engine's Python does
    # around each request (building it, signing, parsing the answer) dominates: the dispatch bench
    # (bench/dispatch.py) measures 1.9-2.7 ms of dispatcher CPU per dispatch over 1.2-1.5 requests per
    # dispatch.
    cpu_per_request_ms: float = field(
        default=1.8,
        metadata=_about(
            "ms",
            BENCH_DISPATCH,
            "CPU of one AWS request on the boto3 path (one vCPU)",
        ),
    )
    cpu_per_kb_ms: float = field(
        default=0.15,
        metadata=_about(
            "ms",
            BENCH_COST + "; a stated split of the per-request figure",
            "CPU per KB of items a request carries (the SDK serializes and parses them)",
        ),
    )
    cpu_per_record_ms: float = field(
        default=0.5,
        metadata=_about(
            "ms",
            BENCH_WORKER_CPU + " (6.0 ms a run in batches of ten at 14:30 UTC on 2026-11-26, less its 3.2"
            " requests and a tenth of an invocation, the remainder rounded up; the same code measured 8.2 ms"
            " an hour later: this machine's speed varies by half)",
            "worker CPU per record besides its requests",
        ),
    )
    cpu_per_invocation_ms: float = field(
        default=3.0,
        metadata=_about(
            "ms",
            "a stated assumption (Powertools' logger and batch processor per invocation)",
            "CPU per invocation",
        ),
    )

    send_delay_ms: tuple[tuple[float, float], ...] = field(
        default=((0.0, 0.1), (0.1, 0.26), (0.5, 0.33), (0.9, 0.42), (0.99, 1.7), (1.0, 5.6)),
        metadata=_about(
            "quantile, ms",
            "a stated assumption: the local stack's, measured (bench/results/calibration.json, its"
            " lightest load); on AWS a webhook in the same region adds its network's first hop",
            "from a worker's wait ending at the second to the request's first bytes at the target",
        ),
    )

    # ------------------------------------------------------------------------------- EventBridge
    tick_delay_ms: tuple[tuple[float, float], ...] = field(
        default=((0.0, 100.0), (0.5, 500.0), (1.0, 2000.0)),
        metadata=_about(
            "quantile, ms",
            EVENTBRIDGE_RULE + "; a stated assumption",
            "a tick's start after its minute begins",
        ),
    )

    def vcpu(self, function: str) -> float:
        """The share of a vCPU one execution environment of ``function`` has (one thread: at most 1)."""
        return min(1.0, self.memory_mb[function] / self.lambda_full_vcpu_mb)

    def replace(self, **changes: Any) -> Parameters:
        return replace(self, **changes)


DEFAULTS = Parameters()
PRICE_FIELDS = frozenset(spec.name for spec in fields(Prices))


def parameter_table(parameters: Parameters = DEFAULTS) -> list[dict[str, Any]]:
    """Every parameter with its value, unit, meaning and source (docs/scale.md prints this)."""
    return [
        {
            "name": spec.name,
            "value": getattr(parameters, spec.name),
            "unit": spec.metadata["unit"],
            "what": spec.metadata["what"],
            "source": spec.metadata["source"],
        }
        # The model's own first, the prices (inherited) last.
        for spec in sorted(fields(parameters), key=lambda spec: spec.name in PRICE_FIELDS)
    ]


def quantile(points: tuple[tuple[float, float], ...], u: float) -> float:
    """The value at quantile ``u`` (0..1) of a distribution given by points (quantile, value), linear
    between them: a sample when ``u`` is uniform."""
    for (q0, v0), (q1, v1) in itertools.pairwise(points):
        if u <= q1:
            return v0 if q1 == q0 else v0 + (v1 - v0) * (u - q0) / (q1 - q0)
    return points[-1][1]

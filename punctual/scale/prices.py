"""The prices and the cost figures of the scale model: what AWS charges (us-east-1), and what a
run or an invocation leaves behind to be charged for. ``Parameters`` (``params.py``) extends them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def _about(unit: str, source: str, what: str) -> dict[str, str]:
    return {"unit": unit, "source": source, "what": what}


@dataclass(frozen=True)
class Prices:
    """Prices a unit, and the sizes and shares the costs count."""

    usd_per_million_wru: float = field(
        default=0.625,
        metadata=_about(
            "$",
            "DynamoDB pricing, on-demand, us-east-1",
            "write request units",
        ),
    )
    usd_per_million_rru: float = field(
        default=0.125,
        metadata=_about(
            "$",
            "DynamoDB pricing, on-demand, us-east-1",
            "read request units",
        ),
    )
    usd_per_wcu_hour: float = field(
        default=0.00065,
        metadata=_about(
            "$",
            "DynamoDB pricing, provisioned capacity, us-east-1",
            "a write capacity unit provisioned for an hour",
        ),
    )
    usd_per_rcu_hour: float = field(
        default=0.00013,
        metadata=_about(
            "$",
            "DynamoDB pricing, provisioned capacity, us-east-1",
            "a read capacity unit provisioned for an hour",
        ),
    )
    ddb_target_utilization: float = field(
        default=0.70,
        metadata=_about(
            "share",
            "Amazon DynamoDB Developer Guide, 'Managing throughput capacity automatically with DynamoDB"
            " auto scaling': target utilization 20 to 90 percent, 70 by default",
            "provisioned mode: consumed units over provisioned, as auto scaling keeps it at a steady load",
        ),
    )
    usd_per_million_sqs: float = field(
        default=0.40,
        metadata=_about(
            "$",
            "SQS pricing, standard, us-east-1",
            "requests (64 KB chunks)",
        ),
    )
    usd_per_million_lambda_requests: float = field(
        default=0.20,
        metadata=_about(
            "$",
            "Lambda pricing, us-east-1",
            "requests",
        ),
    )
    usd_per_gb_second: float = field(
        default=0.0000133334,
        metadata=_about(
            "$",
            "Lambda pricing, arm64, us-east-1",
            "duration",
        ),
    )
    usd_per_poller_hour: float = field(
        default=0.00925,
        metadata=_about(
            "$",
            "Lambda pricing, us-east-1, Provisioned Mode for SQS event source mappings (its pricing"
            " example: $0.00925 per EPU-hour; its 10 minimum pollers use about 7,200 EPU-hours a month,"
            " so an event poller is taken as one EPU)",
            "an event poller of provisioned mode for an hour",
        ),
    )
    usd_per_million_api_requests: float = field(
        default=1.00,
        metadata=_about(
            "$",
            "API Gateway pricing, HTTP API, us-east-1",
            "requests",
        ),
    )

    lambda_log_tiers: tuple[tuple[float, float], ...] = field(
        default=((10.0, 0.50), (30.0, 0.25), (50.0, 0.10), (math.inf, 0.05)),
        metadata=_about(
            "TB a month: $ a GB",
            "AWS What's New, 1 May 2025, 'AWS Lambda introduces tiered pricing for Amazon CloudWatch"
            " logs'; CloudWatch pricing, vended logs, Lambda, Standard class, us-east-1: the first 10 TB"
            " a month $0.50 a GB, the next 20 TB $0.25, the next 20 TB $0.10, beyond 50 TB $0.05 (60 TB"
            " a month: $12,500 instead of $30,000)",
            "Lambda's logs ingested, priced by the month's volume of the account's Lambda logs: the"
            " tiers' upper bounds and their price",
        ),
    )
    log_bytes_per_run: int = field(
        default=650,
        metadata=_about(
            "bytes",
            "measured: the worker's outcome line as its JSON logger writes it in Lambda, about 600"
            " bytes, and X-Ray's trace id (tests/unit/test_costs.py keeps this within a quarter of it)",
            "logs a run writes (one line at INFO)",
        ),
    )
    log_bytes_per_invocation: int = field(
        default=500,
        metadata=_about(
            "bytes",
            "AWS Lambda Developer Guide, 'Lambda telemetry API' (platform.start, platform.runtimeDone,"
            " platform.report an invocation); their size here is assumed",
            "logs Lambda's platform writes an invocation",
        ),
    )
    xray_sampled_share: float = field(
        default=0.05,
        metadata=_about(
            "share",
            "AWS X-Ray Developer Guide, 'Sampling': the default rule records the first request each"
            " second and five percent of any additional requests",
            "invocations traced (active tracing, at load)",
        ),
    )
    usd_per_million_traces: float = field(
        default=5.00,
        metadata=_about(
            "$",
            "AWS X-Ray pricing, us-east-1",
            "traces recorded",
        ),
    )
    run_item_bytes: int = field(
        default=600,
        metadata=_about(
            "bytes",
            "measured: a succeeded run's item as the table stores it, its target's answer short (the"
            " excerpt kept of an answer adds up to 4 KiB; tests/unit/test_costs.py keeps this within a"
            " quarter of it)",
            "the history a run leaves in the table, for its retention",
        ),
    )
    usd_per_gb_month_ddb: float = field(
        default=0.25,
        metadata=_about(
            "$",
            "DynamoDB pricing, on-demand, us-east-1",
            "a GB-month of table storage (Standard table class)",
        ),
    )
    usd_per_gb_month_pitr: float = field(
        default=0.20,
        metadata=_about(
            "$",
            "DynamoDB pricing, on-demand, us-east-1",
            "a GB-month of continuous backups (point-in-time recovery, which the stack turns on)",
        ),
    )

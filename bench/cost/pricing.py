"""The cost benchmark's pricing arithmetic: a scenario's per-job figures turned into dollars per
million jobs by service (``bench.prices``), the idle sweep's units per tick and its cost a month on
AWS, and the note on how the capacity units are counted."""

from __future__ import annotations

from typing import Any

from bench import prices
from bench.cost.analysis import Units, _idle_ticks, _units
from bench.cost.stack import AWS_SHARDS, SHARDS, TICKS_PER_MONTH


def _dollars(figures: dict[str, Any], *, include_create: bool) -> dict[str, Any]:
    """Dollars per million jobs, by service, from the per-job figures of one scenario. DynamoDB
    on demand is billed per request unit: one per capacity unit consumed (the computed ones)."""
    requests = figures["requests_per_job"]
    wcu = figures["dynamodb_capacity_per_job"]["wcu"]
    rcu = figures["dynamodb_capacity_per_job"]["rcu"]
    sqs_function = sum(
        n
        for who in ("api", "dispatcher", "worker")
        for op, n in requests[who].items()
        if op.startswith("sqs:")
    )
    sqs_esm = sum(requests["esm"].values())
    worker_invocations = figures["worker_invocations"] / max(1, figures["executions"])
    gb_seconds = (
        figures["worker_seconds_per_job"] * prices.MEMORY_GB["worker"]
        + figures["dispatcher_seconds_per_job"] * prices.MEMORY_GB["dispatcher"]
    )
    api_requests = 0.0
    if include_create:
        gb_seconds += (
            figures["api_seconds_per_create"]
            * prices.MEMORY_GB["api"]
            * figures["api_creates"]
            / max(1, figures["executions"])
        )
        # API calls, not jobs: a batch creates up to a hundred jobs in one.
        api_requests = figures["api_creates"] / max(1, figures["executions"])
    log_bytes = sum(figures["log_bytes_per_job"].values())
    million = 1e6
    lines = {
        "dynamodb_writes": wcu * prices.DYNAMODB_WRITE_REQUEST_UNIT * million,
        "dynamodb_reads": rcu * prices.DYNAMODB_READ_REQUEST_UNIT * million,
        "sqs_function_requests": sqs_function * prices.SQS_REQUEST * million,
        "sqs_event_source_mapping": sqs_esm * prices.SQS_REQUEST * million,
        "lambda_requests": (worker_invocations + api_requests) * prices.LAMBDA_REQUEST * million,
        "lambda_duration": gb_seconds * prices.LAMBDA_GB_SECOND_ARM64 * million,
        # The default deployment (IAM) serves an HTTP API; one with API keys a REST API (below).
        "api_gateway": api_requests * prices.API_GATEWAY_HTTP_REQUEST * million,
        "cloudwatch_logs": log_bytes / 1e9 * prices.CLOUDWATCH_LOGS_INGESTED_GB * million,
    }
    aws_requests = (
        sum(n for who in ("api", "dispatcher", "worker") for n in requests[who].values())
        + sqs_esm
        + worker_invocations
        + 2 * api_requests  # the API Gateway request and the api invocation
    )
    return {
        "aws_requests_per_job": round(aws_requests, 2),
        "dynamodb_requests_per_job": round(
            sum(n for ops in requests.values() for op, n in ops.items() if op.startswith("dynamodb:")), 2
        ),
        "wcu_per_job": round(wcu, 2),
        "rcu_per_job": round(rcu, 2),
        "sqs_requests_per_job": round(sqs_function + sqs_esm, 2),
        "lambda_gb_seconds_per_job": round(gb_seconds, 4),
        "usd_per_million_jobs": {k: round(v, 2) for k, v in lines.items()},
        "usd_per_million_jobs_total": round(sum(lines.values()), 2),
        "usd_per_million_jobs_without_logs": round(sum(lines.values()) - lines["cloudwatch_logs"], 2),
        "usd_per_million_jobs_total_api_key_mode": round(
            sum(lines.values())
            + api_requests * (prices.API_GATEWAY_REST_REQUEST - prices.API_GATEWAY_HTTP_REQUEST) * million,
            2,
        ),
    }


def _idle(
    events: list[dict[str, Any]],
    warmup_until: float,
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
) -> dict[str, Any]:
    ticks = _idle_ticks(events, warmup_until)
    n = max(1, len(ticks))
    by_op: dict[str, Units] = {}
    for tick in ticks:
        for call in tick["calls"]:
            by_op.setdefault(call["op"], Units()).add(_units(call, sizes, put_sizes))
    units_per_tick = {op: {k: v / n for k, v in vars(units).items()} for op, units in sorted(by_op.items())}
    requests = {op: round(u["requests"], 2) for op, u in units_per_tick.items()}
    wcu = sum(u["wcu"] for u in units_per_tick.values())
    rcu = sum(u["rcu"] for u in units_per_tick.values())
    seconds = sum(t["tick"]["duration"] for t in ticks) / n
    scale = AWS_SHARDS / SHARDS
    month_requests = sum(requests.values()) * scale * TICKS_PER_MONTH
    month = {
        "dynamodb": (wcu * prices.DYNAMODB_WRITE_REQUEST_UNIT + rcu * prices.DYNAMODB_READ_REQUEST_UNIT)
        * scale
        * TICKS_PER_MONTH,
        "lambda": TICKS_PER_MONTH
        * (prices.LAMBDA_REQUEST + seconds * prices.MEMORY_GB["dispatcher"] * prices.LAMBDA_GB_SECOND_ARM64),
    }
    return {
        "idle_ticks_measured": len(ticks),
        "requests_per_tick": requests,
        "wcu_per_tick": round(wcu, 2),
        "rcu_per_tick": round(rcu, 2),
        "reported_wcu_per_tick": round(sum(u["reported_wcu"] for u in units_per_tick.values()), 2),
        "reported_rcu_per_tick": round(sum(u["reported_rcu"] for u in units_per_tick.values()), 2),
        "units_per_tick": units_per_tick,
        "seconds_per_tick": round(seconds, 4),
        "shards": SHARDS,
        "per_month_on_aws": {
            "assumes": f"{AWS_SHARDS} shards (requests scale with shards), a tick a minute,"
            " tick durations as measured here",
            "requests": round(month_requests),
            "usd": {k: round(v, 2) for k, v in month.items()},
        },
    }


# Headline figures of a scenario: each as the median over the repetitions, with the spread.
CAPACITY_NOTE = (
    "rcu/wcu: computed from the item sizes by DynamoDB's rules (1 WCU per KB written per item, 2 in a"
    " transaction; 1 RCU per 4 KB read strongly consistent, half eventually consistent, 2 in a"
    " transaction); they price the jobs. reported_*: the ConsumedCapacity the emulator answered"
    " (ReturnConsumedCapacity=TOTAL on every request): moto reports a fixed figure per request"
    " (0.5 per GetItem and UpdateItem, 1 per PutItem, DeleteItem, Query and BatchWriteItem whatever the"
    " size, 1 per key of a BatchGetItem) and nothing for TransactWriteItems, so they are shown, not used."
)

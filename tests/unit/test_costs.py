"""What the planner and the simulator price beyond requests and compute (punctual/scale/costs.py):
the measured figures they use stay near what the code writes, and each item is in the plan."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from punctual.scale.costs import MINUTES_A_MONTH, Usage, operating_usd, poller_hours_a_month, usd_per_log_gb
from punctual.scale.params import DEFAULTS
from punctual.scale.plan import plan
from punctual.scale.sizes import item_size
from punctual_functions.core.model import Attempt, Run, RunKind, RunStatus
from punctual_functions.core.model.ids import new_job_id, run_id_for
from punctual_functions.core.observability import logger
from punctual_functions.core.store.items import run_to_item
from punctual_functions.core.targets.outcome import traceparent_of

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _succeeded_run() -> Run:
    job_id = new_job_id()
    attempt = Attempt(
        number=1,
        started_at=NOW,
        finished_at=NOW + timedelta(milliseconds=48),
        outcome="SUCCEEDED",
        duration_ms=48,
        status_code=200,
        error=None,
        response='{"ok": true}',
    )
    return Run(
        job_id=job_id,
        run_id=run_id_for(job_id, NOW),
        owner="arn:aws:iam::123456789012:role/orders-service",
        scheduled_for=NOW,
        status=RunStatus.SUCCEEDED,
        kind=RunKind.SCHEDULED,
        attempt=1,
        executions=1,
        job_version=1,
        queued_at=NOW - timedelta(seconds=40),
        started_at=NOW,
        finished_at=NOW + timedelta(milliseconds=48),
        lateness_ms=0,
        attempts=(attempt,),
    )


def test_a_runs_log_line_is_what_the_cost_counts() -> None:
    """The worker's outcome line, as its JSON logger writes it in Lambda (with Lambda's context keys):
    within a quarter of ``log_bytes_per_run``."""
    run = _succeeded_run()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.handlers[0].formatter)
    standard = logging.getLogger(logger.service)  # the logging.Logger Powertools writes through
    standard.addHandler(handler)
    level = logger.log_level
    logger.setLevel(logging.INFO)
    context = SimpleNamespace(
        function_name="punctual-prod-worker",
        function_version="$LATEST",
        memory_limit_in_mb=768,
        invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:punctual-prod-worker",
        aws_request_id="6f1c2a52-0d4e-4b8e-9d6b-5f3a9e2c7b10",
    )

    @logger.inject_lambda_context
    def invocation(event: dict[str, object], _context: object) -> None:
        logger.info(
            "run succeeded",
            extra={
                "job_id": run.job_id,
                "run_id": run.run_id,
                "attempt": 1,
                "lateness_ms": 0,
                "hold_ms": 231,
                "duration_ms": 48,
                "status_code": 200,
                "error": None,
                "traceparent": traceparent_of(run.job_id, run.run_id, 1),
            },
        )

    try:
        invocation({}, context)
    finally:
        standard.removeHandler(handler)
        logger.setLevel(level)
    line = stream.getvalue().strip().splitlines()[-1]
    assert json.loads(line)["message"] == "run succeeded"
    measured = len(line.encode()) + 1  # and its newline
    assert abs(DEFAULTS.log_bytes_per_run - measured) <= measured / 4, measured


def test_a_runs_history_is_what_the_cost_counts() -> None:
    """A succeeded run's item, as the table stores it: within a quarter of ``run_item_bytes``."""
    measured = item_size(run_to_item(_succeeded_run(), NOW + timedelta(days=30)))
    assert abs(DEFAULTS.run_item_bytes - measured) <= measured / 4, measured


def test_logs_traces_and_history_grow_with_what_a_load_uses() -> None:
    usage = Usage(runs=1e6, invocations=2e5, run_bytes=4e8, poller_hours=10)
    base = operating_usd(DEFAULTS, usage, retention_days=30)
    assert set(base) == {"logs", "traces", "run storage", "pollers"} and all(usd > 0 for usd in base.values())
    assert base["pollers"] == 10 * 0.00925
    longer = operating_usd(DEFAULTS, usage, retention_days=90)
    assert longer["run storage"] == base["run storage"] * 3 and longer["logs"] == base["logs"]
    busier = operating_usd(DEFAULTS, Usage(runs=1e6, invocations=4e5, run_bytes=4e8), retention_days=30)
    assert busier["traces"] == 2 * base["traces"] and busier["logs"] > base["logs"]
    assert poller_hours_a_month(117) == 117 * 730


def test_the_plan_prices_logs_traces_and_run_history() -> None:
    usd = plan(1_000_000).usd_per_million
    assert usd["logs"] > 0 and usd["traces"] > 0 and usd["run storage"] > 0


def test_lambdas_logs_are_priced_by_the_months_volume() -> None:
    """CloudWatch's tiers for Lambda's logs: 60 TB a month cost $12,500, not 60,000 GB at $0.50."""
    assert usd_per_log_gb(DEFAULTS, 0) == usd_per_log_gb(DEFAULTS, 5_000) == 0.50
    assert round(usd_per_log_gb(DEFAULTS, 60_000) * 60_000) == 12_500
    assert round(usd_per_log_gb(DEFAULTS, 30_000) * 30_000) == 10_000
    usage = Usage(runs=1e6, invocations=2e5, run_bytes=4e8)
    light = operating_usd(DEFAULTS, usage, retention_days=30, runs_a_month=1e8)
    dense = operating_usd(DEFAULTS, usage, retention_days=30, runs_a_month=1e6 * MINUTES_A_MONTH)
    assert light["logs"] == operating_usd(DEFAULTS, usage, retention_days=30)["logs"]
    assert dense["logs"] < 0.7 * light["logs"] and dense["traces"] == light["traces"]


def test_a_steady_million_pays_the_lower_tiers_and_a_spike_the_first() -> None:
    steady, spike = plan(1_000_000).usd_per_million, plan(1_000_000, spike=True).usd_per_million
    assert steady["logs"] < 0.7 * spike["logs"]
    assert plan(1_000).usd_per_million["logs"] >= 0.5 * 1e6 * DEFAULTS.log_bytes_per_run / 1e9

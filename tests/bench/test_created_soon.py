"""The created-soon benchmark's plan and figures (bench/created_soon.py), without a stack."""

from __future__ import annotations

import json
import logging
import random
from typing import Any

from bench import created_soon
from bench.common import worker_holds
from punctual.local.logs import ReadableFormatter


def test_the_plan_mixes_a_sweep_sent_job_into_every_eleven_creates() -> None:
    planned = created_soon._plan(random.Random(1), 200)
    assert [job.sender for job in planned].count("api") == 200
    assert [job.sender for job in planned].count("sweep") == 20
    assert all(job.sender == "sweep" for job in planned[::11])
    for job in planned:
        low, high = created_soon.API_SENT_AHEAD if job.sender == "api" else created_soon.SWEEP_SENT_AHEAD
        assert low <= job.ahead <= high
    assert created_soon.API_SENT_AHEAD[1] < created_soon.LOOKAHEAD_SECONDS < created_soon.SWEEP_SENT_AHEAD[0]


def test_holds_are_read_from_the_worker_s_outcome_lines_only() -> None:
    lines = [
        json.dumps({"message": "run succeeded", "job_id": "job_a", "hold_ms": 812, "lateness_ms": 0}),
        json.dumps({"message": "run failed", "job_id": "job_b", "hold_ms": -49, "lateness_ms": 72}),
        json.dumps({"message": "sweep finished", "job_id": "job_c", "hold_ms": 5}),
        "  punctual: worker-1 exited with -9; restarting",
        "{not json",
    ]
    assert worker_holds("\n".join(lines)) == {"job_a": 812.0, "job_b": -49.0}


def test_holds_are_read_from_the_local_stack_s_readable_lines_too() -> None:
    """The lines as the local stack's own formatter writes them (``PUNCTUAL_LOG_FORMAT=text``)."""
    formatter = ReadableFormatter("worker-1")

    def line(message: str, **extra: object) -> str:
        record = logging.LogRecord("punctual", logging.INFO, __file__, 1, message, None, None)
        record.__dict__.update(extra)
        return formatter.format(record)

    lines = [
        line("run succeeded", job_id="job_a", run_id="r1", attempt=1, hold_ms=812, lateness_ms=0),
        line("retry scheduled", job_id="job_b", run_id="r2", attempt=1, hold_ms=-49, lateness_ms=72),
        line("sweep finished", job_id="job_c", hold_ms=5),
        line("run succeeded", job_id="job_d", run_id="r3"),  # no hold: not read
    ]
    assert worker_holds("\n".join(lines)) == {"job_a": 812.0, "job_b": -49.0}


def _run(p99: float, maximum: float, lost: int = 0) -> dict[str, Any]:
    figures = {
        "jobs": 10,
        "most_due_at_one_second": 3,
        "lost": lost,
        "early": 0,
        "duplicates": 0,
        "lateness_ms": {"count": 10, "p50": 1.0, "p95": p99, "p99": p99, "max": maximum},
        "handled_lateness_ms": {"count": 10, "p50": 1.5, "p95": p99 + 1, "p99": p99 + 1, "max": maximum + 1},
        "hold_ms": {"count": 10, "min": 250, "p50": 700, "p99": 1200, "max": 1240},
    }
    return {"api": figures, "sweep": figures}


def test_a_target_is_met_only_when_every_run_meets_it() -> None:
    sizes = {"200": created_soon._aggregate([_run(4.0, 9.0), _run(12.0, 20.0), _run(5.0, 8.0)])}
    met = created_soon._targets(sizes)
    assert met["200 api-sent: p99 <= 10 ms"] is False
    assert met["200 api-sent: max <= 25 ms"] is True
    assert met["200 api-sent: none lost, early or twice"] is True
    assert sizes["200"]["api"]["lateness_ms"]["p99"] == {"median": 5.0, "min": 4.0, "max": 12.0, "runs": 3}
    lost = created_soon._targets({"200": created_soon._aggregate([_run(4.0, 9.0, lost=1)])})
    assert lost["200 sweep-sent: none lost, early or twice"] is False

"""The simulator set beside what the local stack measured (docs/scale.md, "Calibration").

The simulator runs with the local stack's parameters (``LOCAL``: the emulator's request latencies, a
full core per process, the local workers' 51 invocations, a tick on the wall clock, no cold starts)
at the load of ``bench/precision/``, and its figures are compared with the measured ones in
``bench/results/precision.json`` and ``bench/results/cost.json``, each within a tolerance stated here
(``CHECKS``). ``tests/sim/test_calibration.py`` runs it: a change of the engine or of the models that
moves a figure out of its tolerance fails there.

    python -m punctual.sim.calibration      # the comparison as JSON
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS
from punctual.sim.report import percentile
from punctual.sim.scenarios import Load, Scenario, build, expected_in
from punctual_functions.core.observability import logger

# The measurements it is compared with: the checkout's benchmark results (make bench writes them).
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
FULL_CORE_MB = 1769

# The local stack as bench/precision/ runs it (its "config"): 4 shards, the defaults' look-ahead
# and head start, a tick a minute on the wall clock, 3 worker processes sharing the event source's
# 50 invocations (17 each: punctual/local/roles.py), batches of 10.
LOCAL_WORKER_CONCURRENCY = 3 * 17
LOCAL_DEPLOYMENT = Deployment(
    shard_count=4,
    lookahead_seconds=120,
    worker_max_concurrency=LOCAL_WORKER_CONCURRENCY,
    memory_mb={"dispatcher": FULL_CORE_MB, "worker": FULL_CORE_MB, "api": FULL_CORE_MB},
)


# A message visible to a local poller's handler: the emulator's long poll wakes when the next message
# becomes visible (punctual/local/emulator.py), so within a millisecond or so. Read off the
# calibration bench's lightest load (its hold), checked at the two others (``distributions.py``).
LOCAL_POLL_MS = ((0.0, 0.1), (0.5, 0.5), (0.9, 1.0), (0.99, 5.0), (1.0, 20.0))
# From a worker's wait ending at the second to the request's first bytes at the receiver, as the
# calibration bench's lightest load measured its lateness (p10 0.26, p50 0.33, p90 0.42, p99 1.7 ms).
LOCAL_SEND_DELAY_MS = ((0.0, 0.1), (0.1, 0.26), (0.5, 0.33), (0.9, 0.42), (0.99, 1.7), (1.0, 5.6))


# The emulator's figures, as bench/results/dispatch.json measures them single-threaded (a GetItem or
# PutItem 7 to 10 ms, a SendMessageBatch 33 to 43 ms, less the SDK's CPU the simulator charges apart).
LOCAL = DEFAULTS.replace(
    ddb_latency_ms=((0.0, 3.0), (0.5, 6.0), (0.9, 10.0), (0.99, 25.0), (1.0, 60.0)),
    sqs_latency_ms=((0.0, 10.0), (0.5, 30.0), (0.9, 40.0), (0.99, 60.0), (1.0, 100.0)),
    esm_latency_ms=LOCAL_POLL_MS,
    send_delay_ms=LOCAL_SEND_DELAY_MS,
    esm_initial_concurrency=LOCAL_WORKER_CONCURRENCY,
    esm_scale_per_minute=0,
    cold_start_ms={"dispatcher": 0.0, "worker": 0.0, "api": 0.0},
    tick_delay_ms=((0.0, 0.0), (1.0, 20.0)),  # a thread that sleeps until the minute
)

# The precision bench's load: 215 one-offs spread over 130 s (about 100 a minute), created 10 to
# 200 s ahead (inside and beyond the look-ahead), and crons (three every 10 s there; here 15% of the
# jobs, a rate of one minute: the simulator's crons).
SCENARIO = Scenario(
    "the local precision bench's load",
    Load(100, minutes=2, cron_fraction=0.15, lead_seconds=(10.0, 200.0)),
    LOCAL_DEPLOYMENT,
    LOCAL,
)


# The cost bench's one_off_ahead (bench/results/cost.json, "config"): one-offs created beyond the
# look-ahead, dispatched by the tick (every 10 s there, a 60 s look-ahead, 4 shards, one worker
# process of 50 invocations).
COST_DEPLOYMENT = Deployment(
    shard_count=4,
    lookahead_seconds=60,
    tick_seconds=10,
    worker_max_concurrency=50,
    memory_mb={"dispatcher": FULL_CORE_MB, "worker": FULL_CORE_MB, "api": FULL_CORE_MB},
)
AHEAD = Scenario(
    "the cost bench's one-offs created beyond the look-ahead",
    Load(60, minutes=1, cron_fraction=0.0, lead_seconds=(70.0, 120.0), warmup_minutes=0),
    COST_DEPLOYMENT,
    LOCAL.replace(esm_initial_concurrency=50),
)
# The writes every one-off job makes whatever the tick and the density: (function, operation) as the
# cost bench names them.
WRITES = (("api", "PutItem"), ("dispatcher", "PutItem"), ("worker", "UpdateItem"))
# And the read a one-off job's dispatch no longer makes (its trigger, read from its bucket, is its
# job): none.
READS = (("dispatcher", "GetItem"),)


@dataclass(frozen=True)
class Check:
    """One figure: where it was measured, how the simulation gives it, how far apart they may be."""

    name: str
    measured: Callable[[dict[str, Any]], float]
    tolerance: float  # in the figure's unit
    why: str


def _hold(statistic: str) -> Callable[[dict[str, Any]], float]:
    return lambda results: float(results["cost"]["scenarios"]["one_off_ahead"]["spread"][statistic]["median"])


# The distributions of lateness and hold are compared apart (``distributions.py``); these compare the
# cost bench's hold, a different measurement from the one the poll was read off.
CHECKS = {
    "hold_p50_ms": Check(
        "hold (due minus the message's arrival at a worker), p50",
        _hold("hold_ms_median"),
        40.0,
        "bench/results/cost.json, one_off_ahead: the hold from the worker's outcome lines",
    ),
    "hold_p99_ms": Check(
        "hold, p99",
        _hold("hold_ms_p99"),
        60.0,
        "the same, p99",
    ),
}


def _requests(function: str, operation: str) -> Callable[[dict[str, Any]], float]:
    def read(results: dict[str, Any]) -> float:
        per_job = results["cost"]["scenarios"]["one_off_ahead"]["median"]["requests_per_job"]
        return float(per_job.get(function, {}).get(f"dynamodb:{operation}", 0.0))

    return read


def _wcu(function: str, operation: str) -> Callable[[dict[str, Any]], float]:
    def read(results: dict[str, Any]) -> float:
        by_operation = results["cost"]["scenarios"]["one_off_ahead"]["median"][
            "dynamodb_capacity_per_job_by_operation"
        ]
        return float(by_operation.get(f"{function} dynamodb:{operation}", {}).get("wcu", 0.0))

    return read


# Per job: exact counts (the adapter's requests, whatever the load), so the tolerance is a rounding's.
REQUEST_CHECKS = {
    **{
        f"{function} {operation} requests": Check(
            f"{function} {operation} requests per one-off job",
            _requests(function, operation),
            0.05,
            "bench/results/cost.json, one_off_ahead: requests_per_job",
        )
        for function, operation in WRITES + READS
    },
    **{
        f"{function} {operation} wcu": Check(
            f"{function} {operation} write units per one-off job",
            _wcu(function, operation),
            0.1,
            "bench/results/cost.json, one_off_ahead: dynamodb_capacity_per_job_by_operation",
        )
        for function, operation in WRITES
    },
}


def measured() -> dict[str, Any]:
    return {
        "precision": json.loads((RESULTS / "precision.json").read_text()),
        "cost": json.loads((RESULTS / "cost.json").read_text()),
    }


def simulate(scenario: Scenario = SCENARIO) -> dict[str, float]:
    """The simulated figures the checks compare, from one run of the calibration scenario."""
    logger.setLevel(logging.ERROR)
    simulation, start, end = build(scenario)
    simulation.run(end + 180)
    dues = {(e.job_id, round(e.due, 3)) for e in expected_in(simulation, start, end)}
    lookahead = scenario.deployment.lookahead_seconds
    lateness, holds = [], []
    for call in simulation.targets.calls:
        due = round(simulation.seconds(call.scheduled_for), 3)
        if call.attempt != 1 or (call.job_id, due) not in dues:
            continue
        lateness.append((call.called_at - due) * 1000)
        job = simulation.store.jobs[call.job_id]
        ahead = (
            job.schedule.kind == "at" and (call.scheduled_for - job.created_at).total_seconds() > lookahead
        )
        if ahead and call.arrived_at is not None:  # as the cost bench's one_off_ahead: the tick sends it
            holds.append((due - call.arrived_at) * 1000)
    return {
        "lateness_p50_ms": percentile(lateness, 0.5),
        "lateness_p99_ms": percentile(lateness, 0.99),
        "hold_p50_ms": percentile(holds, 0.5),
        "hold_p99_ms": percentile(holds, 0.99),
        "runs": float(len(lateness)),
    }


def simulate_requests(scenario: Scenario = AHEAD) -> dict[str, float]:
    """Requests and write units per job of the calibration's writes, from one run of ``AHEAD``."""
    logger.setLevel(logging.ERROR)
    simulation, _start, end = build(scenario)
    simulation.run(end + 180)
    jobs = max(1, len({call.job_id for call in simulation.targets.calls}))
    stats = simulation.tables.stats
    figures = {"jobs": float(jobs)}
    for function, operation in WRITES + READS:
        key = f"{function} {operation}"
        figures[f"{key} requests"] = stats.requests.get(key, 0) / jobs
        figures[f"{key} wcu"] = stats.units.get(key, [0.0, 0.0])[1] / jobs
    return figures


def compare(
    simulated: dict[str, float], results: dict[str, Any], checks: dict[str, Check] | None = None
) -> list[dict[str, Any]]:
    rows = []
    for key, check in (checks or CHECKS).items():
        value, reference = simulated[key], check.measured(results)
        rows.append(
            {
                "figure": check.name,
                "measured": round(reference, 1),
                "simulated": round(value, 1),
                "tolerance": check.tolerance,
                "within": not math.isnan(value) and abs(value - reference) <= check.tolerance,
                "measured_in": check.why,
            }
        )
    return rows


def calibrate() -> dict[str, Any]:
    """Every check, simulated and measured side by side (what bench/scale.py records)."""
    from punctual.sim import distributions

    results = measured()
    simulated, requests = simulate(), simulate_requests()
    return {
        "runs": simulated["runs"],
        "jobs": requests["jobs"],
        "checks": compare(simulated, results) + compare(requests, results, REQUEST_CHECKS),
        "distributions": {
            "tolerance": distributions.KS_TOLERANCE,
            "seeds": list(distributions.SEEDS),
            "rows": distributions.compare(distributions.measured()),
        },
    }


def main() -> None:
    print(json.dumps(calibrate(), indent=1))


if __name__ == "__main__":
    main()

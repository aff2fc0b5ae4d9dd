"""The simulator's distributions of lateness and hold beside the local stack's (docs/scale.md,
"Calibration").

``bench/calibration.py`` measures, at three loads, every run's lateness at the receiver (microseconds)
and the worker's hold, for one-offs the tick's sweep sends. Here the simulator runs the same loads with
the local stack's parameters (``LOCAL`` of ``calibration.py``) over several seeds, and each measured
distribution is compared with the simulated one by the two-sample Kolmogorov-Smirnov distance: the
largest gap between their cumulative distributions. The stated test: at every load, for lateness and for
hold, that distance is at most ``KS_TOLERANCE``. ``send_delay_ms`` (the last step, from the worker's
wait ending to the request's first bytes) is read off the lightest load's measurement; the other two
loads check it, and the event source's latency (fitted to another benchmark, ``cost``) is checked at
all three. A parameter made wrong fails the test (tests/sim/test_distributions.py shows it).

    python -m punctual.sim.distributions     # the comparison as JSON
"""

from __future__ import annotations

import bisect
import json
import logging
from pathlib import Path
from typing import Any

from punctual.scale.deployment import Deployment
from punctual.scale.params import Parameters
from punctual.sim.calibration import FULL_CORE_MB, LOCAL, RESULTS
from punctual.sim.scenarios import Load, Scenario, build, expected_in
from punctual_functions.core.observability import logger

SEEDS = (1, 2, 3)
# At most this much of the probability mass lies between the simulated and the measured distribution
# (the two-sample Kolmogorov-Smirnov distance), for lateness and for hold, at every load.
KS_TOLERANCE = 0.25
# The local stack as bench/calibration.py runs it: its defaults on this machine (two worker processes
# of 25 invocations each), four shards, the one-minute tick.
LOCAL_DEFAULTS = Deployment(
    shard_count=4,
    lookahead_seconds=120,
    worker_max_concurrency=50,
    memory_mb={"dispatcher": FULL_CORE_MB, "worker": FULL_CORE_MB, "api": FULL_CORE_MB},
)


def scenario(jobs_per_minute: int, seed: int, params: Parameters = LOCAL) -> Scenario:
    """The calibration bench's load: one-offs due at their own millisecond over two minutes, created
    beyond the look-ahead (the tick's sweep sends them)."""
    load = Load(jobs_per_minute, minutes=2, cron_fraction=0.0, lead_seconds=(200.0, 260.0), warmup_minutes=0)
    return Scenario(f"calibration {jobs_per_minute}", load, LOCAL_DEFAULTS, params, first_minute=5, seed=seed)


def simulate(
    jobs_per_minute: int, seeds: tuple[int, ...] = SEEDS, params: Parameters = LOCAL
) -> dict[str, list[float]]:
    """Every run's lateness (ms, to the microsecond) and hold (ms), pooled over ``seeds``."""
    logger.setLevel(logging.ERROR)
    lateness: list[float] = []
    hold: list[float] = []
    for seed in seeds:
        simulation, start, end = build(scenario(jobs_per_minute, seed, params))
        simulation.run(end + 120)
        dues = {(e.job_id, round(e.due, 3)) for e in expected_in(simulation, start, end)}
        for call in simulation.targets.calls:
            due = round(simulation.seconds(call.scheduled_for), 3)
            if call.attempt != 1 or (call.job_id, due) not in dues:
                continue
            lateness.append(round((call.called_at - due) * 1000, 3))
            if call.arrived_at is not None:
                hold.append(round((due - call.arrived_at) * 1000))
    return {"lateness_ms": sorted(lateness), "hold_ms": sorted(hold)}


def ks_distance(first: list[float], second: list[float]) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical
    cumulative distributions (1.0 when either is empty)."""
    if not first or not second:
        return 1.0
    a, b = sorted(first), sorted(second)
    gap = 0.0
    for value in a + b:
        gap = max(gap, abs(bisect.bisect_right(a, value) / len(a) - bisect.bisect_right(b, value) / len(b)))
    return gap


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")

    return {"p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99)}


def measured(path: Path = RESULTS / "calibration.json") -> dict[str, dict[str, list[float]]]:
    """The bench's samples by load (``bench/results/calibration.json``)."""
    data = json.loads(path.read_text())
    return {load: figures["samples"] for load, figures in data["loads"].items()}


def compare(
    measurements: dict[str, dict[str, list[float]]],
    params: Parameters = LOCAL,
    seeds: tuple[int, ...] = SEEDS,
) -> list[dict[str, Any]]:
    """A row per load and figure: the distance, within the tolerance or not, and quantiles of both."""
    rows = []
    for load, samples in measurements.items():
        simulated = simulate(int(load), seeds, params)
        for figure in ("lateness_ms", "hold_ms"):
            distance = ks_distance(simulated[figure], samples[figure])
            rows.append(
                {
                    "load_per_minute": int(load),
                    "figure": figure,
                    "ks_distance": round(distance, 3),
                    "within": distance <= KS_TOLERANCE,
                    "measured": {"count": len(samples[figure]), **_quantiles(samples[figure])},
                    "simulated": {"count": len(simulated[figure]), **_quantiles(simulated[figure])},
                }
            )
    return rows


def main() -> None:
    print(
        json.dumps({"tolerance": KS_TOLERANCE, "seeds": list(SEEDS), "rows": compare(measured())}, indent=1)
    )


if __name__ == "__main__":
    main()

"""The planner and the simulator are one model: what ``punctual plan`` estimates for a load (the CPU a
dispatch takes, its requests and bytes, a worker's batch and CPU, the cost) is what the simulator
shows when it runs the planned deployment. If the engine's requests change, or the planner's figures
drift, this fails (docs/scale.md, "The capacity planner")."""

from __future__ import annotations

import pytest

from punctual.scale.params import DEFAULTS
from punctual.scale.plan import (
    DISPATCH_KB,
    DISPATCH_REQUESTS,
    DISPATCH_REQUESTS_RECURRING,
    Plan,
    plan,
    worker_cpu,
)
from punctual.sim.report import Report
from punctual.sim.scenarios import Load, Scenario, run

JOBS = 5_000
TOLERANCE = 0.10


@pytest.fixture(scope="module")
def planned() -> tuple[Plan, Report]:
    result = plan(JOBS)
    report = run(Scenario("planned", Load(JOBS, minutes=1), result.deployment, first_minute=4))
    assert report.correct, report.as_dict()
    return result, report


def _near(estimate: float, simulated: float, tolerance: float = TOLERANCE) -> bool:
    return abs(estimate - simulated) <= tolerance * simulated


def test_a_dispatch_takes_the_requests_bytes_and_cpu_the_planner_sizes_sweeps_by(
    planned: tuple[Plan, Report],
) -> None:
    result, report = planned
    crons = result.crons
    assert _near(
        DISPATCH_REQUESTS + DISPATCH_REQUESTS_RECURRING * crons, report.requests_per_job["dispatcher"]
    )
    assert _near(DISPATCH_KB, report.kb_per_job["dispatcher"], 0.15), report.kb_per_job
    assert _near(result.dispatch_cpu_ms, report.cpu_ms["dispatcher"]), (result.dispatch_cpu_ms, report.cpu_ms)


def test_a_worker_batch_and_its_cpu_are_the_planners(planned: tuple[Plan, Report]) -> None:
    result, report = planned
    batch = report.esm["records_per_batch"]
    assert _near(result.records_per_batch, batch, 0.25), (result.records_per_batch, batch)
    assert _near(worker_cpu(DEFAULTS, batch), report.cpu_ms["worker"]), report.cpu_ms


def test_the_simulated_cost_is_within_ten_percent_of_the_plans(planned: tuple[Plan, Report]) -> None:
    result, report = planned
    estimate = sum(result.usd_per_million.values())
    assert _near(estimate, report.usd_per_million_jobs), (result.usd_per_million, report.usd_breakdown)

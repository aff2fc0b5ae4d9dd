"""The simulator against what the local stack measured (punctual/sim/calibration.py, docs/scale.md,
"Calibration"): run with the local stack's parameters at the benchmarks' loads, it reproduces the
measured lateness, hold and requests per job within the tolerances stated there."""

from __future__ import annotations

from typing import Any

import pytest

from punctual.sim.calibration import CHECKS, REQUEST_CHECKS, compare, measured, simulate, simulate_requests


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    results = measured()
    simulated, requests = simulate(), simulate_requests()
    assert simulated["runs"] >= 150 and requests["jobs"] >= 50, "the calibration loads ran"
    return compare(simulated, results) + compare(requests, results, REQUEST_CHECKS)


@pytest.mark.parametrize("figure", [check.name for check in [*CHECKS.values(), *REQUEST_CHECKS.values()]])
def test_the_simulation_at_the_local_load_is_within_its_tolerance_of_the_measurement(
    rows: list[dict[str, Any]], figure: str
) -> None:
    (row,) = [row for row in rows if row["figure"] == figure]
    assert row["within"], row

"""The simulator's distributions of lateness and hold against the local stack's (punctual/sim/
distributions.py, docs/scale.md, "Calibration"): at each of the calibration bench's three loads, over
several seeds, the Kolmogorov-Smirnov distance between simulated and measured is within the stated
tolerance; and a parameter made wrong is caught."""

from __future__ import annotations

import pytest

from punctual.scale.params import DEFAULTS
from punctual.sim.calibration import LOCAL
from punctual.sim.distributions import KS_TOLERANCE, compare, ks_distance, measured

MEASURED = measured()


# Where the simulator does not reproduce the local stack (docs/scale.md, "Calibration"): strict, so
# that a change that makes one agree is noticed and the page updated.
KNOWN_APART = {
    ("300", "lateness_ms"): "the local stack's sub-millisecond lateness shrinks as its load grows",
    ("1000", "lateness_ms"): "the emulator serves DynamoDB one request at a time; the simulator in parallel",
    ("1000", "hold_ms"): "the same: the local sweep sends late, its messages arrive up to a second early",
}


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], dict[str, object]]:
    return {(str(row["load_per_minute"]), str(row["figure"])): row for row in compare(MEASURED)}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            (load, figure),
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_APART[(load, figure)])]
            if (load, figure) in KNOWN_APART
            else [],
            id=f"{load}-{figure}",
        )
        for load in sorted(MEASURED, key=int)
        for figure in ("lateness_ms", "hold_ms")
    ],
)
def test_at_each_load_the_simulated_distribution_is_the_measured_one(
    rows: dict[tuple[str, str], dict[str, object]], case: tuple[str, str]
) -> None:
    row = rows[case]
    assert row["measured"]["count"] >= 100 and row["simulated"]["count"] >= 300, row  # type: ignore[index]
    assert row["within"], row


def test_a_send_delay_ten_times_too_long_is_caught() -> None:
    slow = tuple((share, ms * 10) for share, ms in LOCAL.send_delay_ms)
    load = sorted(MEASURED, key=int)[1]
    rows = compare({load: MEASURED[load]}, LOCAL.replace(send_delay_ms=slow), seeds=(1,))
    (lateness,) = [row for row in rows if row["figure"] == "lateness_ms"]
    assert not lateness["within"], lateness


def test_the_event_sources_latency_on_aws_where_the_emulators_applies_is_caught() -> None:
    load = sorted(MEASURED, key=int)[1]
    rows = compare({load: MEASURED[load]}, LOCAL.replace(esm_latency_ms=DEFAULTS.esm_latency_ms), seeds=(1,))
    (hold,) = [row for row in rows if row["figure"] == "hold_ms"]
    assert not hold["within"], hold


def test_the_distance_is_the_largest_gap_between_the_cumulative_distributions() -> None:
    assert ks_distance([1, 2, 3, 4], [1, 2, 3, 4]) == 0
    assert ks_distance([1, 2], [3, 4]) == 1
    assert ks_distance([1, 2, 3, 4], [3, 4, 5, 6]) == 0.5
    assert ks_distance([], [1]) == 1 and 0 < KS_TOLERANCE < 1

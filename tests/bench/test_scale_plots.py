"""The scale bench's plot (bench/plots/scale.py, ``scale.png``) on hand-made results (no simulator run):
the four steady scenarios drawn against load, and a result without steady scenarios, which still
draws the figure, its panels empty and saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import plots


def _scenario(name: str, expected: int, p99: float, usd: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "scenario": name.replace("-", " "),
        "expected": expected,
        "lateness_ms": {"p50": 0.0, "p99": p99, "max": p99 * 3},
        "usd_per_million_jobs": usd,
        "usd_breakdown": {"dynamodb writes": 3.25, "sqs": round(usd - 3.25, 3)},
        **extra,
    }


def _result(*scenarios: dict[str, Any]) -> dict[str, Any]:
    return {"name": "scale", "repetitions": 1, "scenarios": list(scenarios)}


STEADY = (
    _scenario("steady-1k", 2_000, 0.0, 8.26),
    _scenario("steady-10k", 20_000, 78.0, 7.25),
    _scenario("steady-100k", 200_000, 231.4, 5.39),
    _scenario("steady-1m", 2_000_064, 12_062.5, 4.8),
)
SPIKE = _scenario("spike-1m", 1_000_032, 17_182.7, 4.31)


def test_the_load_of_a_steady_scenario_is_read_from_its_name() -> None:
    assert [plots._steady_load(s) for s in STEADY] == [1_000, 10_000, 100_000, 1_000_000]
    assert plots._steady_load(SPIKE) is None
    # A steady name the pattern does not read: two minutes' worth of jobs, halved.
    assert plots._steady_load(_scenario("steady-odd", 5_000, 1.0, 5.0)) == 2_500


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The results directory the plots are written to (matplotlib is the optional bench extra)."""
    pytest.importorskip("matplotlib")
    from bench import common

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    return tmp_path


def test_the_scale_plot_draws_the_steady_scenarios(results: Path) -> None:
    # Out of order and with a scenario that is not steady: sorted by load, the spike left out.
    result = _result(STEADY[2], SPIKE, *STEADY[:2], STEADY[3])
    assert plots.write("scale", result) == ["scale.png"]
    assert (results / "scale.png").stat().st_size > 0


def test_the_scale_plot_takes_a_total_without_a_breakdown(results: Path) -> None:
    result = _result(*({k: v for k, v in s.items() if k != "usd_breakdown"} for s in STEADY))
    assert plots.write("scale", result) == ["scale.png"]
    assert (results / "scale.png").stat().st_size > 0


def test_a_scale_result_without_steady_scenarios_draws_empty_panels(results: Path) -> None:
    # python -m bench.scale --only spike-1m: the figure is still written, its panels saying so.
    assert plots.write("scale", _result(SPIKE)) == ["scale.png"]
    assert (results / "scale.png").stat().st_size > 0
    assert plots.write("scale", _result()) == ["scale.png"]

"""The margin table (punctual/sim/sensitivity.py): each variant makes its parameter worse, and a
plan has its margin only if every variant meets the target."""

from __future__ import annotations

import dataclasses

import pytest

from punctual.scale.params import DEFAULTS
from punctual.sim import scenarios, sensitivity
from punctual.sim.scenarios import Load, Scenario


def test_each_variant_makes_one_thing_worse_by_half() -> None:
    scenario = Scenario("x", Load(100))
    changed = {name: variant(scenario) for name, variant in sensitivity.VARIANTS.items()}
    assert changed["base"] == scenario
    assert changed["CPU per AWS request x1.5"].params.cpu_per_request_ms == DEFAULTS.cpu_per_request_ms * 1.5
    assert changed["CPU per record x1.5"].params.cpu_per_record_ms == DEFAULTS.cpu_per_record_ms * 1.5
    tail = dict(changed["event source latency tail x1.5"].params.esm_latency_ms)
    assert (
        tail[1.0] == dict(DEFAULTS.esm_latency_ms)[1.0] * 1.5
        and tail[0.5] == dict(DEFAULTS.esm_latency_ms)[0.5]
    )
    assert changed["target answering in 500 ms"].target_latency_seconds == 0.5
    slower = changed["scaling rates /1.5"].params
    assert slower.lambda_scaling_environments == int(DEFAULTS.lambda_scaling_environments / 1.5)
    assert slower.esm_scale_per_minute == int(DEFAULTS.esm_scale_per_minute / 1.5)


def test_a_load_has_its_margin_only_if_every_variant_meets_the_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = Scenario("small", Load(600, minutes=1, lead_seconds=(30.0, 200.0)), first_minute=4)
    monkeypatch.setitem(scenarios.SCENARIOS, "small", small)
    result = sensitivity.table(("small",), ("base", "target answering in 500 ms"))
    rows = result["rows"]["small"]
    assert rows["base"]["meets"] and result["margin"]["small"], rows
    assert 0 < rows["base"]["sweep_max_s"] < 60
    # A target that must be met by nothing: the same runs, and no margin.
    monkeypatch.setattr(sensitivity, "P99_TARGET_MS", -1.0)
    again = sensitivity.table(("small",), ("base",))
    assert not again["margin"]["small"] and "misses" in sensitivity.markdown(again)
    assert dataclasses.asdict(small) == dataclasses.asdict(scenarios.SCENARIOS["small"])

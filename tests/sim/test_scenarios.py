"""Small scenarios of the simulator, run by make test as a regression test of the engine at scale:
every occurrence starts once and never early, also when DynamoDB throttles."""

from __future__ import annotations

import pytest

from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS
from punctual.sim.groups import group_agreement
from punctual.sim.scenarios import Load, Scenario, run


def test_a_steady_small_load_starts_every_occurrence_once_on_time() -> None:
    result = run(Scenario("small", Load(600, minutes=1, lead_seconds=(30.0, 200.0)), first_minute=4))
    assert result.expected == 600 and result.correct, result.as_dict()
    assert result.lateness_ms["p99"] <= 1000, result.lateness_ms
    assert result.throttled == {} and result.failed_after_retries == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_throttled_requests_are_retried_and_nothing_is_lost_early_or_twice(seed: int) -> None:
    # Seed 1 called a target twice when an outcome's write outlasted the lease (the heartbeat
    # stopped at the call's end); seed 2 when a renewal before the call was answered after the
    # lease it wrote had run out (both found once the SDK's six attempts were simulated, not five).
    # Partitions and a table far smaller than AWS's: many requests are refused at first (a
    # partition still serves a bucket's read in one second: one that cannot fails its sweep).
    tight = DEFAULTS.replace(
        ddb_partition_wcu=20, ddb_partition_rcu=300, ddb_table_wcu=150, ddb_table_rcu=400
    )
    scenario = Scenario(
        "throttled",
        Load(600, minutes=1, lead_seconds=(30.0, 200.0)),
        Deployment(shard_count=2),
        params=tight,
        first_minute=4,
        seed=seed,
    )
    result = run(scenario)
    assert sum(result.throttled.values()) > 100, result.throttled
    assert result.correct, result.as_dict()


def test_one_group_of_shards_stands_for_the_whole_deployment() -> None:
    """The same load and deployment (8 shards swept by 4 fanned-out invocations), simulated whole
    (every group's sweep and load in one world) and as one group of 2 shards standing for the other
    three: both start every occurrence once, never early, with the same lateness and the same
    requests and cost per job, within the stated tolerance (``GROUP_TOLERANCE``)."""
    deployment = Deployment(shard_count=8, sweep_invocations=4)
    load = Load(2400, minutes=2, lead_seconds=(30.0, 200.0))
    whole = run(Scenario("whole", load, deployment, first_minute=4, unsplit=True))
    group = run(Scenario("one group", load, deployment, first_minute=4))
    for result in (whole, group):
        assert result.correct and result.expected == 4800, result.as_dict()
    assert whole.groups == 1 and group.groups == 4
    agreement = group_agreement(whole, group)
    assert agreement.agrees, agreement

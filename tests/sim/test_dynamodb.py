"""The simulated table's limits: per partition key value and second, the table's quota and its
doubling of the previous peak, and the shared partitions of a group of shards."""

from __future__ import annotations

from punctual.scale.params import DEFAULTS
from punctual.sim.dynamodb import Capacity, partition_kind
from punctual.sim.table_requests import PartitionUnits, TableRequest


def write(partition: str, wcu: float) -> TableRequest:
    return TableRequest("PutItem", (PartitionUnits(partition, 0.0, wcu),))


def test_a_partition_takes_a_thousand_write_units_a_second_and_no_more() -> None:
    capacity = Capacity(DEFAULTS, table_share=1.0, shared_partition=lambda _p: False)
    assert all(capacity.admit(write("JOB#a", 1), 0.5) is None for _ in range(1000))
    assert capacity.admit(write("JOB#a", 1), 0.9) == "job and runs"
    assert capacity.admit(write("JOB#b", 1), 0.9) is None, "another key has its own"
    assert capacity.admit(write("JOB#a", 1), 1.0) is None, "the next second"


def test_the_table_serves_double_its_previous_peak_and_grows_with_its_use() -> None:
    params = DEFAULTS.replace(ddb_initial_peak_wcu=100, ddb_partition_wcu=10_000)
    capacity = Capacity(params, table_share=1.0, shared_partition=lambda _p: False)
    assert sum(capacity.admit(write(f"JOB#{n}", 1), 0.1) is None for n in range(300)) == 200
    assert capacity.admit(write("JOB#x", 1), 0.2) == "table"
    # the second's 200 are the new peak: 400 the next second
    assert sum(capacity.admit(write(f"JOB#{n}", 1), 1.1) is None for n in range(500)) == 400


def test_a_shared_partition_is_charged_over_the_groups_window() -> None:
    """One group of four: the owner index takes a second's limit over four seconds from it."""
    capacity = Capacity(DEFAULTS, table_share=0.25, shared_partition=lambda p: p.startswith("gsi1:"))
    assert all(capacity.admit(write("gsi1:OWNER#a", 100), second) is None for second in (0.1, 1.1, 2.1))
    assert capacity.admit(write("gsi1:OWNER#a", 700), 3.1) is None
    assert capacity.admit(write("gsi1:OWNER#a", 1), 3.5) == "owner index"
    assert capacity.admit(write("gsi1:OWNER#a", 1), 4.0) is None, "a new window"
    assert partition_kind("T#2026-12-01T00:05#003") == "trigger shard"

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


def test_the_owner_index_has_capacity_of_its_own_and_starts_at_a_new_index_s_warm_throughput() -> None:
    """A global secondary index is throttled on its own: a new one takes 4,000 writes a second at
    once (double its initial peak), whatever the table has left; set warmer, it takes more."""
    params = DEFAULTS.replace(ddb_partition_wcu=100_000)
    capacity = Capacity(params, table_share=1.0, shared_partition=lambda _p: False)
    index_writes = [write("gsi1:OWNER#a", 1) for _ in range(4_500)]
    admitted = sum(capacity.admit(request, 0.5) is None for request in index_writes)
    assert admitted == 2 * params.ddb_index_initial_peak_wcu == 4_000
    assert capacity.admit(write("gsi1:OWNER#b", 1), 0.6) == "owner index (all partitions)"
    assert capacity.admit(write("JOB#a", 1), 0.6) is None, "the table's own capacity is untouched"
    warm = Capacity(
        params.replace(ddb_index_initial_peak_wcu=6_000), table_share=1.0, shared_partition=lambda _p: False
    )
    assert all(warm.admit(request, 0.5) is None for request in index_writes)
    warm.admit(write("JOB#b", 1), 1.5)  # the next second closes the first
    assert warm.stats.index_peak_wcu_per_second == 4_500 and warm.stats.peak_wcu_per_second == 0


def test_a_partition_s_reads_and_writes_are_limited_apart() -> None:
    """DynamoDB throttles a partition's reads and its writes independently: a partition at its write
    maximum still serves reads."""
    capacity = Capacity(DEFAULTS, table_share=1.0, shared_partition=lambda _p: False)
    assert all(capacity.admit(write("JOB#a", 1), 0.5) is None for _ in range(1000))
    read = TableRequest("GetItem", (PartitionUnits("JOB#a", 2_000.0, 0.0),))
    assert capacity.admit(read, 0.6) is None

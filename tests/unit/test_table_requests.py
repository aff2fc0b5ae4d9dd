"""``sim.table_requests`` on the in-memory fake alone: the units of DynamoDB's rules for the items the
adapter would write (their truth against moto: ``tests/contract/test_table_requests_moto.py``)."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from punctual.scale.sizes import item_size
from punctual.sim.table_requests import PartitionUnits, TableRequest, requests_for, snapshot
from punctual.testing.fakes.store import MemoryStore
from punctual_functions.core.model import (
    Job,
    Run,
    RunStatus,
    Trigger,
    bucket_of,
    make_trigger,
    new_job_id,
    run_id_for,
)
from punctual_functions.core.schedule import parse_schedule
from punctual_functions.core.store.items import job_to_item, run_to_item, trigger_to_item
from tests.contract.conftest import attempt

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def call(store: MemoryStore, method: str, *args: Any, **kwargs: Any) -> list[TableRequest]:
    """The call on the fake, as the simulator makes it; the requests it maps to."""
    before = snapshot(store, method, args, kwargs)
    try:
        result = getattr(store, method)(*args, **kwargs)
    except Exception as error:
        result = error
    return requests_for(method, args, kwargs, result, before, store)


def job(owner: str = "alice", payload: Any = None, **changes: Any) -> Job:
    values: dict[str, Any] = {
        "job_id": new_job_id(),
        "owner": owner,
        "schedule": parse_schedule(cron="*/10 * * * * *", now=NOW),
        "target": {"type": "http", "url": "https://example.com/hook", "method": "POST"},
        "payload": payload if payload is not None else {"n": 1},
        "created_at": NOW,
        "updated_at": NOW,
        **changes,
    }
    return Job(**values)


def trigger(of: Job, seconds: float) -> Trigger:
    return make_trigger(of, NOW + timedelta(seconds=seconds), now=NOW, shard_count=4)


def run(of: Job, seconds: float, status: RunStatus = RunStatus.QUEUED) -> Run:
    at = NOW + timedelta(seconds=seconds)
    return Run(
        job_id=of.job_id,
        run_id=run_id_for(of.job_id, at),
        owner=of.owner,
        scheduled_for=at,
        status=status,
        queued_at=NOW,
        job_version=of.version,
    )


def kb(size: int, per: int = 1024) -> float:
    return float(math.ceil(size / per))


def test_a_job_write_consumes_its_units_again_on_its_owner_index_partition() -> None:
    store = MemoryStore()
    big = job(payload={"blob": "x" * 2500})
    (put,) = call(store, "create_job", big, None)
    units = kb(item_size(job_to_item(big)))
    assert units == 3.0
    assert put == TableRequest(
        "PutItem",
        (PartitionUnits(f"JOB#{big.job_id}", 0.0, units), PartitionUnits("gsi1:OWNER#alice", 0.0, units)),
    )


def test_a_transaction_doubles_the_table_units_but_not_the_index_ones() -> None:
    store = MemoryStore()
    small = job(name="a")
    call(store, "create_job", small, None)
    bigger = replace(small, payload={"blob": "y" * 1500}, version=2)
    (transaction,) = call(store, "update_job", small, bigger)
    size = kb(item_size(job_to_item(bigger)))
    assert transaction.operation == "TransactWriteItems"
    assert [(u.partition, u.wcu) for u in transaction.units] == [
        (f"JOB#{small.job_id}", 2 * size),
        ("gsi1:OWNER#alice", size),
    ]
    (lost, read) = call(store, "update_job", small, replace(small, version=2))  # refused: still charged
    assert (lost.operation, lost.units[0].wcu, read.operation) == ("TransactWriteItems", 2 * size, "GetItem")


def test_an_eventually_consistent_read_costs_half_a_consistent_one() -> None:
    store = MemoryStore()
    owner = job()
    call(store, "create_job", owner, None)
    runs = [run(owner, n) for n in range(3)]
    for each in runs:
        call(store, "put_run", each)
    keys = [(owner.job_id, each.run_id) for each in runs]
    (eventual,) = call(store, "get_runs", keys)
    (consistent,) = call(store, "get_runs_and_jobs", keys)
    assert eventual.units == (PartitionUnits(f"JOB#{owner.job_id}", 1.5, 0.0),)  # three items, 0.5 each
    assert consistent.units == (PartitionUnits(f"JOB#{owner.job_id}", 4.0, 0.0),)  # and the job
    (index,) = call(store, "owner_jobs", "alice")
    assert index.units == (PartitionUnits("gsi1:OWNER#alice", 0.5, 0.0),)


def test_a_query_over_10_kb_of_items_costs_one_unit_per_started_4_kb_of_all_it_read() -> None:
    store = MemoryStore()
    owner = job()
    call(store, "create_job", owner, None)
    triggers = [replace(trigger(owner, 60), run_id=f"run-{n:03d}", runs_before=n) for n in range(50)]
    for each in triggers:
        call(store, "put_trigger", each)
    size = sum(item_size(trigger_to_item(each)) for each in triggers)
    assert 10 * 1024 < size < 12 * 1024
    (query,) = call(store, "query_bucket", triggers[0].bucket, triggers[0].shard)
    assert query.units == (PartitionUnits(f"T#{triggers[0].bucket}#{triggers[0].shard:03d}", 3.0, 0.0),)


def test_a_filtered_page_that_ends_on_its_limit_is_followed_by_one_more_empty_request() -> None:
    store = MemoryStore()
    owner = job()
    call(store, "create_job", owner, None)
    for n in range(25):
        call(store, "put_run", run(owner, n))
    pages = call(store, "list_runs", owner.job_id, limit=5, status=RunStatus.SKIPPED)
    sizes = sum(item_size(run_to_item(run(owner, n), NOW)) for n in range(25))
    assert [p.units[0].rcu for p in pages] == [kb(sizes, 4096) / 2, 0.5], "25 read, a LastEvaluatedKey"


def test_a_refused_conditional_write_is_charged_and_an_invalid_change_makes_no_request() -> None:
    store = MemoryStore()
    owner = job()
    call(store, "create_job", owner, None)
    queued = run(owner, 10)
    call(store, "put_run", queued)
    (refused,) = call(store, "start_attempt", replace(queued, attempt=3), token="a", now=NOW, lease_until=NOW)
    assert (refused.operation, refused.units[0].wcu) == ("UpdateItem", 1.0)
    assert call(store, "mark_run", queued, RunStatus.SUCCEEDED, now=NOW, error=None) == []


def test_the_map_of_a_typical_call_is_timed() -> None:
    """Printed, not asserted (the simulator's budget is about 30 µs a call): 200 one-off and 200
    recurring jobs created and their first occurrence swept, dispatched, started and finished; then
    five more occurrences of each recurring job. The map alone is timed (snapshot and requests_for),
    not the fake."""
    store = MemoryStore()
    spent, calls = [0.0, 0.0], [0, 0]
    phase = 0

    def timed(method: str, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        before = snapshot(store, method, args, kwargs)
        middle = time.perf_counter()
        result = getattr(store, method)(*args, **kwargs)
        resumed = time.perf_counter()
        requests_for(method, args, kwargs, result, before, store)
        spent[phase] += (middle - began) + (time.perf_counter() - resumed)
        calls[phase] += 1
        return result

    def occurrences(jobs: list[Job], seconds: int) -> None:
        at = NOW + timedelta(seconds=seconds)
        for shard in range(4):
            timed("query_bucket", bucket_of(at), shard)
            timed("advance_cursor", shard, None, bucket_of(at))
        timed("get_runs", [(each.job_id, run_id_for(each.job_id, at)) for each in jobs])
        for each in jobs:
            timed("get_job", each.job_id)
            timed("put_run", run(each, seconds))
            if each.schedule.is_recurring:
                timed("put_trigger", trigger(each, seconds + 10))
        for each in jobs:
            key = (each.job_id, run_id_for(each.job_id, at))
            runs, _ = timed("get_runs_and_jobs", [key])
            started = timed("start_attempt", runs[key], token="t", now=at, lease_until=at)
            timed("finish_attempt", started, attempt(), status=RunStatus.SUCCEEDED, now=at)

    created: list[Job] = []
    for n in range(400):
        if n % 2:  # a one-off job at home in its minute's trigger partition
            one_off = job(
                owner=f"owner-{n % 20}", job_id=new_job_id(bucket_of(NOW + timedelta(seconds=10)), 4)
            )
            timed("create_job", one_off, replace(trigger(one_off, 10), shard=int(one_off.job_id[-1])))
            created.append(one_off)
        else:
            recurring = job(owner=f"owner-{n % 20}")
            timed("create_job", recurring, trigger(recurring, 10))
            created.append(recurring)
    occurrences(created, 10)
    phase = 1
    for seconds in range(20, 70, 10):
        occurrences([each for each in created if each.schedule.is_recurring], seconds)
    print(
        f"\nsim.table_requests: {spent[0] / calls[0] * 1e6:.1f} µs a call while every job is new"
        f" ({calls[0]} calls), {spent[1] / calls[1] * 1e6:.1f} µs for recurring jobs ({calls[1]} calls),"
        f" {sum(spent) / sum(calls) * 1e6:.1f} µs in all"
    )

"""The contract of ``LimitStore``: limits, their slots as leases, the token bucket, the waiters."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from functions.core.limits import Limit, in_use
from functions.core.model import Reason, RunStatus
from functions.core.ports import LimitExists, Tables, VersionChanged
from tests.contract.conftest import NOW, World

LEASE = NOW + timedelta(seconds=30)


def test_a_limit_is_created_once_replaced_by_version_and_deleted(tables: Tables) -> None:
    limit = Limit(
        "api", "https://api.example.com/v1", max_concurrent=5, per_second=2.5, burst=4, created_at=NOW
    )
    tables.put_limit("alice", limit, expected_version=None)
    with pytest.raises(LimitExists):
        tables.put_limit("alice", limit, expected_version=None)
    stored = tables.get_limit("alice", "api")
    assert stored is not None
    assert (stored.match, stored.max_concurrent, stored.per_second, stored.burst, stored.version) == (
        "https://api.example.com/v1",
        5,
        2.5,
        4,
        1,
    )
    assert stored.created_at is not None and abs(stored.created_at - NOW) < timedelta(milliseconds=1)
    with pytest.raises(VersionChanged):
        tables.put_limit("alice", replace(limit, version=3), expected_version=2)
    tables.put_limit("alice", replace(limit, max_concurrent=None, version=2), expected_version=1)
    tables.put_limit(
        "alice", Limit("a-first", "arn:aws:sns:eu-west-1:123456789012:*", per_second=1), expected_version=None
    )
    tables.put_limit("bob", Limit("api", "https://other.test"), expected_version=None)
    assert [(lim.name, lim.max_concurrent, lim.version) for lim in tables.list_limits("alice")] == [
        ("a-first", None, 1),
        ("api", None, 2),
    ]
    assert tables.delete_limit("alice", "api")
    assert not tables.delete_limit("alice", "api")
    assert tables.get_limit("alice", "api") is None
    assert [lim.name for lim in tables.list_limits("bob")] == ["api"]


def test_slots_are_taken_up_to_the_limit_released_and_retaken_by_their_holder(tables: Tables) -> None:
    for n in range(3):
        assert tables.take_slot("alice", "api", 3, holder=f"r{n}", job_id="j", now=NOW, lease_until=LEASE)
    assert not tables.take_slot("alice", "api", 3, holder="r9", job_id="j", now=NOW, lease_until=LEASE)
    assert tables.take_slot("alice", "api", 3, holder="r1", job_id="j", now=NOW, lease_until=LEASE), (
        "a retake"
    )
    assert sorted(slot.holder for slot in tables.limit_use("alice", "api").slots) == ["r0", "r1", "r2"]
    tables.release_slot("alice", "api", holder="r1")
    tables.release_slot("alice", "api", holder="nobody")
    assert tables.take_slot("alice", "api", 3, holder="r9", job_id="j", now=NOW, lease_until=LEASE)
    assert not tables.take_slot("alice", "other", 0, holder="r9", job_id="j", now=NOW, lease_until=LEASE)
    assert tables.limit_use("alice", "other").slots == ()


def test_a_slot_whose_lease_ended_is_taken_over_and_its_old_holder_cannot_free_it(tables: Tables) -> None:
    short = NOW + timedelta(seconds=5)
    assert tables.take_slot("alice", "api", 1, holder="dead", job_id="j", now=NOW, lease_until=short)
    assert not tables.take_slot("alice", "api", 1, holder="r2", job_id="j", now=NOW, lease_until=LEASE)
    later = short + timedelta(milliseconds=1)
    assert tables.take_slot("alice", "api", 1, holder="r2", job_id="j", now=later, lease_until=LEASE)
    tables.release_slot("alice", "api", holder="dead")  # too late: the slot is r2's
    use = tables.limit_use("alice", "api")
    assert [slot.holder for slot in in_use(use.slots, later)] == ["r2"]


def test_concurrent_takes_never_hold_more_than_max_concurrent(tables: Tables) -> None:
    taken: list[str] = []
    barrier = threading.Barrier(12)

    def take(n: int) -> None:
        barrier.wait()
        if tables.take_slot("alice", "race", 4, holder=f"r{n}", job_id="j", now=NOW, lease_until=LEASE):
            taken.append(f"r{n}")

    threads = [threading.Thread(target=take, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    holders = sorted(slot.holder for slot in in_use(tables.limit_use("alice", "race").slots, NOW))
    assert len(holders) <= 4
    assert sorted(taken) == holders, "every take that said yes holds a slot of its own"


def test_the_token_bucket_gives_its_burst_then_one_token_at_its_rate(tables: Tables) -> None:
    waits = [tables.take_token("alice", "api", 2.0, 3, now=NOW) for _ in range(4)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.5)
    assert tables.take_token("alice", "api", 2.0, 3, now=NOW + timedelta(milliseconds=500)) == 0.0
    bucket = tables.limit_use("alice", "api").bucket
    assert bucket is not None and bucket.tokens == pytest.approx(0.0)


def test_a_run_waits_on_a_limit_and_its_start_records_how_long(world: World, tables: Tables) -> None:
    job, run = world.dispatched_run()
    assert tables.mark_limited(run, "api", since=NOW)
    assert not tables.mark_limited(replace(run, job_version=run.job_version + 1), "api", since=NOW)
    tables.add_waiter("alice", "api", run, since=NOW)
    use = tables.limit_use("alice", "api")
    assert [(w.job_id, w.run_id) for w in use.waiting] == [(job.job_id, run.run_id)]
    limited = tables.get_run(job.job_id, run.run_id)
    assert limited is not None
    assert (limited.status, limited.reason, limited.limited_by) == (RunStatus.QUEUED, Reason.LIMITED, "api")
    at = NOW + timedelta(seconds=3)
    started = tables.start_attempt(limited, token="t", now=at, lease_until=at + timedelta(seconds=20))
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None
    assert (started.reason, started.limited_ms) == (None, 3000)
    assert (stored.status, stored.reason, stored.limited_by, stored.limited_ms) == (
        RunStatus.RUNNING,
        None,
        "api",
        3000,
    )
    assert tables.take_slot(
        "alice", "api", 1, holder="other", job_id="j", now=at, lease_until=at + timedelta(seconds=9)
    )
    waiting = tables.release_slot("alice", "api", holder="other")
    assert [(w.job_id, w.run_id) for w in waiting] == [(job.job_id, run.run_id)], "read on the way"
    tables.remove_waiter("alice", "api", run)
    assert tables.limit_use("alice", "api").waiting == ()
    assert tables.release_slot("alice", "api", holder="nobody") == []


def test_a_batch_read_brings_its_owners_limits(world: World, tables: Tables) -> None:
    job, run = world.dispatched_run()
    keys = [(job.job_id, run.run_id)]
    runs, jobs, limits = tables.get_runs_jobs_and_limits(keys, ["alice", "bob"])
    assert set(runs) == set(keys) and set(jobs) == {job.job_id} and limits == {"alice": [], "bob": []}
    tables.put_limit("alice", Limit("b", "https://b.test", per_second=1.5, burst=3), expected_version=None)
    tables.put_limit("alice", Limit("a", "https://a.test", max_concurrent=2), expected_version=None)
    _, _, limits = tables.get_runs_jobs_and_limits(keys, ["alice"])
    assert [
        (lim.name, lim.match, lim.max_concurrent, lim.per_second, lim.burst) for lim in limits["alice"]
    ] == [
        ("a", "https://a.test", 2, None, None),
        ("b", "https://b.test", None, 1.5, 3),
    ]
    tables.put_limit("alice", Limit("a", "https://a.test", max_concurrent=5, version=2), expected_version=1)
    assert tables.delete_limit("alice", "b")
    _, _, limits = tables.get_runs_jobs_and_limits([], ["alice"])
    assert [(lim.name, lim.max_concurrent, lim.version) for lim in limits["alice"]] == [("a", 5, 2)]
    assert [lim.name for lim in tables.list_limits("alice")] == ["a"], "the summary is no limit"

"""The contract of ``LimitStore``: limits, their slots as leases, the token bucket, the waiters."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.limits import HANDOFF_SECONDS, Limit, Waiter, any_handed, in_use
from punctual_functions.core.model import Reason, Run, RunStatus
from punctual_functions.core.ports import LimitExists, Tables, VersionChanged
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
    assert tables.release_slot("alice", "api", holder="r1", max_concurrent=3, now=NOW) == [], "no one waits"
    assert tables.release_slot("alice", "api", holder="nobody", max_concurrent=3, now=NOW) == []
    assert tables.take_slot("alice", "api", 3, holder="r9", job_id="j", now=NOW, lease_until=LEASE)
    assert not tables.take_slot("alice", "other", 0, holder="r9", job_id="j", now=NOW, lease_until=LEASE)
    assert tables.limit_use("alice", "other").slots == ()


def test_a_slot_whose_lease_ended_is_taken_over_and_its_old_holder_cannot_free_it(tables: Tables) -> None:
    short = NOW + timedelta(seconds=5)
    assert tables.take_slot("alice", "api", 1, holder="dead", job_id="j", now=NOW, lease_until=short)
    assert not tables.take_slot("alice", "api", 1, holder="r2", job_id="j", now=NOW, lease_until=LEASE)
    later = short + timedelta(milliseconds=1)
    assert tables.take_slot("alice", "api", 1, holder="r2", job_id="j", now=later, lease_until=LEASE)
    tables.release_slot("alice", "api", holder="dead", max_concurrent=1, now=later)  # too late: r2's
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
    assert len(holders) == 4, "never more, and a take refused only when the limit was full"
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
    tables.remove_waiter("alice", "api", run)
    assert tables.limit_use("alice", "api").waiting == ()
    assert tables.release_slot("alice", "api", holder="other", max_concurrent=1, now=at) == []
    assert tables.limit_use("alice", "api").slots == ()


def _waiting(world: World, tables: Tables, count: int, name: str = "api") -> list[Run]:
    runs = []
    for n in range(count):
        _, run = world.dispatched_run()
        tables.add_waiter("alice", name, run, since=NOW + timedelta(seconds=n))
        runs.append(run)
    return runs


def _run_ids(handed: list[Waiter]) -> list[str]:
    return [waiter.run_id for waiter in handed]


def test_a_released_slot_is_handed_to_the_run_waiting_longest_and_claimed_by_one_delivery(
    world: World, tables: Tables
) -> None:
    first, second = _waiting(world, tables, 2)
    assert tables.take_slot("alice", "api", 1, holder="busy/t", job_id="j", now=NOW, lease_until=LEASE)
    at = NOW + timedelta(seconds=1)
    (handed,) = tables.release_slot("alice", "api", holder="busy/t", max_concurrent=1, now=at)
    assert (handed.job_id, handed.run_id) == (first.job_id, first.run_id)
    use = tables.limit_use("alice", "api")
    (slot,) = use.slots
    assert slot.handed and slot.run_id == first.run_id and slot.job_id == first.job_id
    assert abs(slot.lease_until - (at + timedelta(seconds=HANDOFF_SECONDS))) < timedelta(milliseconds=1), (
        "for a wake-up's way, not a call's"
    )
    assert [w.run_id for w in use.waiting] == [second.run_id], "the run handed a slot waits no more"
    # Neither another run nor a newcomer takes it; the first of the run's deliveries claims it.
    assert not tables.take_slot("alice", "api", 1, holder="new/t", job_id="j", now=at, lease_until=LEASE)
    mine = f"{first.run_id}/d1"
    assert tables.take_slot("alice", "api", 1, holder=mine, job_id=first.job_id, now=at, lease_until=LEASE)
    assert not tables.take_slot(
        "alice", "api", 1, holder=f"{first.run_id}/d2", job_id=first.job_id, now=at, lease_until=LEASE
    ), "a second delivery of the run gets no slot of its own"
    (slot,) = tables.limit_use("alice", "api").slots
    assert (slot.holder, slot.handed) == (mine, False)
    assert abs(slot.lease_until - LEASE) < timedelta(milliseconds=1)
    # Released in turn, it goes to the next; with no one left waiting, it is freed.
    handed_next = tables.release_slot("alice", "api", holder=mine, max_concurrent=1, now=at)
    assert _run_ids(handed_next) == [second.run_id]
    claimed = f"{second.run_id}/d"
    assert tables.take_slot("alice", "api", 1, holder=claimed, job_id="j", now=at, lease_until=LEASE)
    assert tables.release_slot("alice", "api", holder=claimed, max_concurrent=1, now=at) == []
    assert tables.limit_use("alice", "api").slots == ()


def test_a_handed_slot_that_will_not_be_used_passes_on_and_one_not_claimed_in_time_is_free(
    world: World, tables: Tables
) -> None:
    waiting = {run.run_id for run in _waiting(world, tables, 3)}
    for n in range(2):
        assert tables.take_slot("alice", "api", 2, holder=f"b{n}/t", job_id="j", now=NOW, lease_until=LEASE)
    (gone,) = tables.release_slot("alice", "api", holder="b0/t", max_concurrent=2, now=NOW)
    # The run it went to ended meanwhile: its woken delivery passes the slot on to the next.
    (passed,) = tables.release_slot("alice", "api", holder=any_handed(gone.run_id), max_concurrent=2, now=NOW)
    assert passed.run_id in waiting - {gone.run_id}
    assert (
        tables.release_slot("alice", "api", holder=any_handed(gone.run_id), max_concurrent=2, now=NOW) == []
    )
    # Unclaimed past its hand-over, anyone may take it.
    lapsed = NOW + timedelta(seconds=HANDOFF_SECONDS)
    assert tables.take_slot("alice", "api", 2, holder="new/t", job_id="j", now=lapsed, lease_until=LEASE)
    assert {w.run_id for w in tables.limit_use("alice", "api").waiting} == waiting - {
        gone.run_id,
        passed.run_id,
    }


def test_a_release_also_hands_over_the_slots_a_limit_has_room_for(world: World, tables: Tables) -> None:
    waiting = _waiting(world, tables, 5)
    short = NOW + timedelta(seconds=5)
    assert tables.take_slot("alice", "api", 2, holder="dead/t", job_id="j", now=NOW, lease_until=short)
    assert tables.take_slot("alice", "api", 2, holder="live/t", job_id="j", now=NOW, lease_until=LEASE)
    # The limit was raised to 4 meanwhile and the dead holder's lease ended: the live holder's
    # release hands its own slot, the lapsed one and the two never taken to the four waiting longest.
    later = short + timedelta(seconds=1)
    handed = tables.release_slot("alice", "api", holder="live/t", max_concurrent=4, now=later)
    assert sorted(_run_ids(handed)) == sorted(run.run_id for run in waiting[:4])
    slots = in_use(tables.limit_use("alice", "api").slots, later)
    assert sorted(slot.run_id for slot in slots) == sorted(run.run_id for run in waiting[:4])
    assert all(slot.handed for slot in slots)
    assert [w.run_id for w in tables.limit_use("alice", "api").waiting] == [waiting[4].run_id]


def test_a_lowered_limit_frees_a_released_slot_rather_than_hand_it_over(world: World, tables: Tables) -> None:
    (waiting,) = _waiting(world, tables, 1)
    for n in range(3):
        assert tables.take_slot("alice", "api", 3, holder=f"b{n}/t", job_id="j", now=NOW, lease_until=LEASE)
    assert tables.release_slot("alice", "api", holder="b0/t", max_concurrent=2, now=NOW) == []
    handed = tables.release_slot("alice", "api", holder="b1/t", max_concurrent=2, now=NOW)
    assert _run_ids(handed) == [waiting.run_id]
    assert tables.release_slot("alice", "api", holder="b2/t", max_concurrent=None, now=NOW) == [], "gone"
    assert [slot.run_id for slot in in_use(tables.limit_use("alice", "api").slots, NOW)] == [waiting.run_id]


def test_concurrent_releases_hand_over_to_different_runs(world: World, tables: Tables) -> None:
    waiting = _waiting(world, tables, 12)
    for n in range(4):
        assert tables.take_slot("alice", "api", 4, holder=f"b{n}/t", job_id="j", now=NOW, lease_until=LEASE)
    handed: list[str] = []
    barrier = threading.Barrier(4)

    def release(n: int) -> None:
        barrier.wait()
        handed.extend(
            _run_ids(tables.release_slot("alice", "api", holder=f"b{n}/t", max_concurrent=4, now=NOW))
        )

    threads = [threading.Thread(target=release, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(handed) == len(set(handed)), "two releases never hand over to one run"
    slots = in_use(tables.limit_use("alice", "api").slots, NOW)
    assert len(slots) <= 4
    assert sorted(slot.run_id for slot in slots) == sorted(handed)
    # In the order they began to wait, give or take the limit's slots (releases at once start at
    # different places among the first four, so that they seldom try the same run).
    assert len(handed) == 4 and set(handed) <= {run.run_id for run in waiting[: 4 + 3]}

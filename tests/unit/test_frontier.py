"""A shard's frontier (``punctual_functions.core.frontier``): what it vouches for, and that a sweep trusting
it neither loses nor repeats an occurrence."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual_functions.core.factories import build_dispatcher
from punctual_functions.core.frontier import MARGIN, Frontier, covers_bucket, first_seen, vouched_for
from punctual_functions.core.model import RunKind, Trigger, TriggerState
from tests.conftest import Clock
from tests.unit.test_engine_on_fakes import SETTINGS, Crash, engine_with

LOOKAHEAD = timedelta(seconds=SETTINGS.lookahead_seconds)
READ_AT = datetime(2026, 11, 26, 12, 0, 30, tzinfo=UTC)
FRONTIER = Frontier(until=READ_AT + LOOKAHEAD, read_at=READ_AT, horizon=READ_AT + LOOKAHEAD)


def trigger(fire_in: float, written_before_read: float, **changes: Any) -> Trigger:
    """A pending occurrence due ``fire_in`` seconds after the frontier's read, written
    ``written_before_read`` seconds before it."""
    base = Trigger(
        job_id="job_1",
        run_id="run_1",
        bucket="2026-11-26T12:02",
        shard=0,
        scheduled_for=READ_AT + timedelta(seconds=fire_in),
        fire_at=READ_AT + timedelta(seconds=fire_in),
        job_version=1,
        kind=RunKind.SCHEDULED,
        written_at=READ_AT - timedelta(seconds=written_before_read),
    )
    return replace(base, **changes)


@pytest.mark.parametrize(
    ("case", "candidate", "vouched"),
    [
        ("written ahead, read, due before the frontier", trigger(100, 30), True),
        ("due within the margin of the frontier", trigger(116, 30), False),
        ("written within the margin of the read", trigger(100, 2), False),
        ("written after the read", trigger(100, -10), False),
        ("written late into the past (a catch-up's missed occurrence)", trigger(-30, 20), False),
        ("written less than the look-ahead before its time", trigger(100, 10), False),
        ("held by the writer that sends it", trigger(100, 30, state=TriggerState.CLAIMED), False),
        ("a retry wake-up", trigger(100, 30, is_retry=True), False),
        ("written at an unknown time", trigger(100, 30, written_at=None), False),
    ],
)
def test_a_frontier_vouches_only_for_pending_occurrences_written_ahead_and_read_by_its_sweep(
    case: str, candidate: Trigger, vouched: bool
) -> None:
    assert vouched_for(candidate, FRONTIER, LOOKAHEAD) is vouched, case
    assert not vouched_for(candidate, None, LOOKAHEAD), "no frontier vouches for nothing"


def test_a_bucket_is_covered_only_when_it_ends_a_margin_before_the_frontier() -> None:
    assert covers_bucket(FRONTIER.until - MARGIN, FRONTIER)
    assert not covers_bucket(FRONTIER.until - MARGIN + timedelta(milliseconds=1), FRONTIER)
    assert not covers_bucket(READ_AT, None)


def test_only_a_pending_occurrence_due_after_a_clean_shards_last_horizon_is_new_to_every_sweep() -> None:
    later = trigger(LOOKAHEAD.total_seconds() + 1, 30)
    assert first_seen(later, FRONTIER, clean=True)
    assert not first_seen(later, FRONTIER, clean=False), "a sweep that died after it may have sent it"
    assert not first_seen(trigger(100, 30), FRONTIER, clean=True), "within the last horizon"
    assert not first_seen(replace(later, state=TriggerState.CLAIMED), FRONTIER, clean=True)
    assert not first_seen(replace(later, is_retry=True), FRONTIER, clean=True)


def test_a_trigger_left_waiting_for_its_job_is_sent_by_a_later_sweep(clock: Clock) -> None:
    """The frontier stops before a trigger its sweep left as it was (its job's create under way):
    otherwise the next sweep would take it for sent, and so would the one passing its minute."""
    engine = engine_with(SETTINGS.replace(shard_count=1), clock)
    job = engine.create(schedule={"at": (clock() + timedelta(seconds=140)).isoformat()})
    stored = engine.store.jobs.pop(job["job_id"])  # as if its create had written the trigger only
    clock.advance(30)
    report = engine.dispatcher.sweep()
    assert report.dispatch.sent == 0 and report.dispatch.waiting is not None
    engine.store.jobs[stored.job_id] = stored  # the create is done
    clock.advance(60)
    fresh = build_dispatcher(engine.dispatcher.settings, store=engine.store, queue=engine.queue, clock=clock)
    assert fresh.sweep().dispatch.sent == 1
    assert [message.job_id for message, _delay in engine.queue.sent] == [job["job_id"]]


def test_after_a_sweep_died_midway_the_next_one_reads_the_runs_and_sends_nothing_twice(clock: Clock) -> None:
    """A sweep that dies after sending part of its window leaves the shard unclean: the next one
    checks the runs of what the last frontier does not cover, instead of taking it as new."""
    engine = engine_with(SETTINGS.replace(shard_count=1), clock)
    engine.dispatcher.sweep()  # a clean sweep: the frontier is its horizon
    clock.advance(30)
    first = engine.create(schedule={"at": (clock() + timedelta(seconds=135)).isoformat()})
    second = engine.create(schedule={"at": (clock() + timedelta(seconds=200)).isoformat()})
    clock.advance(90)
    sends = 0

    def dies_at_the_second_send(point: str) -> None:
        nonlocal sends
        if point == "after_send_before_record":
            sends += 1
            if sends == 2:
                raise Crash(point)

    dying = build_dispatcher(engine.dispatcher.settings, store=engine.store, queue=engine.queue, clock=clock)
    dying.crash_point = dies_at_the_second_send
    with pytest.raises(Crash):
        dying.sweep()
    assert len(engine.queue.sent) == 2, "both sent, the second run not written"
    fresh = build_dispatcher(engine.dispatcher.settings, store=engine.store, queue=engine.queue, clock=clock)
    fresh.sweep()
    sent = [message.job_id for message, _delay in engine.queue.sent]
    assert sent.count(first["job_id"]) == 1, "its run exists: not sent again"
    assert sent.count(second["job_id"]) == 2, "no run: sent again (the worker's start takes one)"


@pytest.mark.parametrize("batch", [False, True])
def test_a_slow_create_leaves_a_trigger_it_wrote_pending_to_the_sweep_which_sends_it_once(
    clock: Clock, batch: bool
) -> None:
    """Found by the simulator (one owner creating 5,000 jobs a second, requests slowed by a
    throttled index): a create dispatched what fell within the look-ahead by the time it was done,
    also a trigger it had written pending, and the sweep, taking such a trigger for one no sweep had
    sent, sent it a second time (a duplicate message, a worker's invocation spent on nothing)."""
    engine = engine_with(SETTINGS.replace(shard_count=1), clock)
    engine.dispatcher.sweep()  # a clean sweep: the shard's frontier is its horizon
    clock.advance(5)
    create_job = engine.store.create_job

    def slow_create(*args: Any, **kwargs: Any) -> Any:
        created = create_job(*args, **kwargs)
        clock.advance(4)  # the request's writes took that long (the SDK's retries)
        return created

    engine.store.create_job = slow_create  # type: ignore[method-assign]
    at = (clock() + LOOKAHEAD + timedelta(seconds=2)).isoformat()  # beyond the look-ahead when written
    body = {"schedule": {"at": at}, "target": {"type": "http", "url": "https://example.com/hook"}}
    if batch:
        (answer,) = engine.service.create_jobs("alice", [body])
        job_id = answer["job"]["job_id"]
    else:
        job_id = engine.create(**body)["job_id"]
    assert engine.queue.sent == [], "written pending: the sweep's to send"
    fresh = build_dispatcher(engine.dispatcher.settings, store=engine.store, queue=engine.queue, clock=clock)
    fresh.sweep()
    clock.advance(30)
    build_dispatcher(engine.dispatcher.settings, store=engine.store, queue=engine.queue, clock=clock).sweep()
    assert [message.job_id for message, _delay in engine.queue.sent] == [job_id]

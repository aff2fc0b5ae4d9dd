"""A tick whose sweep of a shard is still under way keeps the shard: the next tick leaves it alone
instead of reading and sending its triggers again (the simulator showed an overloaded dispatcher's
overlapping sweeps doubling its work: docs/scale.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from punctual.sim.world import World
from punctual.testing.fakes.store import MemoryStore
from punctual_functions.api.requests import CreateJobIn
from punctual_functions.core.factories import build_dispatcher, build_job_service
from punctual_functions.core.model import Trigger
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.sweep import SHARD_HOLD, SweepReport
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue
from tests.unit.test_engine_on_fakes import HOOK, SETTINGS, engine_with


def test_a_shard_held_by_a_sweep_under_way_is_left_to_it_until_its_hold_ends(clock: Clock) -> None:
    engine = engine_with(SETTINGS.replace(shard_count=1), clock)
    due = clock() + timedelta(seconds=SETTINGS.lookahead_seconds + 30)
    engine.create(schedule={"at": due.isoformat()})  # beyond the look-ahead: the sweep sends it
    clock.advance(40)
    assert engine.store.hold_shard(0, token="last-tick", now=clock(), until=clock() + SHARD_HOLD).held
    report = engine.dispatcher.sweep()
    assert report.shards_busy == 1 and engine.queue.sent == [], "left to the sweep that holds it"
    clock.advance(SHARD_HOLD.total_seconds())
    report = engine.dispatcher.sweep()  # the holder died: its hold ended
    assert report.shards_busy == 0 and len(engine.queue.sent) == 1
    assert engine.store.holds == {}, "released when the sweep ended"


def test_a_sweep_longer_than_its_hold_keeps_its_shard_and_the_next_tick_leaves_it_alone() -> None:
    """In virtual time (the simulator's clock): a sweep whose reads take 40 s each runs for minutes;
    its hold is renewed in the background, so the ticks that come meanwhile find the shard busy and
    every occurrence is sent once."""
    world = World(datetime(2026, 12, 1, tzinfo=UTC))
    store, queue = MemoryStore(), MemoryQueue(delays=False)
    settings = SETTINGS.replace(shard_count=1)
    dispatcher = build_dispatcher(
        settings, store=store, queue=queue, clock=world, crash_point=lambda _name: None
    )
    service = build_job_service(
        settings,
        store=store,
        dispatcher=dispatcher,
        policy=NetworkPolicy(allow_list=("example.com",)),
        clock=world,
    )
    for seconds in (130, 150, 170):  # beyond the look-ahead when created
        body = {"schedule": {"at": world.at(seconds).isoformat()}, "target": HOOK}
        service.create_job("alice", CreateJobIn.model_validate(body))
    query = store.query_bucket

    def slow_query(bucket: str, shard: int, *, consistent: bool = True) -> list[Trigger]:
        found = query(bucket, shard, consistent=consistent)
        if found:
            world.sleep(70)  # a busy bucket's read, longer than a hold and than a tick
        return found

    store.query_bucket = slow_query  # type: ignore[method-assign]
    reports: list[tuple[float, SweepReport]] = []

    def tick() -> None:
        reports.append((world.now, dispatcher.sweep()))

    for minute in range(6):
        world.spawn(tick, at=60.0 * minute + 15)
    world.run()
    busy = [report.shards_busy for _ended, report in reports]
    assert busy.count(1) >= 1, reports  # a tick during a long sweep
    assert (
        sorted(message.run_id for message, _delay in queue.sent)
        == sorted({message.run_id for message, _delay in queue.sent})
        and len(queue.sent) == 3
    ), "each sent once"
    assert store.holds == {}

"""The simulator's loop: tasks wait in virtual time, in order, and what the engine's clock port
promises (sleep, wait on an event, parallel maps, background work) holds in it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from punctual.sim.world import SimulationError, World

EPOCH = datetime(2026, 12, 1, tzinfo=UTC)


def test_tasks_wake_in_time_order_and_the_clock_reads_virtual_time() -> None:
    world = World(EPOCH)
    woke: list[tuple[str, float]] = []

    def sleeper(name: str, seconds: float) -> None:
        world.sleep(seconds)
        woke.append((name, world.now))
        assert world() == EPOCH + timedelta(seconds=seconds)

    world.spawn(lambda: sleeper("late", 2.5))
    world.spawn(lambda: sleeper("early", 0.5))
    world.spawn(lambda: sleeper("middle", 1.0), at=0.0)
    world.run()
    assert woke == [("early", 0.5), ("middle", 1.0), ("late", 2.5)]


def test_a_parallel_map_runs_its_workers_at_once_and_keeps_the_order_of_its_results() -> None:
    world = World(EPOCH)
    out: dict[str, object] = {}

    def main() -> None:
        def work(seconds: float) -> float:
            world.sleep(seconds)
            return seconds * 10

        out["results"] = world.parallel(work, [3.0, 1.0, 2.0], 2, "map")
        out["ended"] = world.now

    world.spawn(main)
    world.run()
    # two workers: one takes 3 s, the other 1 s then 2 s
    assert out == {"results": [30.0, 10.0, 20.0], "ended": 3.0}


def test_a_parallel_map_raises_the_first_error_after_every_worker_ended() -> None:
    world = World(EPOCH)
    seen: list[object] = []

    def work(n: int) -> int:
        world.sleep(n)
        if n == 1:
            raise ValueError("one")
        seen.append(n)
        return n

    def main() -> None:
        with pytest.raises(ValueError, match="one"):
            world.parallel(work, [1, 2], 2, "map")
        seen.append(world.now)

    world.spawn(main)
    world.run()
    assert seen == [2, 2.0]


def test_a_wait_on_an_event_ends_when_another_task_sets_it_or_at_its_timeout() -> None:
    world = World(EPOCH)
    event = threading.Event()
    out: list[tuple[bool, float]] = []

    def waiter() -> None:
        out.append((world.wait(event, 5.0), round(world.now, 3)))
        out.append((world.wait(threading.Event(), 1.0), round(world.now, 3)))

    def setter() -> None:
        world.sleep(0.3)
        event.set()

    world.spawn(waiter)
    world.start(setter, "setter")  # outside a task: a task all the same
    world.run()
    assert out[0][0] is True and 0.3 <= out[0][1] <= 0.32
    assert out[1] == (False, round(out[0][1] + 1.0, 3))


def test_join_waits_for_background_work_and_its_timeout_bounds_the_wait() -> None:
    world = World(EPOCH)
    ended: list[float] = []

    def main() -> None:
        slow = world.start(lambda: world.sleep(10), "slow")
        slow.join(2)
        ended.append(world.now)
        slow.join()
        ended.append(world.now)

    world.spawn(main)
    world.run()
    assert ended == [2.0, 10.0]


def test_run_stops_at_its_horizon_and_goes_on_from_there() -> None:
    world = World(EPOCH)
    ticks: list[float] = []

    def ticker() -> None:
        while True:
            world.sleep(1)
            ticks.append(world.now)

    world.spawn(ticker)
    world.run(until=3.5)
    assert ticks == [1, 2, 3] and world.now == 3.5
    world.run(until=5)
    assert ticks == [1, 2, 3, 4, 5]


def test_a_task_that_fails_unobserved_stops_the_run_with_its_error() -> None:
    world = World(EPOCH)

    def broken() -> None:
        world.sleep(1)
        raise KeyError("bug")

    world.spawn(broken, name="broken")
    with pytest.raises(SimulationError, match="broken") as raised:
        world.run()
    assert isinstance(raised.value.__cause__, KeyError)


def test_only_a_task_may_wait() -> None:
    with pytest.raises(SimulationError):
        World(EPOCH).sleep(1)


def test_a_wait_too_short_for_the_clock_to_show_still_lets_time_pass() -> None:
    # The heartbeat waits until its next beat is due; at 300 s, a remainder of 1e-14 s is below the
    # float's resolution, and the wait used to return at once with the clock stopped: the heartbeat
    # spun for ever (found when it first beat through a slow outcome write).
    world = World(EPOCH)
    event = threading.Event()
    moments: list[float] = []

    def waiter() -> None:
        world.sleep(300.0)
        started = world.monotonic() - 1.0  # as the heartbeat counts its age
        next_beat = (world.monotonic() - started) + 1e-14  # representable at 1 s, not at 300 s
        while world.monotonic() - started < next_beat:
            world.wait(event, next_beat - (world.monotonic() - started))
            moments.append(world.now)
            assert len(moments) < 10, "the clock did not move"

    world.spawn(waiter, name="waiter")
    world.run(until=400.0)
    assert moments and moments[-1] > 300.0

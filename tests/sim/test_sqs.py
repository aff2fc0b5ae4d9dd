"""The simulated queue keeps the SQS semantics the engine depends on, and its event source mapping
scales and delivers as AWS documents it."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from punctual.scale.params import DEFAULTS
from punctual.scale.plan import plan
from punctual.sim.lambdas import Lambdas
from punctual.sim.sqs import EventSourceMapping, Message, QueueOverLimit, SimQueue
from punctual.sim.world import World
from punctual_functions.core.queue import WorkMessage

EPOCH = datetime(2026, 12, 1, tzinfo=UTC)


def queue_in(world: World, in_flight_limit: int = 1000) -> SimQueue:
    return SimQueue(
        world,
        DEFAULTS,
        random.Random(1),
        visibility_seconds=30,
        in_flight_limit=in_flight_limit,
        charge=lambda _seconds: None,
    )


def mapping_of(
    queue: SimQueue,
    lambdas: Lambdas,
    handle: Callable[[list[Message]], list[str]],
    *,
    maximum_concurrency: int,
    **mode: Any,
) -> EventSourceMapping:
    """The worker's event source with its default batch, calling ``handle`` (``mode``: provisioned
    mode's arguments)."""
    return EventSourceMapping(
        queue.world,
        queue,
        lambdas,
        DEFAULTS,
        random.Random(1),
        handle_batch=handle,
        batch_size=10,
        window_seconds=0,
        maximum_concurrency=maximum_concurrency,
        **mode,
    )


def in_task(world: World, body: object) -> None:
    world.spawn(body)  # type: ignore[arg-type]
    world.run(until=10_000)


def test_a_delayed_message_becomes_visible_after_its_whole_seconds_and_not_before() -> None:
    world = World(EPOCH)
    queue = queue_in(world)
    seen: dict[str, object] = {}

    def body() -> None:
        queue.send([(WorkMessage("j", "r"), 3)])
        sent = world.now
        world.sleep(2.9 - (world.now - sent))
        seen["before"] = queue.receive(10)
        world.sleep(0.2)
        seen["after"] = queue.receive(10)
        with pytest.raises(ValueError):
            queue.send([(WorkMessage("j", "r"), 901)])

    in_task(world, body)
    assert seen["before"] == [] and len(seen["after"]) == 1  # type: ignore[arg-type]


def test_a_received_message_is_hidden_for_its_visibility_and_comes_back_with_a_new_receipt() -> None:
    world = World(EPOCH)
    queue = queue_in(world)
    seen: list[Message] = []

    def body() -> None:
        queue.send([(WorkMessage("j", "r"), 0)])
        world.sleep(0.01)
        (first,) = queue.receive(10)
        handle = first.receipt
        assert queue.receive(10) == []
        queue.change_visibility(handle or "", 2)
        world.sleep(2.01)
        (again,) = queue.receive(10)
        seen.append(again)
        assert again.receipt != handle and again.receives == 2
        with pytest.raises(ClientError):  # the old receipt is stale
            queue.change_visibility(handle or "", 5)
        assert queue.change_visibilities([(handle or "", 5)]) == [handle]
        queue.delete_messages([handle or ""])  # a stale handle deletes nothing
        assert queue.in_flight() == 1
        queue.delete_messages([again.receipt or ""])
        assert queue.in_flight() == 0

    in_task(world, body)
    assert len(seen) == 1


def test_a_message_whose_visibility_ran_out_is_not_in_flight_and_refuses_a_change() -> None:
    world = World(EPOCH)
    queue = queue_in(world)

    def body() -> None:
        queue.send([(WorkMessage("j", "r"), 0)])
        world.sleep(0.01)
        (message,) = queue.receive(10)
        queue.change_visibility(message.receipt or "", 1)
        world.sleep(1.5)
        with pytest.raises(ClientError, match="MessageNotInflight"):
            queue.change_visibility(message.receipt or "", 5)

    in_task(world, body)


def test_receive_is_refused_at_the_in_flight_limit() -> None:
    world = World(EPOCH)
    queue = queue_in(world, in_flight_limit=2)

    def body() -> None:
        queue.send([(WorkMessage("j", str(n)), 0) for n in range(5)])
        world.sleep(0.01)
        assert len(queue.receive(2)) == 2
        with pytest.raises(QueueOverLimit):
            queue.receive(2)

    in_task(world, body)
    assert queue.stats.over_limit == 1


def test_the_event_source_invokes_the_worker_with_batches_and_deletes_what_succeeded() -> None:
    world = World(EPOCH)
    queue = queue_in(world)
    lambdas = Lambdas(world, DEFAULTS, 1000)
    handled: list[tuple[float, int]] = []

    def handle(batch: list[Message]) -> list[str]:
        handled.append((world.now, len(batch)))
        return [message.receipt or "" for message in batch[:-1]]  # the last one fails

    mapping = mapping_of(queue, lambdas, handle, maximum_concurrency=50)
    world.spawn(lambda: queue.send([(WorkMessage("j", str(n)), 1) for n in range(10)]))
    world.run(until=5)
    assert len(handled) == 1 and handled[0][1] == 10
    assert 1.0 < handled[0][0] < 2.0  # delay, then the mapping's latency (and a cold start)
    assert queue.in_flight() == 1 and mapping.records == 10
    assert lambdas.stats("worker").cold_starts == 1


def backlogged(batch_seconds: float, messages: int) -> EventSourceMapping:
    """An event source whose every batch takes ``batch_seconds``, ``messages`` visible at once,
    after two minutes."""
    world = World(EPOCH)
    queue = queue_in(world, in_flight_limit=1_000_000)
    lambdas = Lambdas(world, DEFAULTS, 10_000)

    def handle(batch: list[Message]) -> list[str]:
        world.sleep(batch_seconds)
        return [message.receipt or "" for message in batch]

    mapping = mapping_of(queue, lambdas, handle, maximum_concurrency=10_000)
    assert mapping.pollers == DEFAULTS.esm_initial_concurrency
    world.spawn(lambda: queue.send([(WorkMessage("j", str(n)), 0) for n in range(messages)]))
    world.run(until=120)
    return mapping


def test_the_event_source_scales_by_its_published_step_while_messages_wait() -> None:
    mapping = backlogged(30, 100_000)
    # 300 a minute: two minutes of backlog add about 600 to the 5 it started with
    assert 580 <= mapping.pollers <= 610
    assert mapping.peak_busy >= mapping.pollers - 10  # the newest are on their way to a batch


def test_the_event_source_scales_while_messages_wait_though_its_pollers_turn_over_quickly() -> None:
    """Short batches: at any instant a few of many pollers are between two batches. The scaler
    asked that every poller be busy at its check, so a whole deployment's event source (tens of
    pollers) stalled with a backlog where a group's few pollers scaled (the unsplit 100,000 a minute
    ran 15 s late at p50); it scales while more messages wait than its free pollers take."""
    mapping = backlogged(0.3, 1_000_000)
    assert mapping.pollers >= 580, mapping.pollers


def test_provisioned_pollers_kept_ready_serve_their_invocations_from_the_start() -> None:
    world = World(EPOCH)
    queue = queue_in(world)
    lambdas = Lambdas(world, DEFAULTS, 10_000)
    ready = mapping_of(
        queue, lambdas, lambda _batch: [], maximum_concurrency=5000, provisioned=True, minimum_pollers=200
    )
    assert ready.pollers == 200 * DEFAULTS.esm_invocations_per_poller
    default = mapping_of(queue, lambdas, lambda _batch: [], maximum_concurrency=5000, provisioned=True)
    assert default.pollers == DEFAULTS.esm_initial_concurrency, "without a minimum: it scales up from five"


def test_the_plan_keeps_pollers_ready_for_a_million_a_minute() -> None:
    deployment = plan(1_000_000).deployment
    ready = deployment.minimum_pollers * DEFAULTS.esm_invocations_per_poller
    assert deployment.provisioned_pollers and 0 < ready <= 2_000, "at most 200 pollers"
    assert ready * 2 >= deployment.worker_max_concurrency, "half the load's concurrency, or the most"
    assert plan(10_000).deployment.minimum_pollers == 0


def test_a_function_gets_at_most_a_thousand_new_environments_in_ten_seconds() -> None:
    # Lambda's scaling rate per function: 1,000 execution environments every 10 s, refilled
    # continuously, unused rate not kept. A burst of 3,000 invocations of one function: 1,000 start
    # at once, then about 100 more a second; warm environments serve again without the rate.
    world = World(datetime(2026, 1, 1, tzinfo=UTC))
    lambdas = Lambdas(world, DEFAULTS, 10_000)
    started: list[float] = []

    def burst() -> None:
        first = [lambdas.invoke("worker", lambda: world.sleep(60)) for _ in range(3000)]
        started.append(sum(task is not None for task in first))
        world.sleep(5)
        later = [lambdas.invoke("worker", lambda: world.sleep(60)) for _ in range(3000)]
        started.append(sum(task is not None for task in later))
        world.sleep(120)  # every environment is free again: warm ones need no rate
        again = [lambdas.invoke("worker", lambda: None) for _ in range(1500)]
        started.append(sum(task is not None for task in again))

    world.spawn(burst)
    world.run()
    assert started == [1000, 500, 1500]
    assert lambdas.stats("worker").throttled_scaling == 2000 + 2500


def test_an_environment_left_idle_or_grown_old_is_gone_and_the_next_invocation_starts_cold() -> None:
    """Lambda keeps an idle execution environment for a while, and replaces even a busy one now and
    then: a load after a quiet spell starts cold (both lifetimes are parameters)."""
    params = DEFAULTS.replace(lambda_idle_expiry_seconds=300.0, lambda_environment_lifetime_seconds=7200.0)
    world = World(datetime(2026, 1, 1, tzinfo=UTC))
    lambdas = Lambdas(world, params, 10_000)
    cold: list[int] = []

    def invocations() -> None:
        stats = lambdas.stats("worker")
        for pause in (0, 60, 299, 301):  # idle less than five minutes: warm; more: cold
            world.sleep(pause)
            lambdas.invoke("worker", lambda: world.sleep(1))
            world.sleep(1)
            cold.append(stats.cold_starts)
        world.sleep(5)
        for _ in range(130):  # busy for over two hours, a minute apart: replaced once
            lambdas.invoke("worker", lambda: world.sleep(1))
            world.sleep(60)
        cold.append(stats.cold_starts)

    world.spawn(invocations)
    world.run()
    assert cold == [1, 1, 1, 2, 3]
    assert lambdas.stats("worker").expired == 2 and lambdas.stats("worker").environments == 1

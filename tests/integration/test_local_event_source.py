"""The local stack's SQS event source (``punctual.local.roles.EventSource``) behaves as Lambda's: a batch
is invoked as soon as it is received, whatever earlier invocations are still doing, up to the
mapping's maximum concurrency; beyond it, messages stay in the queue for a later receive; and a chain
of messages an invocation sends to its own queue stops at its 16th invocation unless allowed."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest

from punctual.local.recursion import MAX_CHAIN_INVOCATIONS, RecursiveLoop, install
from punctual.local.roles import EventSource
from punctual_functions.core.settings import Settings


class BlockingHandler:
    """A worker handler whose invocations all wait until released, counting those in flight."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.in_flight = 0
        self.invoked: list[str] = []
        self.release = threading.Event()

    def __call__(self, event: dict[str, Any], _context: Any) -> dict[str, Any]:
        with self.condition:
            self.in_flight += 1
            self.invoked.extend(record["body"] for record in event["Records"])
            self.condition.notify_all()
        self.release.wait(30)
        with self.condition:
            self.in_flight -= 1
        return {"batchItemFailures": []}

    def wait_for(self, in_flight: int, timeout: float = 10) -> bool:
        with self.condition:
            return self.condition.wait_for(lambda: self.in_flight >= in_flight, timeout)


@pytest.fixture
def queue(moto_endpoint: str) -> Iterator[tuple[Any, Settings]]:
    sqs: Any = boto3.client(
        "sqs",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    url = sqs.create_queue(QueueName=f"work-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    settings = Settings(aws_endpoint_url=moto_endpoint, queue_url=url, region="us-east-1")
    yield sqs, settings
    sqs.delete_queue(QueueUrl=url)


_STARTED: list[EventSource] = []


def _start(source: EventSource) -> None:
    threading.Thread(target=source.run, daemon=True).start()
    _STARTED.append(source)


@pytest.fixture(autouse=True)
def _stop_sources(queue: tuple[Any, Settings]) -> Iterator[None]:
    """Each test's event sources stop polling as its queue goes (else their pollers would log a failed
    receive every second for the rest of the session); a long poll under way ends by itself."""
    yield
    while _STARTED:
        _STARTED.pop().stop()


def _visible(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_a_batch_is_invoked_while_every_poller_s_earlier_invocation_still_waits(
    queue: tuple[Any, Settings],
) -> None:
    """Messages arriving one by one, each held by its invocation until its second, each get an
    invocation of their own at once: two pollers start six. (A poller that waited for its invocation
    left the third message in the queue until one of the first two had ended: after its second.)"""
    sqs, settings = queue
    handler = BlockingHandler()
    source = EventSource(settings, pollers=2, max_concurrency=50, batch_size=1, handler=handler)
    _start(source)
    try:
        for n in range(6):
            sqs.send_message(QueueUrl=settings.queue_url, MessageBody=f"m{n}")
        assert handler.wait_for(6), f"{handler.in_flight} invocations in flight, not 6"
        assert sorted(handler.invoked) == [f"m{n}" for n in range(6)]
    finally:
        handler.release.set()


def test_at_its_maximum_concurrency_the_event_source_leaves_messages_in_the_queue(
    queue: tuple[Any, Settings],
) -> None:
    """Three invocations at most: the other messages stay visible (not received and hidden where no
    invocation can take them), and are invoked once an invocation ends; each is deleted after it."""
    sqs, settings = queue
    handler = BlockingHandler()
    source = EventSource(settings, pollers=4, max_concurrency=3, batch_size=1, handler=handler)
    _start(source)
    for n in range(5):
        sqs.send_message(QueueUrl=settings.queue_url, MessageBody=f"m{n}")
    assert handler.wait_for(3)
    assert handler.in_flight == 3
    assert _visible(sqs, settings.queue_url) == 2
    handler.release.set()
    with handler.condition:
        assert handler.condition.wait_for(lambda: len(handler.invoked) == 5, 10)
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    left: dict[str, str] = {}
    for _ in range(50):  # the last deletes follow the last invocations' ends
        left = sqs.get_queue_attributes(QueueUrl=settings.queue_url, AttributeNames=names)["Attributes"]
        if left == dict.fromkeys(names, "0"):
            break
        time.sleep(0.1)
    assert left == dict.fromkeys(names, "0"), "messages left after their invocations"


def test_a_worker_process_keeps_at_most_its_messages_in_flight(queue: tuple[Any, Settings]) -> None:
    """The emulator serves the table one request at a time: 300 runs due at one second, all received
    at once, kept it busy for minutes. Batches of ten under a budget of 25: two batches and five."""
    sqs, settings = queue
    handler = BlockingHandler()
    source = EventSource(
        settings, pollers=4, max_concurrency=50, batch_size=10, handler=handler, max_messages=25
    )
    for start in range(0, 40, 10):
        sqs.send_message_batch(
            QueueUrl=settings.queue_url,
            Entries=[{"Id": str(n), "MessageBody": f"m{start + n}"} for n in range(10)],
        )
    _start(source)
    try:
        with handler.condition:
            assert handler.condition.wait_for(lambda: len(handler.invoked) >= 25, 10)
        time.sleep(0.5)  # a poller that took more would have invoked by now
        assert len(handler.invoked) == 25
        assert _visible(sqs, settings.queue_url) == 15
    finally:
        handler.release.set()
    with handler.condition:
        assert handler.condition.wait_for(lambda: len(handler.invoked) == 40, 10)


class ChainingHandler:
    """A worker handler that continues a chain, as the worker's follow-ups do: each invocation sends
    the next message to the queue that invoked it, up to ``links`` invocations."""

    def __init__(self, sqs: Any, url: str, links: int) -> None:
        self.sqs = sqs
        self.url = url
        self.links = links
        self.invoked: list[int] = []
        self.done = threading.Event()

    def __call__(self, event: dict[str, Any], _context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            link = int(record["body"])
            self.invoked.append(link)
            if link < self.links:
                self.sqs.send_message(QueueUrl=self.url, MessageBody=str(link + 1))
            else:
                self.done.set()
        return {"batchItemFailures": []}


def _chain(
    queue: tuple[Any, Settings], recursive_loop: RecursiveLoop, links: int
) -> tuple[ChainingHandler, Any]:
    sqs, settings = queue
    dlq = sqs.create_queue(QueueName=f"dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    settings = replace(settings, dlq_url=dlq)
    install()  # as a worker process does before its first client (each made by a session of its own)
    sender = boto3.session.Session().client(
        "sqs",
        endpoint_url=settings.aws_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    handler = ChainingHandler(sender, settings.queue_url, links)
    source = EventSource(
        settings, pollers=1, max_concurrency=5, batch_size=1, handler=handler, recursive_loop=recursive_loop
    )
    _start(source)
    sqs.send_message(QueueUrl=settings.queue_url, MessageBody="1")  # from outside: a fresh chain
    return handler, dlq


def test_a_chain_of_the_worker_s_own_messages_stops_at_its_16th_invocation_under_terminate(
    queue: tuple[Any, Settings],
) -> None:
    """Lambda's recursive-loop detection, as the local event source imitates it: the 17th invocation a
    chain would make goes to the dead-letter queue, uninvoked, with the reason."""
    sqs, _ = queue
    handler, dlq = _chain(queue, "Terminate", links=30)
    deadline = time.monotonic() + 20
    stopped: list[dict[str, Any]] = []
    while not stopped and time.monotonic() < deadline:
        answer = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"], WaitTimeSeconds=1)
        stopped = list(answer.get("Messages") or [])
    assert [m["Body"] for m in stopped] == [str(MAX_CHAIN_INVOCATIONS + 1)]
    assert stopped[0]["MessageAttributes"]["reason"]["StringValue"] == "recursive loop detected by Lambda"
    assert handler.invoked == list(range(1, MAX_CHAIN_INVOCATIONS + 1))
    assert not handler.done.is_set()


def test_a_chain_of_the_worker_s_own_messages_runs_to_its_end_under_allow(
    queue: tuple[Any, Settings],
) -> None:
    handler, _dlq = _chain(queue, "Allow", links=30)
    assert handler.done.wait(20), f"the chain stopped after {len(handler.invoked)} invocations"
    assert handler.invoked == list(range(1, 31))


def test_a_stopped_event_source_ends_its_run_once_its_long_polls_end(queue: tuple[Any, Settings]) -> None:
    _sqs, settings = queue
    source = EventSource(
        settings, pollers=3, max_concurrency=5, batch_size=1, handler=lambda event, context: {}
    )
    running = threading.Thread(target=source.run, daemon=True)
    running.start()
    time.sleep(0.3)
    source.stop()
    running.join(5)
    assert not running.is_alive()


def test_the_local_worker_builds_its_executor_before_its_first_receive(queue: tuple[Any, Settings]) -> None:
    from punctual_functions.worker import handler as worker

    _sqs, settings = queue
    worker.run_executor.cache_clear()
    EventSource(settings, pollers=1, max_concurrency=1)
    assert worker.run_executor.cache_info().currsize == 1

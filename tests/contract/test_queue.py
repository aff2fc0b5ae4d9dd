"""The contract of the ``Queue`` port, held against ``MemoryQueue`` and the SQS queue on moto."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from punctual.local.provision import provision
from punctual_functions.core import aws
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.settings import Settings
from tests.fakes.queue import MemoryQueue
from tests.integration.conftest import QueueUnderTest, RecordingQueue


class DelayingQueue(RecordingQueue):
    """The real queue, delays and all (``RecordingQueue`` drops them for the test clock)."""

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        self.sent.extend(messages)
        super(RecordingQueue, self).send(messages)


@pytest.fixture(params=["memory", pytest.param("sqs", marks=pytest.mark.moto)])
def queue(request: pytest.FixtureRequest) -> Iterator[QueueUnderTest]:
    if request.param == "memory":
        yield MemoryQueue()
        return
    prefix = f"q{uuid.uuid4().hex[:12]}"
    endpoint = request.getfixturevalue("moto_endpoint")
    settings = provision(Settings(aws_endpoint_url=endpoint, table_name=prefix), prefix=prefix)
    yield DelayingQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url)


def test_a_delayed_message_appears_after_its_delay_and_hides_while_held(queue: QueueUnderTest) -> None:
    queue.send([(WorkMessage("j", "now"), 0), (WorkMessage("j", "later"), 1)])
    (first,) = queue.receive()
    assert WorkMessage.from_json(first["Body"]).run_id == "now"
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    assert queue.depth()["in_flight"] >= 1
    time.sleep(1.2)
    (second,) = queue.receive()
    assert WorkMessage.from_json(second["Body"]).run_id == "later"
    queue.change_visibility(first["ReceiptHandle"], 0)  # given back at once
    (again,) = queue.receive()
    assert again["Body"] == first["Body"] and again["Attributes"]["ApproximateReceiveCount"] == "2"
    queue.delete(again["ReceiptHandle"])
    queue.delete(second["ReceiptHandle"])
    assert queue.receive() == []


def test_a_dead_letter_keeps_its_body_and_counts_in_the_depth(queue: QueueUnderTest) -> None:
    queue.send_to_dlq('{"job_id":"j","run_id":"r"}', "failed for good")
    assert queue.depth()["dlq"] == 1
    assert queue.dlq_bodies() == ['{"job_id":"j","run_id":"r"}']


def test_received_messages_are_deleted_in_batches_and_a_second_delete_is_harmless(
    queue: QueueUnderTest,
) -> None:
    queue.send([(WorkMessage("j", f"r{n}"), 0) for n in range(12)])
    received = queue.receive(10) + queue.receive(10)
    assert len(received) == 12
    handles = [m["ReceiptHandle"] for m in received]
    queue.delete_messages(handles)
    queue.delete_messages(handles[:3])  # the event source mapping deletes them again afterwards
    assert queue.receive(10) == []
    assert queue.depth()["in_flight"] == 0


def test_visibilities_change_ten_to_a_request_and_a_deleted_messages_change_is_refused(
    queue: QueueUnderTest,
) -> None:
    queue.send([(WorkMessage("j", f"r{n}"), 0) for n in range(12)])
    received = queue.receive(10) + queue.receive(10)
    handles = [m["ReceiptHandle"] for m in received]
    queue.delete_messages(handles[:1])
    # all hidden a while, except two given back at once
    refused = queue.change_visibilities(
        [(handle, 0 if n in (3, 11) else 30) for n, handle in enumerate(handles)]
    )
    assert refused in ([], handles[:1]), "a deleted message's change is refused or ignored, never raised"
    given_back = sorted(WorkMessage.from_json(received[n]["Body"]).run_id for n in (3, 11))
    assert sorted(WorkMessage.from_json(m["Body"]).run_id for m in queue.receive(10)) == given_back

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest

from punctual.local.gateway import LambdaContext, build_event
from punctual.local.provision import provision
from punctual.testing.fakes.store import MemoryStore
from punctual.testing.receiver import Receiver
from punctual_functions.api import handler as api
from punctual_functions.api import responses
from punctual_functions.api.answer_size import LAMBDA_ANSWER_BYTES
from punctual_functions.api.errors import ApiError
from punctual_functions.api.service import JobService
from punctual_functions.core import aws
from punctual_functions.core.factories import build_network_policy, build_store, build_target_executor
from punctual_functions.core.ports import Tables, Targets
from punctual_functions.core.queue import WorkMessage, WorkQueue
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.settings import Settings
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue
from tests.harness import Harness as Wired
from tests.harness import QueueUnderTest, SimulatedCrash

__all__ = ["GOOD_JOB", "Call", "Harness", "QueueUnderTest", "RecordingQueue", "SimulatedCrash", "http_target"]


class RecordingQueue(WorkQueue):
    """The real queue, but messages are sent without delay (the test clock is not the wall clock);
    the delay that would have been used is recorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[WorkMessage, int]] = []

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        self.sent.extend(messages)
        super().send([(message, 0) for message, _delay in messages])

    def receive(self, max_messages: int = 10, visibility: int = 30) -> list[Any]:
        response = self.client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max_messages,
            VisibilityTimeout=visibility,
            AttributeNames=["ApproximateReceiveCount"],
        )
        return list(response.get("Messages") or [])

    def delete(self, receipt_handle: str) -> None:
        self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle)

    def dlq_bodies(self) -> list[str]:
        response = self.client.receive_message(QueueUrl=self.dlq_url, MaxNumberOfMessages=10)
        return [m["Body"] for m in response.get("Messages") or []]


# The integration tests' harness: over the fakes, or over the real store and queue on moto.
Harness = Wired[Tables, QueueUnderTest, Targets]


@pytest.fixture(params=["memory", pytest.param("dynamodb", marks=pytest.mark.moto)])
def harness(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Harness]:
    """The logic wired to the in-memory fakes (``[memory]``, milliseconds a test: ``make test-fast``)
    or to the real DynamoDB store and SQS queue on the moto server (``[dynamodb]``); the targets are
    production's executor either way. A test that reaches past the ports into boto3 is marked
    ``moto_only`` and runs on moto only."""
    base = Settings(
        table_name="memory",
        shard_count=4,
        http_allow_loopback=True,
        lease_seconds=20,
        claim_timeout_seconds=30,
        queue_url="memory://work",
        dlq_url="memory://dlq",
    )
    store: Tables
    queue: QueueUnderTest
    if request.param == "memory":
        settings = base
        store = MemoryStore()
        store.put_delivery_rights(DeliveryRights.for_every_owner())  # as provision() writes them
        queue = MemoryQueue(delays=False)
    else:
        # Each test gets its own table and queues on the shared server.
        prefix = f"t{uuid.uuid4().hex[:12]}"
        moto_endpoint = request.getfixturevalue("moto_endpoint")
        settings = provision(
            replace(base, aws_endpoint_url=moto_endpoint, table_name=prefix, queue_url="", dlq_url=""),
            prefix=prefix,
        )
        store = build_store(settings)
        queue = RecordingQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url)
    yield Harness(
        settings, clock, store, queue, build_target_executor(settings), build_network_policy(settings)
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


def http_target(receiver: Receiver, path: str = "/hook") -> dict[str, Any]:
    return {"type": "http", "url": receiver.url + path, "method": "POST"}


def body_of(delivery: Any) -> Any:
    return json.loads(delivery.body)


# ------------------------------------------------------------------------- the api handler, called

Call = Callable[..., tuple[int, Any]]

# A valid job body; tests change one part of it.
GOOD_JOB: dict[str, Any] = {
    "schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"},
    "target": {"type": "http", "url": "https://example.com/hook"},
}


def make_call(service: JobService, monkeypatch: pytest.MonkeyPatch) -> Call:
    """Call ``punctual_functions.api.handler.handler`` with API Gateway proxy events, as the gateway does, for
    ``service``; returns ``(status, parsed JSON body)``. Bytes bodies are sent as they are."""
    monkeypatch.setattr(api, "deps", lambda: service)

    def invoke(
        method: str,
        path: str,
        body: Any = None,
        owner: str | None = "alice",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
        event = build_event(method, path, {"Content-Type": "application/json", **(headers or {})}, raw, owner)
        result = api.handler(event, LambdaContext())  # type: ignore[arg-type]
        # Lambda refuses an answer over 6 MB (API Gateway then answers 502): none may be.
        assert len(json.dumps(result).encode()) <= LAMBDA_ANSWER_BYTES, f"{method} {path}: over Lambda's 6 MB"
        answer = json.loads(result["body"]) if result.get("body") else None
        assert_answer_is_documented(method, path, result["statusCode"], answer)
        return result["statusCode"], answer

    return invoke


def assert_answer_is_documented(method: str, path: str, status: int, answer: Any) -> None:
    """The api serves the service's JSON as it is (no response model on the request path): every
    answer a test sees must be what its documented model makes of it, field for field, defaults
    included, and every refusal an ``ErrorOut``."""
    try:
        route, _ = api.app.match(method.upper(), urlsplit(path).path)
    except ApiError:
        route = None
    name = "ErrorOut" if status >= 400 else route.answer if route is not None else None
    if name is None or answer is None:
        return
    model = getattr(responses, name)
    documented = model.model_validate(answer).model_dump(mode="json", by_alias=True)
    if name == "ErrorOut":  # refusals may say more (problems, the conflicting job...)
        documented = {key: value for key, value in documented.items() if key in answer or value is not None}
        answer = {key: value for key, value in answer.items() if key in documented}
    assert answer == documented, f"{method} {path} answered other than its model {name}"


@pytest.fixture
def call(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Call:
    """The api handler over the harness's service (loopback targets allowed, no AWS targets)."""
    return make_call(harness.service, monkeypatch)

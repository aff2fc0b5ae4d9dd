from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import pytest

from functions.api import handler as api
from functions.api import responses
from functions.api.errors import ApiError
from functions.api.requests import CreateJobIn
from functions.api.service import JobService
from functions.api.views import JobView
from functions.core import aws
from functions.core.dispatching import Dispatcher
from functions.core.model import Job, bucket_of, next_bucket, shard_of
from functions.core.ports import Tables
from functions.core.queue import WorkMessage, WorkQueue
from functions.core.settings import Settings
from functions.core.ssrf_guard import NetworkPolicy
from functions.core.store import Store
from functions.core.targets import TargetExecutor
from functions.worker.context import ReturnLater
from functions.worker.execute import RunExecutor
from punctual.local.gateway import LambdaContext, build_event
from punctual.local.provision import provision
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue
from tests.fakes.store import MemoryStore
from tests.support.receiver import Receiver


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


class QueueUnderTest(Protocol):
    """The queue port, plus what tests read back (the real queue on moto, or the in-memory one)."""

    sent: list[tuple[WorkMessage, int]]

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None: ...
    def change_visibility(self, receipt_handle: str, seconds: int) -> None: ...
    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]: ...
    def delete_messages(self, receipt_handles: list[str]) -> None: ...
    def send_to_dlq(self, body: str, reason: str) -> None: ...
    def depth(self) -> dict[str, int]: ...
    def receive(self, max_messages: int = 10, visibility: int = 30) -> list[Any]: ...
    def delete(self, receipt_handle: str) -> None: ...
    def dlq_bodies(self) -> list[str]: ...


@dataclass
class Harness:
    settings: Settings
    clock: Clock
    store: Tables  # the DynamoDB store on moto, or MemoryStore (tests/fakes)
    queue: QueueUnderTest
    dispatcher: Dispatcher
    service: JobService
    executor: RunExecutor
    owner: str = "alice"
    crash_at: set[str] = field(default_factory=set)

    def crash_point(self, name: str) -> None:
        if name in self.crash_at:
            raise SimulatedCrash(name)

    def create(self, **body: Any) -> JobView:
        return self.service.create_job(self.owner, CreateJobIn.model_validate(body))

    def job(self, job_id: str) -> Job:
        """The job as its owner sees it (a one-off job's end is derived from its run)."""
        job = self.store.get_job(job_id)
        assert job is not None
        return self.service.settled(job)

    def next_trigger_at(self, job_id: str, hours: int = 3) -> datetime | None:
        """The chain's frontier: the earliest occurrence of the job with a trigger still to dispatch
        (the job item no longer tracks it: docs/architecture.md, "The write path")."""
        shard = shard_of(job_id, self.settings.shard_count)
        bucket = bucket_of(self.clock() - timedelta(hours=1))
        pending: list[datetime] = []
        for _ in range(60 * (hours + 1)):
            found = [
                t for t in self.store.query_bucket(bucket, shard) if t.job_id == job_id and not t.is_retry
            ]
            pending += [t.scheduled_for for t in self.dispatcher.undispatched(found)]
            bucket = next_bucket(bucket)
        return min(pending, default=None)

    def work(self, executor: RunExecutor | None = None) -> int:
        """Deliver every visible message once, like one poll of the event source mapping."""
        handled = 0
        for message in self.queue.receive():
            try:
                (executor or self.executor).handle(
                    WorkMessage.from_json(message["Body"]), message["ReceiptHandle"], message["Body"]
                )
            except ReturnLater:
                continue
            self.queue.delete(message["ReceiptHandle"])
            handled += 1
        return handled


class SimulatedCrash(BaseException):
    """A process dying at a named point (BaseException: nothing may catch it on the way out)."""


@pytest.fixture(params=["memory", pytest.param("dynamodb", marks=pytest.mark.moto)])
def harness(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Harness]:
    """The logic wired to the in-memory fakes (``[memory]``, milliseconds a test: ``make test-fast``)
    or to the real DynamoDB store and SQS queue on the moto server (``[dynamodb]``). A test that
    reaches past the ports into boto3 is marked ``moto_only`` and runs on moto only."""
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
        queue = MemoryQueue(delays=False)
    else:
        # Each test gets its own table and queues on the shared server.
        prefix = f"t{uuid.uuid4().hex[:12]}"
        moto_endpoint = request.getfixturevalue("moto_endpoint")
        settings = provision(
            replace(base, aws_endpoint_url=moto_endpoint, table_name=prefix, queue_url="", dlq_url=""),
            prefix=prefix,
        )
        store = Store(aws.client("dynamodb", settings), settings.table_name, run_retention=timedelta(days=30))
        queue = RecordingQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url)
    holder: dict[str, Harness] = {}

    def crash(name: str) -> None:
        holder["h"].crash_point(name)

    dispatcher = Dispatcher(store, queue, settings, clock=clock, crash_point=crash)
    policy = NetworkPolicy(allow_loopback=True, allow_list=())
    service = JobService(store, dispatcher, settings, policy, clock=clock)
    executor = RunExecutor(
        store,
        queue,
        TargetExecutor(lambda name: aws.client(name, settings), policy),
        settings,
        clock=clock,
        crash_point=crash,
    )
    holder["h"] = Harness(settings, clock, store, queue, dispatcher, service, executor)
    yield holder["h"]


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
    """Call ``functions.api.handler.handler`` with API Gateway proxy events, as the gateway does, for
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

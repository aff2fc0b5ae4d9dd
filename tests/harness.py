"""The one harness of the engine's tests: the API service, the dispatcher and the worker's executor,
wired by production's factories (``punctual_functions/core/factories.py``) over the ports a test gives them.

The unit tests give it the in-memory fakes (``tests/unit/test_engine_on_fakes.py``, ``engine_with``),
the integration tests the fakes or the real DynamoDB store and SQS queue on moto
(``tests/integration/conftest.py``, the ``harness`` fixture). Each service takes the harness's clock,
and its crash points ask the harness, which raises ``SimulatedCrash`` at those named in ``crash_at``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from punctual_functions.api.requests import CreateJobIn
from punctual_functions.api.service import JobService
from punctual_functions.api.views import JobView
from punctual_functions.core.dispatching import Dispatcher
from punctual_functions.core.factories import build_dispatcher, build_job_service, build_run_executor
from punctual_functions.core.model import Job, bucket_of, next_bucket, shard_of
from punctual_functions.core.ports import Tables, Targets
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.settings import Settings
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.worker.context import ReturnLater
from punctual_functions.worker.execute import RunExecutor
from tests.conftest import Clock


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


class SimulatedCrash(BaseException):
    """A process dying at a named point (BaseException: nothing may catch it on the way out)."""


StoreT = TypeVar("StoreT", bound=Tables)
QueueT = TypeVar("QueueT", bound=QueueUnderTest)
TargetsT = TypeVar("TargetsT", bound=Targets)


@dataclass
class Harness(Generic[StoreT, QueueT, TargetsT]):
    """The services over ``store``, ``queue`` and ``targets``; ``policy``: the API's network policy."""

    settings: Settings
    clock: Clock
    store: StoreT
    queue: QueueT
    targets: TargetsT
    policy: NetworkPolicy
    owner: str = "alice"
    # The target of a job created without one (``create``), if any.
    default_target: Mapping[str, Any] | None = None
    crash_at: set[str] = field(default_factory=set)
    dispatcher: Dispatcher = field(init=False)
    service: JobService = field(init=False)
    executor: RunExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.dispatcher = self.build_dispatcher()
        self.service = build_job_service(
            self.settings, store=self.store, dispatcher=self.dispatcher, policy=self.policy, clock=self.clock
        )
        self.executor = self.build_executor()

    def build_dispatcher(self, settings: Settings | None = None, *, deletes: bool = True) -> Dispatcher:
        """Another dispatcher over the harness's ports (another process's, or other settings')."""
        return build_dispatcher(
            settings or self.settings,
            store=self.store,
            queue=self.queue,
            clock=self.clock,
            crash_point=self.crash_point,
            deletes=deletes,
        )

    def build_executor(self, settings: Settings | None = None) -> RunExecutor:
        """Another worker's executor over the harness's ports."""
        return build_run_executor(
            settings or self.settings,
            store=self.store,
            queue=self.queue,
            targets=self.targets,
            clock=self.clock,
            crash_point=self.crash_point,
        )

    def crash_point(self, name: str) -> None:
        if name in self.crash_at:
            raise SimulatedCrash(name)

    def create(self, **body: Any) -> JobView:
        if self.default_target is not None:
            body.setdefault("target", dict(self.default_target))
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

    def deliver_all(self) -> None:
        """Hand every visible message to the executor once, as a poll of the queue would. A message
        given back is visible again at once: the test clock, not the wall clock, says when it is due
        (the executor gives it back again until then)."""
        for message in self.queue.receive():
            try:
                self.executor.handle(WorkMessage.from_json(message["Body"]), message["ReceiptHandle"])
            except ReturnLater:
                self.queue.change_visibility(message["ReceiptHandle"], 0)
                continue
            self.queue.delete(message["ReceiptHandle"])

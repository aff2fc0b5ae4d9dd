"""JobService, Dispatcher and RunExecutor wired to nothing but the in-memory ports: the fakes of the
table, the queue, the targets and the fan-out. Each test runs in milliseconds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from functions.api.models import CreateJobIn
from functions.api.service import JobService
from functions.core.dispatching import Dispatcher, shard_groups
from functions.core.model import JobStatus, RunStatus
from functions.core.queue import WorkMessage
from functions.core.settings import Settings
from functions.core.ssrf_guard import NetworkPolicy
from functions.dispatcher import handler as dispatcher_handler
from functions.worker.execute import ReturnLater, RunExecutor
from tests.conftest import Clock
from tests.fakes.invoker import RecordingInvoker
from tests.fakes.queue import MemoryQueue
from tests.fakes.store import MemoryStore
from tests.fakes.targets import ScriptedTargets, failure

SETTINGS = Settings(table_name="memory", queue_url="memory://work", dlq_url="memory://dlq", shard_count=4)


@dataclass
class Engine:
    clock: Clock
    store: MemoryStore
    queue: MemoryQueue
    targets: ScriptedTargets
    dispatcher: Dispatcher
    service: JobService
    executor: RunExecutor

    def create(self, **body: Any) -> dict[str, Any]:
        body.setdefault("target", {"type": "http", "url": "https://example.com/hook"})
        return self.service.create_job("alice", CreateJobIn.model_validate(body))

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


@pytest.fixture
def engine(clock: Clock) -> Iterator[Engine]:
    store, queue, targets = MemoryStore(), MemoryQueue(delays=False), ScriptedTargets()
    dispatcher = Dispatcher(store, queue, SETTINGS, clock=clock, crash_point=lambda _name: None)
    policy = NetworkPolicy(allow_loopback=False, allow_list=("example.com",))
    service = JobService(store, dispatcher, SETTINGS, policy, clock=clock)
    executor = RunExecutor(
        store, queue, targets, SETTINGS, clock=clock, sleep=clock.sleep, crash_point=lambda _name: None
    )
    yield Engine(clock, store, queue, targets, dispatcher, service, executor)


def test_a_retriable_failure_is_retried_then_the_one_off_job_completes(engine: Engine) -> None:
    engine.targets.outcomes = [failure(503, retriable=True)]
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5)
    engine.deliver_all()  # attempt 1: 503, the message goes back for the retry
    engine.clock.advance(60)
    engine.deliver_all()  # attempt 2: 200
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and [a.outcome for a in run.attempts] == [
        "RETRIABLE",
        "SUCCEEDED",
    ]
    view = engine.service.get_job("alice", job["job_id"])
    assert view["status"] == "COMPLETED" and view["last_run"]["status"] == "SUCCEEDED"
    assert engine.store.jobs[job["job_id"]].status is JobStatus.ACTIVE, "derived, not written"
    assert [d.attempt for _spec, d, _timeout in engine.targets.deliveries] == [1, 2]


def test_a_fatal_failure_fails_the_run_and_the_job_and_leaves_a_dead_letter(engine: Engine) -> None:
    engine.targets.outcomes = [failure(404, retriable=False)]
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.FAILED and run.error == "HTTP 404"
    assert engine.service.get_job("alice", job["job_id"])["status"] == "FAILED"
    assert len(engine.queue.dlq_bodies()) == 1


def test_a_tick_fans_out_through_the_invoker_and_sweeps_a_refused_group_itself(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SETTINGS.replace(sweep_invocations=2, shard_count=4)
    groups = shard_groups(settings.shard_count, settings.sweep_invocations)
    invoker = RecordingInvoker(refuse=[groups[1]])
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)
    monkeypatch.setattr(dispatcher_handler, "default_dispatcher", lambda: engine.dispatcher)
    monkeypatch.setattr(dispatcher_handler, "build_invoker", lambda _settings, _arn: invoker)

    class Context:
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:dispatcher"
        function_name = "dispatcher"
        memory_limit_in_mb = 256
        aws_request_id = "r"

    summary = dispatcher_handler.handler({"source": "aws.events"}, Context())  # type: ignore[arg-type]
    assert invoker.started == [groups[0]]
    assert summary["shards"] == len(groups[1])

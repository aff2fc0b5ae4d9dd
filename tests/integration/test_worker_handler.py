"""The worker Lambda handler with SQS events: partial batch responses and concurrent records."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from punctual.local.gateway import LambdaContext
from punctual.local.roles import _to_event
from punctual.testing.receiver import Receiver
from punctual_functions.api.views import JobView
from punctual_functions.core.clock import SYSTEM_CLOCK
from punctual_functions.core.model import RunStatus, iso
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import (
    MAX_JOB_TIMEOUT_SECONDS,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
    deployed_visibility_seconds,
)
from punctual_functions.worker import handler as worker
from punctual_functions.worker.batch import MAX_RETRY_VISIBILITY_SECONDS, VisibilityLedger, retry_visibility
from punctual_functions.worker.context import ReturnLater
from tests.integration.conftest import Harness


@pytest.fixture
def wired(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setattr(worker, "run_executor", lambda: harness.executor)
    return harness


def stub_executor(queue: Any = None) -> SimpleNamespace:
    """What the invocation needs of an executor when the test's record handler does the rest."""
    if queue is None:  # a record given back, or ended: nothing to tell SQS in these tests
        queue = SimpleNamespace(change_visibility=lambda *_: None, delete_messages=lambda _handles: None)
    return SimpleNamespace(queue=queue, clock=SYSTEM_CLOCK, arrive=lambda _arrived: None)


def invoke(messages: list[dict[str, Any]]) -> dict[str, Any]:
    event = _to_event(messages, "arn:aws:sqs:us-east-1:123456789012:work", "us-east-1")
    return dict(worker.handler(event, LambdaContext()))  # type: ignore[arg-type]


def test_a_message_not_due_yet_is_returned_as_a_batch_item_failure(
    wired: Harness, receiver: Receiver
) -> None:
    due_soon = wired.create(
        schedule={"at": iso(wired.clock() + timedelta(seconds=1))},
        target={"type": "http", "url": receiver.url + "/a"},
    )
    due_later = wired.create(
        schedule={"at": iso(wired.clock() + timedelta(seconds=90))},
        target={"type": "http", "url": receiver.url + "/b"},
    )
    messages = wired.queue.receive()
    assert len(messages) == 2
    result = invoke(messages)
    failed = {item["itemIdentifier"] for item in result["batchItemFailures"]}
    later_message = next(m for m in messages if due_later["job_id"] in m["Body"])
    assert failed == {later_message["MessageId"]}, "only the message that is not due may go back"
    runs, _ = wired.store.list_runs(due_soon["job_id"], limit=5)
    assert runs[0].status is RunStatus.SUCCEEDED
    runs, _ = wired.store.list_runs(due_later["job_id"], limit=5)
    assert runs[0].status is RunStatus.QUEUED


def test_records_of_a_batch_run_concurrently(monkeypatch: pytest.MonkeyPatch) -> None:
    barrier = threading.Barrier(3, timeout=5)
    seen: list[str] = []

    def handle(_executor: Any, record: Any, _time_left: Any) -> None:
        barrier.wait()  # would time out if the records were processed one after another
        seen.append(record.body)

    monkeypatch.setattr(worker, "record_handler", handle)
    monkeypatch.setattr(worker, "run_executor", stub_executor)
    records = [
        {"MessageId": str(n), "ReceiptHandle": f"r{n}", "Body": f'{{"job_id": "j", "run_id": "{n}"}}'}
        for n in range(3)
    ]
    result = invoke(records)
    assert result["batchItemFailures"] == []
    assert len(seen) == 3


def test_a_batch_whose_every_record_goes_back_is_not_a_failed_invocation(
    wired: Harness, receiver: Receiver
) -> None:
    # A retry or a message not due yet is routine: the invocation must succeed (no Lambda error, no
    # alarm) and report the records as batch item failures.
    wired.create(
        schedule={"at": iso(wired.clock() + timedelta(seconds=90))},
        target={"type": "http", "url": receiver.url + "/x"},
    )
    messages = wired.queue.receive()
    result = invoke(messages)
    assert [item["itemIdentifier"] for item in result["batchItemFailures"]] == [messages[0]["MessageId"]]


def test_the_handler_reads_the_receive_count_and_the_invocations_time_from_sqs_and_lambda(
    wired: Harness, receiver: Receiver
) -> None:
    # A long job with too little time left in the invocation goes back at once, as a batch item failure
    long_job = wired.create(
        schedule={"at": iso(wired.clock())},
        target={"type": "http", "url": receiver.url + "/long"},
        timeout_seconds=MAX_JOB_TIMEOUT_SECONDS,
    )
    (message,) = wired.queue.receive()
    event = _to_event([message], "arn:aws:sqs:us-east-1:123456789012:work", "us-east-1")
    result = worker.handler(event, LambdaContext(timeout_seconds=300))  # type: ignore[arg-type]
    assert [item["itemIdentifier"] for item in result["batchItemFailures"]] == [message["MessageId"]]
    assert receiver.for_path("/long") == []
    # And SQS's last delivery of it (ApproximateReceiveCount) ends the run instead of executing it
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(WORK_QUEUE_MAX_RECEIVE_COUNT)
    result = worker.handler(event, LambdaContext())  # type: ignore[arg-type]
    assert result["batchItemFailures"] == []
    runs, _ = wired.store.list_runs(long_job["job_id"], limit=5)
    assert runs[0].status is RunStatus.FAILED


def test_invocations_running_at_once_in_one_process_each_answer_for_their_own_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The local worker role polls with several threads per process (Lambda runs one invocation per
    # environment at a time): one invocation's records must never be answered by another's.
    barrier = threading.Barrier(2, timeout=5)

    def handle(_executor: Any, record: Any, _time_left: Any) -> None:
        barrier.wait()  # both invocations are in the middle of their batch
        if record.body.startswith('{"back"'):
            raise ReturnLater("not due yet", 5)
        time.sleep(0.2)  # the other invocation finishes first

    monkeypatch.setattr(worker, "record_handler", handle)
    monkeypatch.setattr(worker, "run_executor", stub_executor)
    back = [{"MessageId": "back", "ReceiptHandle": "r1", "Body": '{"back": 1}'}]
    done = [{"MessageId": "done", "ReceiptHandle": "r2", "Body": '{"done": 1}'}]
    results: dict[str, dict[str, Any]] = {}
    threads = [
        threading.Thread(target=lambda name=name, batch=batch: results.__setitem__(name, invoke(batch)))
        for name, batch in (("back", back), ("done", done))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["back"]["batchItemFailures"] == [{"itemIdentifier": "back"}]
    assert results["done"]["batchItemFailures"] == [], "another invocation's failure was reported here"


# The work queue's visibility timeout as deployed, with no batching window (the default): 5,400 s.
DEPLOYED_VISIBILITY_SECONDS = deployed_visibility_seconds(0)


def throttled(*_args: Any, **_kwargs: Any) -> Any:
    raise ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed"}},
        "GetItem",
    )


def test_a_record_that_fails_before_holding_its_message_is_back_within_seconds_not_90_minutes(
    wired: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = wired.create(
        schedule={"at": iso(wired.clock())}, target={"type": "http", "url": receiver.url + "/t"}
    )
    (message,) = wired.queue.receive(visibility=DEPLOYED_VISIBILITY_SECONDS)  # as Lambda receives it
    with monkeypatch.context() as patch:
        # Its batch's read and its own, both throttled (set before the worker's first hold).
        patch.setattr(wired.store, "get_runs_jobs_and_limits", throttled)
        patch.setattr(wired.store, "get_run_and_job", throttled)
        result = invoke([message])
    assert [item["itemIdentifier"] for item in result["batchItemFailures"]] == [message["MessageId"]]
    time.sleep(retry_visibility(1) + 0.3)
    (again,) = wired.queue.receive(visibility=DEPLOYED_VISIBILITY_SECONDS)
    assert again["MessageId"] == message["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert invoke([again])["batchItemFailures"] == []
    runs, _ = wired.store.list_runs(job["job_id"], limit=5)
    assert runs[0].status is RunStatus.SUCCEEDED


def test_a_record_that_raised_comes_back_later_at_each_receive() -> None:
    waits = [retry_visibility(count) for count in range(1, WORK_QUEUE_MAX_RECEIVE_COUNT + 1)]
    assert waits[:4] == [1, 2, 4, 8]
    assert waits == sorted(waits) and max(waits) == MAX_RETRY_VISIBILITY_SECONDS
    # Before the queue's redrive, a message that always fails is tried for about three quarters of
    # an hour, not 50 x 90 minutes.
    assert 30 * 60 < sum(waits) < 60 * 60


def test_a_record_that_ended_is_not_delivered_again_while_the_rest_of_its_batch_runs(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = VisibilityLedger(harness.queue)
    monkeypatch.setattr(worker, "run_executor", lambda: stub_executor(ledger))

    def handle(_executor: Any, record: Any, _time_left: Any) -> None:
        run_id = WorkMessage.from_json(record.body).run_id
        if run_id == "fast":
            ledger.change_visibility(record.receipt_handle, 2)  # what a hold or a lease leaves
        elif run_id == "slow":
            ledger.change_visibility(record.receipt_handle, 10)  # its heartbeat would keep it hidden
            time.sleep(4.5)
        # "quiet" ends at once without the worker setting its visibility (a duplicate, say)

    monkeypatch.setattr(worker, "record_handler", handle)
    harness.queue.send([(WorkMessage("j", run_id), 0) for run_id in ("fast", "quiet", "slow")])
    messages = harness.queue.receive(visibility=3)
    assert len(messages) == 3
    results: list[dict[str, Any]] = []
    invocation = threading.Thread(target=lambda: results.append(invoke(messages)))
    invocation.start()
    seen_again: list[str] = []
    while invocation.is_alive():  # another poller, receiving whatever becomes visible
        seen_again += [WorkMessage.from_json(m["Body"]).run_id for m in harness.queue.receive(visibility=30)]
        time.sleep(0.2)
    invocation.join()
    assert results[0]["batchItemFailures"] == []
    assert seen_again == [], "records that ended came back while their batch still ran"


def test_the_ledger_forgets_every_records_message_whatever_became_of_it(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's executor, and its ledger, live as long as the Lambda container: a note kept for
    # each message ever handled would grow without end.
    ledger = VisibilityLedger(harness.queue)
    monkeypatch.setattr(worker, "run_executor", lambda: stub_executor(ledger))

    def handle(_executor: Any, record: Any, _time_left: Any) -> None:
        ledger.change_visibility(record.receipt_handle, 5)
        if WorkMessage.from_json(record.body).run_id == "back":
            raise ReturnLater("not due yet", 5)

    monkeypatch.setattr(worker, "record_handler", handle)
    harness.queue.send([(WorkMessage("j", run_id), 0) for run_id in ("alone", "back", "done")])
    alone, *batch = harness.queue.receive(visibility=30)
    assert invoke([alone])["batchItemFailures"] == []  # a lone record: no settler
    assert len(invoke(batch)["batchItemFailures"]) == 1
    assert ledger._visible_at == {}


def batch_due_in_a_second(
    wired: Harness, receiver: Receiver, count: int
) -> tuple[list[JobView], list[dict[str, Any]]]:
    """``count`` one-off jobs due at one second, and their messages received as one batch."""
    due = wired.clock() + timedelta(seconds=1)
    jobs = [
        wired.create(schedule={"at": iso(due)}, target={"type": "http", "url": f"{receiver.url}/b{n}"})
        for n in range(count)
    ]
    messages = wired.queue.receive(10)
    assert len(messages) == count
    return jobs, messages


@pytest.mark.parametrize("count", [5, 1])
def test_a_batch_is_held_and_read_in_one_request_each_before_its_records_start(
    wired: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    # A lone record too: its read carries its owner's limits, so a job under no limit makes no
    # request for them (it used to read its run and job alone, then Query the owner's limits).
    jobs, messages = batch_due_in_a_second(wired, receiver, count)
    calls: list[tuple[str, int]] = []
    store, queue = wired.store, wired.queue
    read_all, read_one = store.get_runs_jobs_and_limits, store.get_run_and_job
    read_limits = store.list_limits
    hide_all, hide_one = queue.change_visibilities, queue.change_visibility

    def counted(name: str, call: Any, size: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            calls.append((name, size(*args)))
            return call(*args)

        return wrapper

    # The batch's runs, jobs and its owners' target limits: one read; a job under no limit reads no more.
    monkeypatch.setattr(
        store, "get_runs_jobs_and_limits", counted("read", read_all, lambda keys, *_: len(keys))
    )
    monkeypatch.setattr(store, "list_limits", counted("limits", read_limits, lambda *_: 1))
    monkeypatch.setattr(store, "get_run_and_job", counted("read", read_one, lambda *_: 1))
    monkeypatch.setattr(queue, "change_visibilities", counted("hide", hide_all, len))
    monkeypatch.setattr(queue, "change_visibility", counted("hide", hide_one, lambda *_: 1))
    result = invoke(messages)
    assert result["batchItemFailures"] == []
    assert calls[:2] == [("hide", count), ("read", count)], "the batch's hold, then its reads: one each"
    assert [call for call in calls[2:] if call[0] in ("read", "hide", "limits")] == [], calls
    for job in jobs:
        runs, _ = wired.store.list_runs(job["job_id"], limit=5)
        assert runs[0].status is RunStatus.SUCCEEDED
    assert len(receiver.deliveries) == count


def test_a_batch_whose_reads_fail_together_reads_record_by_record(
    wired: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs, messages = batch_due_in_a_second(wired, receiver, 3)

    read = wired.store.get_runs_jobs_and_limits

    def throttled(keys: Any, owners: Any = ()) -> Any:  # the batch's read fails; a record's own goes through
        if len(keys) > 1:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "BatchGetItem")
        return read(keys, owners)

    monkeypatch.setattr(wired.store, "get_runs_jobs_and_limits", throttled)
    result = invoke(messages)
    assert result["batchItemFailures"] == []
    for job in jobs:
        runs, _ = wired.store.list_runs(job["job_id"], limit=5)
        assert runs[0].status is RunStatus.SUCCEEDED


def test_the_first_batch_freezes_the_cold_start_s_objects_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Full collections that scanned the whole process (its imports' objects too) took 40 to 90 ms
    under load, and the calls due while one ran went out that much later: the objects that exist
    once the executor is built are frozen, at the first batch and only then."""
    import gc

    frozen: list[bool] = []
    built: list[bool] = []
    monkeypatch.setattr(worker, "_frozen", threading.Event())
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(bool(built)))

    def build() -> SimpleNamespace:
        built.append(True)
        return stub_executor()

    monkeypatch.setattr(worker, "run_executor", build)
    monkeypatch.setattr(worker, "record_handler", lambda *_: None)
    record = {"MessageId": "1", "ReceiptHandle": "r1", "Body": '{"job_id": "j", "run_id": "1"}'}
    invoke([record])
    invoke([record])
    assert frozen == [True], "frozen once, after the executor was built"

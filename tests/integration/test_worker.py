"""The worker against moto and a real webhook receiver: exactly-once starts, waiting, retries, crashes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.api.views import JobView
from punctual_functions.core.model import JobStatus, Reason, RunStatus, iso
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import (
    MAX_JOB_TIMEOUT_SECONDS,
    OUTCOME_MARGIN_SECONDS,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
    WORKER_TIMEOUT_SECONDS,
)
from punctual_functions.core.settings import Settings
from punctual_functions.worker.arrival import HOLD_MARGIN_SECONDS
from punctual_functions.worker.context import ReturnLater
from tests.integration.conftest import Harness, SimulatedCrash


def one_off(h: Harness, receiver: Receiver, path: str, seconds: float = 5, **extra: Any) -> JobView:
    due = h.clock() + timedelta(seconds=seconds)
    return h.create(schedule={"at": iso(due)}, target={"type": "http", "url": receiver.url + path}, **extra)


def only_run(h: Harness, job_id: str):
    runs, _ = h.store.list_runs(job_id, limit=10)
    assert len(runs) == 1
    return runs[0]


def test_early_message_waits_for_its_second_then_succeeds(harness: Harness, receiver: Receiver) -> None:
    job = one_off(harness, receiver, "/ok", seconds=5, payload={"hello": "world"})
    scheduled = harness.clock() + timedelta(seconds=5)
    assert harness.work() == 1
    assert harness.clock.slept and sum(harness.clock.slept) == pytest.approx(5, abs=0.01)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.SUCCEEDED
    assert run.started_at is not None and run.started_at >= scheduled, "a run must never start early"
    assert run.lateness_ms == 0
    assert [a.outcome for a in run.attempts] == ["SUCCEEDED"]
    assert harness.job(job["job_id"]).status is JobStatus.COMPLETED
    (delivery,) = receiver.for_path("/ok")
    assert delivery.json == {"hello": "world"}
    assert delivery.headers["Idempotency-Key"] == run.run_id
    assert delivery.headers["Punctual-Run-Id"] == run.run_id
    assert delivery.headers["Punctual-Job-Id"] == job["job_id"]
    assert delivery.headers["Punctual-Attempt"] == "1"
    assert delivery.headers["Punctual-Scheduled-For"] == iso(scheduled)


def test_same_message_delivered_twice_executes_once(harness: Harness, receiver: Receiver) -> None:
    job = one_off(harness, receiver, "/twice", seconds=0)
    message, _ = harness.queue.sent[0]
    harness.executor.handle(message, None)
    harness.executor.handle(message, None)
    assert len(receiver.for_path("/twice")) == 1
    assert only_run(harness, job["job_id"]).executions == 1


def test_retriable_failures_are_retried_then_succeed(harness: Harness) -> None:
    with Receiver(lambda _path, n: (503, b"busy") if n < 3 else (200, b"ok")) as flaky:
        job = one_off(harness, flaky, "/flaky", seconds=0, retry={"max_attempts": 5, "backoff_seconds": 1})
        message, _ = harness.queue.sent[0]
        for _ in range(3):
            try:
                harness.executor.handle(message, None)
            except ReturnLater:
                run = only_run(harness, job["job_id"])
                assert run.status is RunStatus.RETRYING and run.next_attempt_at is not None
                harness.clock.now = run.next_attempt_at
        run = only_run(harness, job["job_id"])
        assert run.status is RunStatus.SUCCEEDED
        assert [a.outcome for a in run.attempts] == ["RETRIABLE", "RETRIABLE", "SUCCEEDED"]
        assert [a.status_code for a in run.attempts] == [503, 503, 200]
        assert {d.headers["Idempotency-Key"] for d in flaky.for_path("/flaky")} == {run.run_id}
        assert [d.headers["Punctual-Attempt"] for d in flaky.for_path("/flaky")] == ["1", "2", "3"]


def test_fatal_failure_fails_the_run_and_the_one_off_job_and_stays_out_of_the_dlq(harness: Harness) -> None:
    with Receiver(lambda _path, _n: (404, b"no such hook")) as missing:
        job = one_off(harness, missing, "/gone", seconds=0)
        harness.work()
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.FAILED
    assert run.attempts[0].status_code == 404 and "no such hook" in run.attempts[0].response
    assert harness.job(job["job_id"]).status is JobStatus.FAILED
    assert harness.queue.dlq_bodies() == [], "the deployment's DLQ holds only what Punctual could not process"


def test_last_attempt_failing_ends_failed_out_of_the_dlq(harness: Harness) -> None:
    with Receiver(lambda _path, _n: (500, b"boom")) as broken:
        job = one_off(harness, broken, "/broken", seconds=0, retry={"max_attempts": 2, "backoff_seconds": 1})
        message, _ = harness.queue.sent[0]
        with pytest.raises(ReturnLater):
            harness.executor.handle(message, None)
        run = only_run(harness, job["job_id"])
        assert run.next_attempt_at is not None
        harness.clock.now = run.next_attempt_at
        harness.executor.handle(message, None)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.FAILED and run.attempt == 2
    assert [a.outcome for a in run.attempts] == ["RETRIABLE", "FAILED"]
    assert harness.job(job["job_id"]).status is JobStatus.FAILED
    assert harness.queue.dlq_bodies() == []


class LongestBackoff:
    """Full jitter picks a delay at random; this one always picks the longest."""

    def uniform(self, _low: float, high: float) -> float:
        return high


def test_long_backoff_goes_through_the_table(harness: Harness) -> None:
    with Receiver(lambda _path, n: (503, b"later") if n == 1 else (200, b"ok")) as slow:
        job = one_off(
            harness,
            slow,
            "/slow",
            seconds=0,
            retry={"max_attempts": 2, "backoff_seconds": 3600, "max_backoff_seconds": 3600},
        )
        harness.executor.rng = LongestBackoff()  # type: ignore[assignment]
        assert harness.work() == 1, "a retry through the table acknowledges the message"
        run = only_run(harness, job["job_id"])
        assert run.status is RunStatus.RETRYING
        assert run.next_attempt_at is not None
        # The dispatcher wakes the run up when the retry is due
        harness.clock.now = run.next_attempt_at - timedelta(seconds=30)
        harness.dispatcher.sweep()
        harness.clock.now = run.next_attempt_at
        harness.work()
        run = only_run(harness, job["job_id"])
        assert run.status is RunStatus.SUCCEEDED and run.attempt == 2


def crashed_after_start(harness: Harness, receiver: Receiver, path: str) -> tuple[JobView, WorkMessage]:
    """A one-off due now whose worker died right after starting the attempt (lease held, not called)."""
    job = one_off(harness, receiver, path, seconds=0)
    message: WorkMessage = harness.queue.sent[0][0]
    harness.crash_at.add("after_start_before_execute")
    with pytest.raises(SimulatedCrash):
        harness.executor.handle(message, None)
    harness.crash_at.clear()
    return job, message


def test_worker_dying_after_start_is_taken_over_after_its_lease(harness: Harness, receiver: Receiver) -> None:
    job, message = crashed_after_start(harness, receiver, "/crash")
    # While the lease holds for longer than a worker waits in-process, a redelivery goes back
    settings = harness.executor.settings
    harness.executor.settings = settings.replace(max_early_wait_seconds=5)
    with pytest.raises(ReturnLater) as returned:
        harness.executor.handle(message, None)
    harness.executor.settings = settings
    assert returned.value.seconds == settings.lease_seconds
    assert receiver.for_path("/crash") == []
    # After the lease, the attempt is re-executed with the same Idempotency-Key
    harness.clock.advance(harness.settings.lease_seconds + 1)
    harness.executor.handle(message, None)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempt == 1 and run.executions == 2
    assert [d.headers["Idempotency-Key"] for d in receiver.for_path("/crash")] == [run.run_id]


def test_a_redelivery_shortly_before_a_dead_workers_lease_ends_holds_and_takes_over_at_its_end(
    harness: Harness, receiver: Receiver
) -> None:
    job, message = crashed_after_start(harness, receiver, "/takeover")
    lease_until = only_run(harness, job["job_id"]).lease_until
    assert lease_until is not None
    # The message comes back a few seconds before the lease ends: rather than going back to the
    # queue (and losing a receive's latency more), the worker waits for the lease, then takes over.
    hidden: list[int] = []
    harness.queue.change_visibility = lambda receipt_handle, seconds: hidden.append(seconds)  # type: ignore[method-assign]
    harness.clock.now = lease_until - timedelta(seconds=3)
    harness.executor.handle(message, "receipt")
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.SUCCEEDED and run.executions == 2
    assert harness.clock.now >= lease_until, "never before the dead worker's lease ended"
    assert [d.headers["Idempotency-Key"] for d in receiver.for_path("/takeover")] == [run.run_id]
    # it hid the message as it arrived (its due time had passed: the margin alone), then for the
    # wait for the lease plus the margin
    assert hidden[:2] == [HOLD_MARGIN_SECONDS, 3 + HOLD_MARGIN_SECONDS]


def test_a_redelivery_holds_only_once_for_a_lease_that_a_live_worker_keeps_renewing(
    harness: Harness, receiver: Receiver
) -> None:
    job, message = crashed_after_start(harness, receiver, "/alive")
    run = only_run(harness, job["job_id"])
    assert run.lease_until is not None
    harness.clock.now = run.lease_until - timedelta(seconds=2)
    # the first worker is alive after all: its heartbeat renews the lease while the second one waits
    renewed = harness.store.renew_lease(run, run.lease_until + timedelta(seconds=30))
    assert renewed
    with pytest.raises(ReturnLater) as returned:
        harness.executor.handle(message, None)
    assert returned.value.seconds is not None and returned.value.seconds > 20
    assert receiver.for_path("/alive") == []


def test_worker_dying_after_execution_re_executes_with_the_same_key(
    harness: Harness, receiver: Receiver
) -> None:
    job = one_off(harness, receiver, "/again", seconds=0)
    message: WorkMessage = harness.queue.sent[0][0]
    harness.crash_at.add("after_execute_before_record")
    with pytest.raises(SimulatedCrash):
        harness.executor.handle(message, None)
    harness.crash_at.clear()
    harness.clock.advance(harness.settings.lease_seconds + 1)
    harness.executor.handle(message, None)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.SUCCEEDED
    keys = [d.headers["Idempotency-Key"] for d in receiver.for_path("/again")]
    assert keys == [run.run_id, run.run_id], "a re-execution after a crash carries the same key"


def test_overlap_skip_skips_a_run_while_the_previous_one_is_still_running(
    harness: Harness, receiver: Receiver
) -> None:
    job = harness.create(
        schedule={"cron": "*/10 * * * * *", "overlap": "skip"},
        target={"type": "http", "url": receiver.url + "/overlap"},
    )
    first_message = harness.queue.sent[0][0]
    harness.crash_at.add("after_start_before_execute")  # the first run stays RUNNING (its worker "hangs")
    harness.clock.now = harness.store.get_run(job["job_id"], first_message.run_id).scheduled_for  # type: ignore[union-attr]
    with pytest.raises(SimulatedCrash):
        harness.executor.handle(first_message, None)
    harness.crash_at.clear()
    harness.clock.advance(5)
    harness.dispatcher.sweep()
    second = next(m for m, _ in harness.queue.sent if m.run_id != first_message.run_id)
    harness.clock.advance(5)
    harness.executor.handle(second, None)
    run = harness.store.get_run(job["job_id"], second.run_id)
    assert run is not None and run.status is RunStatus.SKIPPED
    assert run.error == f"run {first_message.run_id} still under way" and run.reason is Reason.OVERLAP
    assert run.overlap_with == first_message.run_id
    assert receiver.for_path("/overlap") == []


def test_a_job_with_a_signing_secret_delivers_a_verifiable_signature(
    harness: Harness, receiver: Receiver
) -> None:
    from punctual.verify import verify

    secret = "s3cret-s3cret-s3cret"
    one_off(harness, receiver, "/signed", seconds=0, signing_secret=secret, payload={"n": 1})
    harness.work()
    (delivery,) = receiver.for_path("/signed")
    # Signatures carry the wall-clock time of delivery, not the test's clock: verify reads the wall clock
    assert verify(secret, delivery.headers["Punctual-Signature"], delivery.body)
    assert not verify("another-secret-entirely", delivery.headers["Punctual-Signature"], delivery.body)


@pytest.mark.moto_only(
    "the shared test clock: the second worker's wait for the first one's lease jumps the clock past it "
    "while the first one's heartbeat, on real time, has not renewed it; moto's latency hides that"
)
def test_one_message_handled_by_two_workers_at_once_starts_once(harness: Harness, receiver: Receiver) -> None:
    import threading

    job = one_off(harness, receiver, "/both", seconds=0)
    message = harness.queue.sent[0][0]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work() -> None:
        barrier.wait()
        try:
            harness.executor.handle(message, None)
        except BaseException as error:  # a ReturnLater would also be acceptable: never a second start
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(error, ReturnLater) for error in errors), errors
    run = only_run(harness, job["job_id"])
    # The second worker's wait for the first one's lease jumps the shared test clock past that lease,
    # so it may take the attempt over (a second start recorded); the first then finds its lease spent
    # before its call and gives way (punctual_functions/worker/lease.py). Either way the target is called
    # once.
    assert run.status is RunStatus.SUCCEEDED and run.executions in (1, 2)
    assert len(receiver.for_path("/both")) == 1


def test_a_signing_secret_is_never_returned_nor_logged(
    harness: Harness, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    from punctual_functions.core.observability import logger

    secret = "never-show-this-secret-anywhere"
    previous = logger.log_level
    logger.setLevel("DEBUG")  # everything the code would ever log
    try:
        job = one_off(harness, receiver, "/quiet", seconds=0, signing_secret=secret)
        harness.work()
    finally:
        logger.setLevel(previous)
    views = [
        job,
        harness.service.get_job(harness.owner, job["job_id"]),
        harness.service.list_jobs(harness.owner, limit=10, cursor=None, status=None, name=None),
    ]
    captured = capsys.readouterr()
    assert job["has_signing_secret"] is True
    assert secret not in repr(views)
    assert secret not in captured.out + captured.err
    assert len(receiver.for_path("/quiet")) == 1


def test_a_received_message_is_hidden_only_briefly_so_a_dead_worker_delays_it_seconds(
    harness: Harness, receiver: Receiver
) -> None:
    hidden: list[int] = []
    real = harness.queue.change_visibility

    def record(receipt_handle: str, seconds: int) -> None:
        hidden.append(seconds)
        real(receipt_handle, seconds)

    harness.queue.change_visibility = record  # type: ignore[method-assign]
    one_off(harness, receiver, "/due-now", seconds=0)
    one_off(harness, receiver, "/due-soon", seconds=4)
    harness.work()
    # Not the queue's long timeout (on AWS six times the worker's): the wait plus a short margin.
    assert sorted(hidden) == [HOLD_MARGIN_SECONDS, 4 + HOLD_MARGIN_SECONDS]


# ------------------------------------------------------- the invocation's time and the last delivery


def test_an_attempt_that_would_outlive_the_invocation_is_left_to_a_fresh_one(
    harness: Harness, receiver: Receiver
) -> None:
    # Given a long job (the longest timeout allowed) due now, and an invocation with 10 minutes left
    job = one_off(harness, receiver, "/long", seconds=0, timeout_seconds=MAX_JOB_TIMEOUT_SECONDS)
    message, _ = harness.queue.sent[0]
    # When a worker gets its message, it does not start an attempt it would be killed in the middle of
    with pytest.raises(ReturnLater) as returned:
        harness.executor.handle(message, None, time_left_seconds=600)
    assert returned.value.seconds == 0, "the message must go back at once, for a fresh invocation"
    assert receiver.for_path("/long") == []
    assert only_run(harness, job["job_id"]).status is RunStatus.QUEUED
    # And a fresh invocation (Lambda's 900 s) has room for the wait, the timeout and the outcome
    harness.executor.handle(message, None, time_left_seconds=WORKER_TIMEOUT_SECONDS)
    assert only_run(harness, job["job_id"]).status is RunStatus.SUCCEEDED


def test_the_longest_job_timeout_fits_a_fresh_invocation_with_the_wait_and_the_outcome() -> None:
    wait = Settings().max_early_wait_seconds
    assert wait + MAX_JOB_TIMEOUT_SECONDS + OUTCOME_MARGIN_SECONDS <= WORKER_TIMEOUT_SECONDS


def test_the_last_delivery_of_a_dead_workers_run_fails_it_and_its_one_off_job_out_of_the_dlq(
    harness: Harness, receiver: Receiver
) -> None:
    # Given a run whose worker died mid-attempt (killed by its invocation's timeout, say), again and
    # again, until SQS is about to give its message to the dead-letter queue
    job, message = crashed_after_start(harness, receiver, "/dies")
    harness.clock.advance(harness.settings.lease_seconds + 1)
    # When the last delivery SQS will make arrives
    harness.executor.handle(message, None, receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT)
    # Then the run ends FAILED with the reason, without calling the target again
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.FAILED, "a dead-lettered run must have a terminal status"
    assert run.error is not None and "delivery exhausted" in run.error
    assert [a.outcome for a in run.attempts] == ["FAILED"]
    assert receiver.for_path("/dies") == []
    # And the one-off job failed with it; the run has its outcome, so the DLQ has nothing to keep
    assert harness.job(job["job_id"]).status is JobStatus.FAILED
    assert harness.queue.dlq_bodies() == []


def test_the_last_delivery_of_a_queued_run_fails_it(harness: Harness, receiver: Receiver) -> None:
    job = one_off(harness, receiver, "/never", seconds=0)
    message, _ = harness.queue.sent[0]
    harness.executor.handle(message, None, receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.FAILED and run.error is not None and "delivery exhausted" in run.error
    assert receiver.for_path("/never") == []


def test_the_last_delivery_of_a_run_a_live_worker_holds_renews_the_message(
    harness: Harness, receiver: Receiver
) -> None:
    # Given a run whose attempt a live worker holds (its lease is current)
    job, message = crashed_after_start(harness, receiver, "/held")
    sent_before = len(harness.queue.sent)
    # When this message's last delivery arrives (a duplicate, or the holder's own)
    harness.executor.handle(message, None, receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT)
    # Then the run keeps going, covered by a fresh copy of the message due when the lease ends
    assert only_run(harness, job["job_id"]).status is RunStatus.RUNNING
    renewed = harness.queue.sent[sent_before:]
    assert [m.run_id for m, _ in renewed] == [message.run_id]
    assert renewed[0][1] <= harness.settings.lease_seconds + HOLD_MARGIN_SECONDS
    # And so does a copy a failed last delivery sent (exhausted): the renewal is a fresh copy, which
    # gets SQS's full count of deliveries should that worker die too
    harness.executor.handle(replace(message, exhausted=True), None, receive_count=1)
    assert only_run(harness, job["job_id"]).status is RunStatus.RUNNING
    fresh, _ = harness.queue.sent[-1]
    assert fresh.run_id == message.run_id and not fresh.exhausted


@pytest.mark.parametrize("failing", ["get_run_and_job", "start_attempt"])
def test_a_last_delivery_the_table_refuses_renews_the_message_so_the_run_still_ends(
    harness: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    # Given a queued run whose message SQS is about to deliver for the last time, and a table that
    # errs on that delivery (throttled, unavailable)
    job = one_off(harness, receiver, "/never", seconds=0)
    message, _ = harness.queue.sent[0]
    sent_before = len(harness.queue.sent)
    real = getattr(harness.store, failing)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("the table did not answer")

    monkeypatch.setattr(harness.store, failing, refuse)
    # When the last delivery arrives, it does not fail the message into the DLQ with the run open:
    harness.executor.handle(message, None, receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT)
    assert harness.queue.dlq_bodies() == []
    (renewed, delay), *_ = harness.queue.sent[sent_before:]
    assert renewed.run_id == message.run_id and renewed.exhausted and delay > 0
    assert WorkMessage.from_json(renewed.to_json()).exhausted, "the copy says so on the wire"
    # Then, the table answering again, the copy's first delivery ends the run as the last would have
    monkeypatch.setattr(harness.store, failing, real)
    harness.executor.handle(renewed, None, receive_count=1)
    run = only_run(harness, job["job_id"])
    assert run.status is RunStatus.FAILED and run.error is not None and "delivery exhausted" in run.error
    assert receiver.for_path("/never") == []
    assert harness.queue.dlq_bodies() == []


def test_a_message_that_is_not_the_last_delivery_still_fails_on_a_table_error(
    harness: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_off(harness, receiver, "/later", seconds=0)
    message, _ = harness.queue.sent[0]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("the table did not answer")

    monkeypatch.setattr(harness.store, "get_run_and_job", refuse)
    with pytest.raises(ConnectionError):
        harness.executor.handle(message, None, receive_count=3)  # SQS delivers it again later


def test_the_executor_forgets_each_messages_hold_whatever_became_of_it(
    harness: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The executor lives as long as its Lambda container: a hold it noted for a message whose attempt
    # never started (its job cancelled while the worker waited for the second) must not stay behind.
    job = one_off(harness, receiver, "/cancelled", seconds=5)
    real_sleep = harness.clock.sleep

    def cancel_while_waiting(seconds: float) -> None:
        harness.service.cancel_job(harness.owner, job["job_id"])
        real_sleep(seconds)

    monkeypatch.setattr(harness.clock, "sleep", cancel_while_waiting)
    assert harness.work() == 1
    assert receiver.for_path("/cancelled") == []
    assert only_run(harness, job["job_id"]).status is RunStatus.CANCELLED
    assert harness.executor.arrival.hidden_until == {}

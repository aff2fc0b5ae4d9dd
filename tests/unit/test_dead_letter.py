"""A job's own dead-letter queue, on the in-memory fakes: the deployment's DLQ keeps only what
Punctual itself could not process."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from punctual_functions.api.errors import InvalidInput
from punctual_functions.api.requests import PatchJobIn
from punctual_functions.core.model import RunStatus
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import WORK_QUEUE_MAX_RECEIVE_COUNT
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome
from punctual_functions.worker.dead_letter import DEAD_LETTER, DeadLetterUndelivered
from tests.conftest import Clock
from tests.fakes.targets import failure
from tests.unit.test_engine_on_fakes import SETTINGS, Engine, engine_with

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/report-failures"
DEAD_LETTER_QUEUE = {"type": "sqs", "queue_url": QUEUE_URL}


@pytest.fixture
def engine(clock: Clock) -> Engine:
    allowed = ("arn:aws:sqs:us-east-1:123456789012:report-*",)
    engine = engine_with(SETTINGS.replace(allowed_target_arns=allowed, account_id="123456789012"), clock)
    engine.store.put_delivery_rights(DeliveryRights.for_every_owner(allowed))
    return engine


def failing_one_off(engine: Engine, **body: object) -> tuple[str, WorkMessage]:
    engine.targets.outcomes = [failure(404, retriable=False)]
    job = engine.create(
        name="nightly", schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()}, **body
    )
    engine.clock.advance(5)
    message, _delay = engine.queue.sent[-1]
    return job["job_id"], message


def test_a_run_that_failed_on_its_target_goes_to_the_jobs_dead_letter_queue_not_the_deployments(
    engine: Engine,
) -> None:
    job_id, message = failing_one_off(
        engine,
        dead_letter=DEAD_LETTER_QUEUE,
        payload={"report": "sales"},
        target={"type": "http", "url": "https://example.com/hook", "headers": {"Authorization": "secret"}},
    )
    engine.executor.handle(message, None)
    (run,) = engine.store.runs[job_id].values()
    assert run.status is RunStatus.FAILED
    assert engine.queue.dlq_bodies() == [], "a user's broken webhook is not the deployment's alarm"
    (_call, (spec, delivery, _timeout)) = engine.targets.deliveries
    assert spec == DEAD_LETTER_QUEUE
    assert delivery.idempotency_key == f"{run.run_id}.alert-{DEAD_LETTER}"
    body = delivery.payload
    assert body["job_id"] == job_id and body["run_id"] == run.run_id and body["job_name"] == "nightly"
    assert body["error"] == "HTTP 404" and body["status_code"] == 404 and body["attempts"] == 1
    assert body["payload"] == {"report": "sales"}
    assert "headers" not in body["target"], "the target's headers may carry credentials"
    assert DEAD_LETTER in engine.store.runs[job_id][run.run_id].alerts_sent
    # a redelivery of the ended run's message sends nothing more
    engine.executor.handle(message, None)
    assert len(engine.targets.deliveries) == 2


def test_a_job_without_a_dead_letter_queue_fails_its_run_and_sends_nothing_more(engine: Engine) -> None:
    job_id, message = failing_one_off(engine)
    engine.executor.handle(message, None)
    assert [run.status for run in engine.store.runs[job_id].values()] == [RunStatus.FAILED]
    assert len(engine.targets.deliveries) == 1 and engine.queue.dlq_bodies() == []


def test_a_dead_letter_queue_that_refuses_is_tried_again_by_the_runs_redelivered_message(
    engine: Engine,
) -> None:
    job_id, message = failing_one_off(engine, dead_letter=DEAD_LETTER_QUEUE)
    engine.targets.outcomes.append(failure(403, retriable=False))  # the queue refuses the dead letter
    with pytest.raises(DeadLetterUndelivered):
        engine.executor.handle(message, None)  # the message comes back (record_handler's backoff)
    (run,) = engine.store.runs[job_id].values()
    assert run.status is RunStatus.FAILED and DEAD_LETTER not in run.alerts_sent
    engine.executor.handle(message, None, receive_count=2)
    assert DEAD_LETTER in engine.store.runs[job_id][run.run_id].alerts_sent
    assert [spec for spec, _delivery, _timeout in engine.targets.deliveries][1:] == [DEAD_LETTER_QUEUE] * 2


def test_a_dead_letter_refused_until_the_last_delivery_is_kept_in_the_deployments_dlq(engine: Engine) -> None:
    _job_id, message = failing_one_off(engine, dead_letter=DEAD_LETTER_QUEUE)
    engine.targets.outcomes.append(failure(403, retriable=False))
    with pytest.raises(DeadLetterUndelivered):
        engine.executor.handle(message, None)
    engine.targets.outcomes.append(failure(403, retriable=False))
    engine.executor.handle(message, None, receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT)
    (kept,) = engine.queue.dlq.messages
    assert WorkMessage.from_json(kept.body).run_id == message.run_id
    assert kept.reason is not None and kept.reason.startswith(f"dead letter not delivered to {QUEUE_URL}")


def test_a_dead_letter_queue_outside_the_allow_list_is_refused_naming_the_field(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as refused:
        engine.create(
            schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()},
            dead_letter={
                "type": "sqs",
                "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/other",
            },
        )
    assert refused.value.field == "dead_letter.queue_url"


def test_a_dead_letter_queue_is_shown_changed_and_removed_by_patch(engine: Engine) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()})
    assert job["dead_letter"] is None
    other = f"{QUEUE_URL}-2"
    changed = engine.service.patch_job(
        "alice",
        job["job_id"],
        PatchJobIn.model_validate({"dead_letter": {"type": "sqs", "queue_url": other}}),
    )
    assert changed["dead_letter"] == {"type": "sqs", "queue_url": other}
    removed = engine.service.patch_job(
        "alice", job["job_id"], PatchJobIn.model_validate({"dead_letter": None})
    )
    assert removed["dead_letter"] is None


def test_an_alert_sent_beside_the_call_is_waited_for_even_when_the_dead_letter_is_refused(
    engine: Engine,
) -> None:
    # The late alert goes out on a thread of its own beside the call; the record must not end (and
    # the invocation with it) before that thread does, whatever the outcome's recording raised.
    slow_alerts = engine.targets

    class SlowAlert:
        def prepare(self, spec: Any, timeout_seconds: float) -> None:
            slow_alerts.prepare(spec, timeout_seconds)

        def execute(
            self, spec: Any, delivery: Delivery, timeout_seconds: float, cancel: Any = None, wait: Any = None
        ) -> TargetOutcome:
            if delivery.alert == "late":
                time.sleep(0.3)
            return slow_alerts.execute(spec, delivery, timeout_seconds, cancel, wait=wait)

    engine.executor.targets = engine.executor.alerts.targets = SlowAlert()
    engine.executor.dead_letters.targets = engine.executor.targets
    _job_id, message = failing_one_off(
        engine,
        dead_letter=DEAD_LETTER_QUEUE,
        alerts={"target": {"type": "http", "url": "https://example.com/alerts"}, "late_seconds": 1},
    )
    engine.clock.advance(10)  # the run starts 10 s late: the late alert goes out beside the call
    slow_alerts.outcomes.append(failure(403, retriable=False))  # after the 404: the dead letter
    with pytest.raises(DeadLetterUndelivered):
        engine.executor.handle(message, None)
    assert "late" in [delivery.alert for _spec, delivery, _timeout in slow_alerts.deliveries]

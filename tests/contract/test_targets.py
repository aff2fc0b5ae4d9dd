"""The contract of ``Targets`` (one attempt's delivery), held against both implementations:
``ScriptedTargets`` (the fake the logic's tests use) and ``TargetExecutor`` delivering to an SQS queue
on moto in-process.

What reached the target is, for the fake, what it recorded as delivered and answered a success; for the
executor, what the queue holds. A target that refuses a delivery is, for the fake, a scripted failure;
for the executor, SQS's answer replaced by an error one (botocore's ``before-call`` event, as
``Stubber`` does it) for the next ``SendMessage``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from punctual_functions.core.ports import Targets
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.targets import Delivery, TargetExecutor
from tests.fakes.targets import ScriptedTargets, failure

REGION = "us-east-1"
PAYLOAD = {"report": "sales", "n": 1}
DELIVERY = Delivery(
    job_id="job_contract",
    run_id="run_contract_20261122T120005Z",
    attempt=1,
    scheduled_for=datetime(2026, 11, 22, 12, 0, 5, tzinfo=UTC),
    payload=PAYLOAD,
    secret="whsec_contract",
)


@dataclass
class TargetsTwin:
    targets: Targets
    spec: dict[str, Any]
    # The payloads that reached the target, oldest first (reading them leaves them there).
    received: Callable[[], list[Any]]
    # The target refuses the next delivery, retriable or not (a throttle; a missing permission).
    refuse_next: Callable[[bool], None]


def scripted_twin() -> TargetsTwin:
    targets = ScriptedTargets()

    def received() -> list[Any]:
        return [
            delivery.payload
            for (_spec, delivery, _timeout), outcome in zip(targets.deliveries, targets.answers, strict=True)
            if outcome.succeeded
        ]

    def refuse_next(retriable: bool) -> None:
        targets.outcomes.append(failure(503 if retriable else 403, retriable=retriable))

    return TargetsTwin(targets, {"type": "sqs", "queue_url": "memory://deliveries"}, received, refuse_next)


def executor_twin() -> TargetsTwin:
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName="deliveries")["QueueUrl"]
    refusals: list[bool] = []

    def before_call(**_: Any) -> Any:
        if not refusals:
            return None
        retriable = refusals.pop(0)
        status, code = (503, "ServiceUnavailable") if retriable else (403, "AccessDenied")
        return SimpleNamespace(status_code=status, headers={}), {
            "Error": {"Code": code, "Message": "refused by the test"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }

    sqs.meta.events.register("before-call.sqs.SendMessage", before_call)

    def received() -> list[Any]:
        response = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return [json.loads(message["Body"]) for message in response.get("Messages", [])]

    def client(service: str) -> Any:
        assert service == "sqs", f"an SQS delivery asked for a {service} client"
        return sqs

    executor = TargetExecutor(client, NetworkPolicy())
    return TargetsTwin(executor, {"type": "sqs", "queue_url": queue_url}, received, refusals.append)


@pytest.fixture(params=["scripted", pytest.param("executor", marks=pytest.mark.moto)])
def twin(request: pytest.FixtureRequest) -> Iterator[TargetsTwin]:
    if request.param == "scripted":
        yield scripted_twin()
        return
    from moto import mock_aws

    with mock_aws():
        yield executor_twin()


def test_a_delivery_reaches_the_target_once_with_its_payload_and_succeeds(twin: TargetsTwin) -> None:
    outcome = twin.targets.execute(twin.spec, DELIVERY, 30)
    assert outcome.succeeded and not outcome.retriable and outcome.error is None
    assert twin.received() == [PAYLOAD]


def test_the_wait_is_called_once_just_before_the_request_goes_out(twin: TargetsTwin) -> None:
    seen_before: list[list[Any]] = []
    twin.targets.execute(twin.spec, DELIVERY, 30, wait=lambda: seen_before.append(twin.received()))
    assert seen_before == [[]], "called once, and nothing had reached the target yet"
    assert twin.received() == [PAYLOAD]


@pytest.mark.parametrize("retriable", [True, False])
def test_a_refusal_of_the_target_is_an_outcome_that_says_whether_to_retry_never_an_exception(
    twin: TargetsTwin, retriable: bool
) -> None:
    twin.refuse_next(retriable)
    waited: list[bool] = []
    outcome = twin.targets.execute(twin.spec, DELIVERY, 30, wait=lambda: waited.append(True))
    assert not outcome.succeeded and outcome.retriable is retriable and outcome.error
    assert waited == [True], "a refused request was a request: it went out at its moment"
    assert twin.received() == []
    assert twin.targets.execute(twin.spec, DELIVERY, 30).succeeded, "the refusal was of that delivery only"
    assert twin.received() == [PAYLOAD]


def test_a_delivery_cancelled_before_it_starts_is_not_made_and_is_not_retried(twin: TargetsTwin) -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = twin.targets.execute(twin.spec, DELIVERY, 30, cancel)
    assert not outcome.succeeded and not outcome.retriable and outcome.error == "cancelled"
    assert twin.received() == []


def test_preparing_a_delivery_delivers_nothing_and_never_fails(twin: TargetsTwin) -> None:
    twin.targets.prepare(twin.spec, 30)
    twin.targets.prepare({"type": "http", "url": "http://127.0.0.1:9/unreachable"}, 0.5)
    assert twin.received() == []

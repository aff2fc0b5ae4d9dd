"""Targets in another region of the deployment's partition (issue 25 item 8).

The deployment runs in us-east-1; the targets live in eu-west-1. Deliveries go through the real
:class:`TargetExecutor` with the process's shared clients (``punctual_functions.core.aws``), against moto
in-process (every region of its own) and against the local stack's emulator over HTTP (one endpoint
serving every region).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.endpoint import Endpoint
from moto import mock_aws

from punctual_functions.core import aws
from punctual_functions.core.settings import Settings
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.targets import Delivery, TargetError, TargetExecutor, validate_target
from tests.integration.conftest import GOOD_JOB, Harness, make_call

HOME = "us-east-1"
OTHER = "eu-west-1"
ACCOUNT = "123456789012"
STRICT = NetworkPolicy()
PAYLOAD = {"report": "sales"}


def make_delivery() -> Delivery:
    return Delivery(
        job_id="job_01JDX5",
        run_id="run_01JDX5_20261122T120005Z",
        attempt=1,
        scheduled_for=dt.datetime(2026, 11, 22, 12, 0, 5, tzinfo=dt.UTC),
        payload=PAYLOAD,
        secret=None,
    )


def executor_for(settings: Settings) -> TargetExecutor:
    """The worker's executor (punctual_functions/core/factories.py): the deployment region's shared
    clients."""
    return TargetExecutor(lambda service: aws.client(service, settings), STRICT)


def queue_arn(sqs: Any, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
    return str(attributes["QueueArn"])


def received(sqs: Any, queue_url: str, wait_seconds: int = 0) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        WaitTimeSeconds=wait_seconds,
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


# ------------------------------------------------------------------------------ moto in-process


@pytest.fixture
def deployment() -> Iterator[Settings]:
    """A deployment in us-east-1 on moto in-process; Lambda answers without running code (no Docker)."""
    aws.reset_clients()
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield Settings(region=HOME, account_id=ACCOUNT)
    aws.reset_clients()


def regional(service: str, region: str = OTHER) -> Any:
    return boto3.client(service, region_name=region)  # type: ignore[call-overload]


def test_an_sqs_queue_in_another_region_receives_the_run(deployment: Settings) -> None:
    # Given a queue in eu-west-1 and, as a decoy, one of the same name in the deployment's region
    sqs, home_sqs = regional("sqs"), regional("sqs", HOME)
    queue_url = sqs.create_queue(QueueName="reports")["QueueUrl"]
    decoy_url = home_sqs.create_queue(QueueName="reports")["QueueUrl"]
    assert f"sqs.{OTHER}.amazonaws.com" in queue_url
    # When a run is delivered to it
    outcome = executor_for(deployment).execute({"type": "sqs", "queue_url": queue_url}, make_delivery(), 30)
    # Then the message is in eu-west-1's queue, not in us-east-1's
    assert outcome.succeeded, outcome
    (message,) = received(sqs, queue_url)
    assert json.loads(message["Body"]) == PAYLOAD
    assert received(home_sqs, decoy_url) == []


def test_a_queue_url_of_the_legacy_host_names_its_region(deployment: Settings) -> None:
    sqs = regional("sqs")
    queue_url = sqs.create_queue(QueueName="legacy")["QueueUrl"]
    legacy_url = f"https://{OTHER}.queue.amazonaws.com/{ACCOUNT}/legacy"
    outcome = executor_for(deployment).execute({"type": "sqs", "queue_url": legacy_url}, make_delivery(), 30)
    assert outcome.succeeded, outcome
    assert len(received(sqs, queue_url)) == 1


def test_an_sns_topic_in_another_region_reaches_its_subscriber(deployment: Settings) -> None:
    sns, sqs = regional("sns"), regional("sqs")
    topic_arn = sns.create_topic(Name="alerts")["TopicArn"]
    assert f":sns:{OTHER}:" in topic_arn
    queue_url = sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn(sqs, queue_url))

    outcome = executor_for(deployment).execute({"type": "sns", "topic_arn": topic_arn}, make_delivery(), 30)

    assert outcome.succeeded, outcome
    (message,) = received(sqs, queue_url)
    assert json.loads(json.loads(message["Body"])["Message"]) == PAYLOAD


def test_an_event_bus_in_another_region_gets_the_event(deployment: Settings) -> None:
    events, sqs = regional("events"), regional("sqs")
    bus_arn = events.create_event_bus(Name="ops")["EventBusArn"]
    assert f":events:{OTHER}:" in bus_arn
    queue_url = sqs.create_queue(QueueName="ops-events")["QueueUrl"]
    events.put_rule(Name="reports", EventBusName="ops", EventPattern=json.dumps({"source": ["com.example"]}))
    events.put_targets(
        Rule="reports", EventBusName="ops", Targets=[{"Id": "queue", "Arn": queue_arn(sqs, queue_url)}]
    )

    outcome = executor_for(deployment).execute(
        {"type": "eventbridge", "bus": bus_arn, "source": "com.example"}, make_delivery(), 30
    )

    assert outcome.succeeded, outcome
    (message,) = received(sqs, queue_url)
    assert json.loads(message["Body"])["detail"]["payload"] == PAYLOAD


def _create_function(region: str, name: str) -> str:
    role = regional("iam", region).create_role(
        RoleName=f"{name}-{region}", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return event\n")
    function = regional("lambda", region).create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return str(function["FunctionArn"])


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(operation, URL) of every request any client sends: moto in-process finds a function by name in
    any region, so which region's Lambda was called shows only in the request."""
    requests: list[tuple[str, str]] = []
    make_request = Endpoint.make_request

    def record(endpoint: Endpoint, operation_model: Any, request_dict: dict[str, Any]) -> Any:
        requests.append((operation_model.name, request_dict["url"]))
        return make_request(endpoint, operation_model, request_dict)

    monkeypatch.setattr(Endpoint, "make_request", record)
    return requests


def test_a_function_in_another_region_is_invoked_there(
    deployment: Settings, sent: list[tuple[str, str]]
) -> None:
    function_arn = _create_function(OTHER, "report-builder")
    assert f":lambda:{OTHER}:" in function_arn
    outcome = executor_for(deployment).execute(
        {"type": "lambda", "function": function_arn}, make_delivery(), 30
    )
    assert outcome.succeeded, outcome
    (url,) = [url for operation, url in sent if operation == "Invoke"]
    assert url.startswith(f"https://lambda.{OTHER}.amazonaws.com/"), url


def test_a_bare_function_name_is_the_deployments_regions(
    deployment: Settings, sent: list[tuple[str, str]]
) -> None:
    _create_function(HOME, "home-builder")
    outcome = executor_for(deployment).execute(
        {"type": "lambda", "function": "home-builder"}, make_delivery(), 30
    )
    assert outcome.succeeded, outcome
    (url,) = [url for operation, url in sent if operation == "Invoke"]
    assert url.startswith(f"https://lambda.{HOME}.amazonaws.com/"), url


def test_a_target_of_another_partition_fails_at_once_without_a_call(deployment: Settings) -> None:
    calls: list[str] = []
    executor = executor_for(deployment)
    for service in ("sns", "sqs"):
        aws.client(service, deployment, region="cn-north-1").meta.events.register(
            "before-call", lambda model, **_: calls.append(model.name)
        )
    for spec in (
        {"type": "sns", "topic_arn": f"arn:aws-cn:sns:cn-north-1:{ACCOUNT}:alerts"},
        {"type": "sqs", "queue_url": f"https://sqs.cn-north-1.amazonaws.com.cn/{ACCOUNT}/jobs"},
    ):
        outcome = executor.execute(spec, make_delivery(), 30)
        assert not outcome.succeeded and not outcome.retriable, outcome
        assert outcome.error is not None
        assert "cn-north-1" in outcome.error and "aws-cn" in outcome.error, outcome.error
    assert calls == []


def test_a_client_is_shared_per_service_and_region_and_the_executor_delivers_through_it(
    deployment: Settings,
) -> None:
    home = aws.client("sqs", deployment)
    assert aws.client("sqs", deployment, region=HOME) is home
    other = aws.client("sqs", deployment, region=OTHER)
    assert other is not home and other.meta.region_name == OTHER
    assert aws.client("sqs", deployment, region=OTHER) is other
    sns: object = aws.client("sns", deployment, region=OTHER)
    assert sns is not other

    # The executor delivers through that same client, every time
    queue_url = regional("sqs").create_queue(QueueName="shared")["QueueUrl"]
    sent: list[str] = []
    other.meta.events.register(
        "provide-client-params.sqs.SendMessage", lambda params, **_: sent.append(params["QueueUrl"])
    )
    executor = executor_for(deployment)
    for _ in range(2):
        assert executor.execute({"type": "sqs", "queue_url": queue_url}, make_delivery(), 30).succeeded
    assert sent == [queue_url, queue_url]


# ------------------------------------------------------------------------------ the emulator over HTTP


def test_locally_every_region_goes_to_the_emulator_endpoint(moto_endpoint: str) -> None:
    # Given the local stack's settings: a deployment in us-east-1 on the emulator's endpoint
    aws.reset_clients()
    settings = Settings(region=HOME, account_id=ACCOUNT, aws_endpoint_url=moto_endpoint)
    other = aws.client("sqs", settings, region=OTHER)
    assert (other.meta.region_name, other.meta.endpoint_url) == (OTHER, moto_endpoint)
    # And a queue the emulator keeps in eu-west-1 (its URL names no region: the queue's AWS URL does)
    sqs = boto3.client("sqs", region_name=OTHER, endpoint_url=moto_endpoint)
    name = f"cross-{uuid.uuid4().hex[:12]}"
    emulator_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    from punctual_functions.core.targets.validation import target_region

    assert target_region({"type": "sqs", "queue_url": emulator_url}) is None
    # When a run is delivered to the queue's AWS URL
    outcome = executor_for(settings).execute(
        {"type": "sqs", "queue_url": f"https://sqs.{OTHER}.amazonaws.com/{ACCOUNT}/{name}"},
        make_delivery(),
        30,
    )
    # Then the emulator's eu-west-1 queue has it
    assert outcome.succeeded, outcome
    (message,) = received(sqs, emulator_url)
    assert json.loads(message["Body"]) == PAYLOAD
    aws.reset_clients()


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("spec", "region"),
    [
        ({"type": "lambda", "function": "my-function"}, None),
        ({"type": "lambda", "function": "my-function:live"}, None),
        ({"type": "lambda", "function": "eu-fn-1:live"}, None),  # a name and alias, not a region
        ({"type": "lambda", "function": f"{ACCOUNT}:function:my-function"}, None),
        ({"type": "lambda", "function": f"{OTHER}:{ACCOUNT}:function:f"}, OTHER),
        ({"type": "lambda", "function": f"{OTHER}:function:f:live"}, OTHER),
        ({"type": "lambda", "function": f"arn:aws:lambda:{ACCOUNT}:function:f"}, None),
        ({"type": "lambda", "function": f"arn:aws:lambda:{OTHER}:{ACCOUNT}:function:f"}, OTHER),
        ({"type": "lambda", "function": f"arn:aws:lambda:{OTHER}:{ACCOUNT}:function:f:live"}, OTHER),
        (
            {"type": "lambda", "function": f"arn:aws-us-gov:lambda:us-gov-west-1:{ACCOUNT}:function:f"},
            "us-gov-west-1",
        ),
        ({"type": "sqs", "queue_url": f"https://sqs.{OTHER}.amazonaws.com/{ACCOUNT}/q"}, OTHER),
        ({"type": "sqs", "queue_url": f"https://SQS.EU-WEST-1.amazonaws.com/{ACCOUNT}/q"}, OTHER),
        ({"type": "sqs", "queue_url": f"https://{OTHER}.queue.amazonaws.com/{ACCOUNT}/q"}, OTHER),
        ({"type": "sqs", "queue_url": f"https://queue.amazonaws.com/{ACCOUNT}/q"}, "us-east-1"),
        ({"type": "sqs", "queue_url": f"https://sqs.cn-north-1.amazonaws.com.cn/{ACCOUNT}/q"}, "cn-north-1"),
        (
            {"type": "sqs", "queue_url": f"https://sqs-fips.us-gov-west-1.amazonaws.com/{ACCOUNT}/q"},
            "us-gov-west-1",
        ),
        (
            {
                "type": "sqs",
                "queue_url": f"https://vpce-0a1b-2c3d.sqs.{OTHER}.vpce.amazonaws.com/{ACCOUNT}/q",
            },
            OTHER,
        ),
        (
            {"type": "sqs", "queue_url": f"http://sqs.{OTHER}.localhost.localstack.cloud:4566/{ACCOUNT}/q"},
            OTHER,
        ),
        ({"type": "sqs", "queue_url": f"http://127.0.0.1:4566/{ACCOUNT}/q"}, None),
        ({"type": "sns", "topic_arn": f"arn:aws:sns:{OTHER}:{ACCOUNT}:t.fifo"}, OTHER),
        ({"type": "sns", "topic_arn": f"arn:aws-eusc:sns:eusc-de-east-1:{ACCOUNT}:t"}, "eusc-de-east-1"),
        ({"type": "eventbridge", "bus": "default"}, None),
        ({"type": "eventbridge", "bus": f"arn:aws:events:{OTHER}:{ACCOUNT}:event-bus/ops"}, OTHER),
    ],
)
def test_the_target_names_its_region(spec: dict[str, Any], region: str | None) -> None:
    from punctual_functions.core.targets.validation import target_region

    assert target_region(validate_target(spec, STRICT)) == region


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"type": "sns", "topic_arn": f"arn:aws:sns:eu-west:{ACCOUNT}:t"}, "target.topic_arn"),
        ({"type": "sns", "topic_arn": f"arn:aws:sns:EU-WEST-1:{ACCOUNT}:t"}, "target.topic_arn"),
        ({"type": "sns", "topic_arn": f"arn:aws:sns:1:{ACCOUNT}:t"}, "target.topic_arn"),
        ({"type": "sns", "topic_arn": f"arn:aws:sns:---:{ACCOUNT}:t"}, "target.topic_arn"),
        ({"type": "eventbridge", "bus": f"arn:aws:events:euwest1:{ACCOUNT}:event-bus/ops"}, "target.bus"),
        ({"type": "lambda", "function": f"arn:aws:lambda:eu_west_1:{ACCOUNT}:function:f"}, "target.function"),
        ({"type": "sqs", "queue_url": f"https://sqs.eu-west.amazonaws.com/{ACCOUNT}/q"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": f"https://sqs.amazonaws.com/{ACCOUNT}/q"}, "target.queue_url"),
    ],
)
def test_a_malformed_region_is_refused_naming_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(TargetError) as caught:
        validate_target(spec, STRICT)
    assert caught.value.field == field


def test_the_api_refuses_a_malformed_region_with_422(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from punctual_functions.core.factories import build_job_service

    settings = replace(harness.settings, allowed_target_arns=("*",))
    service = build_job_service(
        settings, store=harness.store, dispatcher=harness.dispatcher, policy=STRICT, clock=harness.clock
    )
    call = make_call(service, monkeypatch)
    for topic_arn, expected in (
        (f"arn:aws:sns:eu-west:{ACCOUNT}:t", 422),
        (f"arn:aws:sns:{OTHER}:{ACCOUNT}:t", 201),
    ):
        status, body = call(
            "POST", "/v1/jobs", {**GOOD_JOB, "target": {"type": "sns", "topic_arn": topic_arn}}
        )
        assert status == expected, body
        if status == 422:
            assert body["field"] == "target.topic_arn", body


def test_the_executor_refuses_a_stored_target_with_a_malformed_region(deployment: Settings) -> None:
    spec = {"type": "sns", "topic_arn": f"arn:aws:sns:eu-west:{ACCOUNT}:t"}
    outcome = executor_for(deployment).execute(spec, make_delivery(), 30)
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error is not None and outcome.error.startswith("invalid target: target.topic_arn")

"""The contract of ``Invoker`` (the dispatcher's fan-out), held against both implementations:
``RecordingInvoker`` (the fake the logic's tests use) and ``LambdaInvoker`` on a moto Lambda in-process.

moto runs no function: what the adapter does is seen in the requests it makes (botocore's
``before-call`` event, which sees each ``Invoke`` as sent), and a refused invocation is one that
botocore answers with Lambda's throttling error in place of moto's answer.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from punctual_functions.core.invoker import LambdaInvoker
from punctual_functions.core.ports import Invoker
from tests.fakes.invoker import RecordingInvoker

NOW = datetime(2026, 11, 22, 12, 0, 0, 250000, tzinfo=UTC)
REGION = "us-east-1"


@dataclass
class InvokerTwin:
    invoker: Invoker
    # The (group, start) pairs that an invocation was started for, in any order.
    started: Callable[[], list[tuple[list[int], datetime]]]
    # The next invocation for this group is refused (throttled).
    refuse: Callable[[list[int]], None]


def recording_twin() -> InvokerTwin:
    invoker = RecordingInvoker()
    return InvokerTwin(
        invoker,
        lambda: list(zip(invoker.started, invoker.starts, strict=True)),
        invoker.refuse.append,
    )


def _function(lambda_client: Any) -> str:
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(RoleName="dispatcher", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    created = lambda_client.create_function(
        FunctionName="dispatcher",
        Runtime="python3.11",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return str(created["FunctionArn"])


def lambda_twin() -> InvokerTwin:
    client = boto3.client("lambda", region_name=REGION)
    function_arn = _function(client)
    sent: list[dict[str, Any]] = []
    refused: list[list[int]] = []

    def before_call(params: dict[str, Any], **_: Any) -> Any:
        body = params["body"]
        payload = json.loads(body if isinstance(body, bytes | str) else body.read())
        if payload["shards"] in refused:
            refused.remove(payload["shards"])
            error = {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}
            return SimpleNamespace(status_code=429, headers={}), {
                "Error": error,
                "ResponseMetadata": {"HTTPStatusCode": 429},
            }
        sent.append({"url": params["url_path"], "headers": dict(params["headers"]), "payload": payload})
        return None

    client.meta.events.register("before-call.lambda.Invoke", before_call)

    def started() -> list[tuple[list[int], datetime]]:
        for request in sent:  # what the adapter asks of Lambda: an asynchronous invocation of itself
            assert request["url"].startswith(f"/2015-03-31/functions/{function_arn.replace(':', '%3A')}")
            assert request["headers"]["X-Amz-Invocation-Type"] == "Event"
        return [
            (request["payload"]["shards"], datetime.fromisoformat(request["payload"]["start_at"]))
            for request in sent
        ]

    return InvokerTwin(LambdaInvoker(client, function_arn), started, refused.append)


@pytest.fixture(params=["recording", pytest.param("lambda", marks=pytest.mark.moto)])
def twin(request: pytest.FixtureRequest) -> Iterator[InvokerTwin]:
    if request.param == "recording":
        yield recording_twin()
        return
    from moto import mock_aws

    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield lambda_twin()


def by_group(pairs: list[tuple[list[int], datetime]]) -> list[tuple[list[int], datetime]]:
    return sorted(pairs, key=lambda pair: pair[0])


GROUPS = [[0, 1], [2, 3], [4]]
STARTS = [NOW, NOW + timedelta(seconds=2.5), NOW + timedelta(seconds=5)]


def test_each_group_starts_an_invocation_of_its_own_at_its_moment_and_none_is_handed_back(
    twin: InvokerTwin,
) -> None:
    assert twin.invoker.start_sweeps(GROUPS, STARTS) == []
    assert by_group(twin.started()) == by_group(list(zip(GROUPS, STARTS, strict=True)))


def test_a_refused_invocation_hands_its_group_back_and_the_other_groups_still_start(
    twin: InvokerTwin,
) -> None:
    twin.refuse([2, 3])
    assert twin.invoker.start_sweeps(GROUPS, STARTS) == [[2, 3]]
    assert by_group(twin.started()) == [([0, 1], STARTS[0]), ([4], STARTS[2])]


def test_every_invocation_refused_hands_every_group_back(twin: InvokerTwin) -> None:
    for group in GROUPS:
        twin.refuse(group)
    assert sorted(twin.invoker.start_sweeps(GROUPS, STARTS)) == GROUPS
    assert twin.started() == []


def test_no_group_starts_nothing_and_hands_nothing_back(twin: InvokerTwin) -> None:
    assert twin.invoker.start_sweeps([], []) == []
    assert twin.started() == []

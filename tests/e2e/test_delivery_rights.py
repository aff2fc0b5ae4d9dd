"""End to end through the local stack: delivery rights given by ``PUNCTUAL_DELIVERY_RIGHTS`` and written
into the table as a deploy writes them. An owner's job reaches its own queue; another owner's create
to that queue is refused with 403; a right withdrawn (the item rewritten, as a redeploy does) after a
job was made fails its run without a delivery."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.testing.stack import local_stack
from punctual_functions.core.model import iso
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.store.deployment import delivery_rights_item
from tests.e2e.conftest import Api, emulator_client, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

TOKENS = {"alice": "alice-token", "bob": "bob-token", "carol": "carol-token"}
ACCOUNT = "123456789012"


def rights(*owners: str) -> list[dict[str, Any]]:
    return [{"owners": [owner], "targets": [f"arn:aws:sqs:*:{ACCOUNT}:{owner}-*"]} for owner in owners]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    state = tmp_path_factory.mktemp("rights-stack")
    env = {
        "PUNCTUAL_TOKENS": ",".join(f"{token}={owner}" for owner, token in TOKENS.items()),
        "PUNCTUAL_DELIVERY_RIGHTS": json.dumps(rights("alice", "bob", "carol")),
    }
    with local_stack(state, workers=1, env=env) as running:
        yield Api(running.base_url, running.state_dir, token=TOKENS["alice"])


def one_off(queue_url: str, seconds: int) -> dict[str, Any]:
    due = (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)
    return {
        "schedule": {"at": iso(due)},
        "target": {"type": "sqs", "queue_url": queue_url},
        "payload": {"n": 1},
    }


def test_each_owner_delivers_to_its_own_queues_only_and_a_withdrawn_right_stops_its_runs(stack: Api) -> None:
    sqs = emulator_client(stack, "sqs")
    queues = {
        owner: sqs.create_queue(QueueName=f"{owner}-reports-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        for owner in TOKENS
    }
    # carol's job is made while she has the right, which is then withdrawn (as a redeploy would)
    # before its run: the worker has read no rights yet, so it reads the new ones at that run.
    status, carols = stack.call("POST", "/v1/jobs", one_off(queues["carol"], 8), token=TOKENS["carol"])
    assert status == 201, carols
    withdrawn = DeliveryRights.from_value(rights("alice", "bob"))
    dynamodb = emulator_client(stack, "dynamodb")
    dynamodb.put_item(TableName="punctual", Item=delivery_rights_item(withdrawn.to_json()))

    status, error = stack.call("POST", "/v1/jobs", one_off(queues["alice"], 5), token=TOKENS["bob"])
    assert status == 403, error
    assert error["error"] == "forbidden" and error["field"] == "target.queue_url"
    assert "owner bob has no delivery right" in error["reason"] and "alice-reports" in error["reason"]

    status, alices = stack.call("POST", "/v1/jobs", one_off(queues["alice"], 3))
    assert status == 201, alices
    messages = wait_until(
        lambda: sqs.receive_message(QueueUrl=queues["alice"], WaitTimeSeconds=1).get("Messages"), 30
    )
    assert messages and json.loads(messages[0]["Body"]) == {"n": 1}

    def carols_run() -> dict[str, Any] | None:
        _, page = stack.call("GET", f"/v1/jobs/{carols['job_id']}/runs", token=TOKENS["carol"])
        done = [run for run in page["items"] if run["status"] in ("SUCCEEDED", "FAILED")]
        return done[0] if done else None

    run = wait_until(carols_run, 40)
    assert run is not None and run["status"] == "FAILED", run
    assert run["finished_at"] >= run["started_at"] == run["scheduled_for"], "recorded at its second"
    assert run["error"].startswith("delivery refused: owner carol has no delivery right"), run
    assert run["attempt"] == 1, "not retried"
    assert sqs.receive_message(QueueUrl=queues["carol"], WaitTimeSeconds=1).get("Messages") is None

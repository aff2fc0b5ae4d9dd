"""End to end through the local stack: the allow-list of AWS targets is the table's item, written by
provisioning as the CDK stack's custom resource writes it on AWS, and the API takes a job to a queue
through it (the roles' environment holds no allow-list)."""

from __future__ import annotations

import uuid

import pytest

from punctual_functions.core.store.keys import allowed_targets_key
from tests.e2e.conftest import Api, emulator_client

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def test_the_allow_list_is_the_tables_item_and_the_api_takes_a_queue_through_it(local_stack: Api) -> None:
    dynamodb = emulator_client(local_stack, "dynamodb")
    item = dynamodb.get_item(TableName="punctual", Key=allowed_targets_key(), ConsistentRead=True)["Item"]
    assert item["patterns"] == {"S": "*"}
    sqs = emulator_client(local_stack, "sqs")
    queue_url = sqs.create_queue(QueueName=f"reports-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    status, job = local_stack.call(
        "POST",
        "/v1/jobs",
        {"schedule": {"rate": "1 hour"}, "target": {"type": "sqs", "queue_url": queue_url}},
    )
    assert status == 201, job
    assert local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")[0] == 200

"""The table and the queues: built from punctual_functions.core.resources, with production defaults."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from punctual.cdk.functions import WORKER_TIMEOUT
from punctual_functions.core.resources import (
    DLQ_RETENTION_SECONDS,
    TTL_ATTRIBUTE,
    VISIBILITY_TIMEOUT_FACTOR,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
    WORKER_TIMEOUT_SECONDS,
    table_definition,
)
from tests.infrastructure.conftest import Synthesized

pytestmark = pytest.mark.xdist_group("infrastructure")


def test_given_the_shared_definition_when_synthesized_then_the_table_has_its_keys_and_index(
    default_stack: Synthesized,
) -> None:
    definition = table_definition("punctual-dev")
    table = default_stack.only("AWS::DynamoDB::Table")["Properties"]

    assert "TableName" not in table, "a retained table with a fixed name blocks the next deploy"
    assert table["KeySchema"] == definition["KeySchema"]
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(
        definition["AttributeDefinitions"], key=str
    )
    assert table["GlobalSecondaryIndexes"] == definition["GlobalSecondaryIndexes"], (
        "the owner index must be exactly the one the local stack creates"
    )


def test_given_any_stage_when_synthesized_then_the_table_is_on_demand_recoverable_encrypted_with_ttl(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for synthesized in (default_stack, production_stack):
        synthesized.template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
                "TimeToLiveSpecification": {"AttributeName": TTL_ATTRIBUTE, "Enabled": True},
            },
        )


def test_given_the_prod_stage_when_synthesized_then_the_table_and_queues_survive_stack_deletion(
    production_stack: Synthesized,
) -> None:
    production_stack.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": Match.object_like({"DeletionProtectionEnabled": True}),
        },
    )
    for queue in production_stack.resources("AWS::SQS::Queue").values():
        assert queue["DeletionPolicy"] == "Retain"


def test_given_the_dev_stage_when_synthesized_then_the_table_and_queues_are_deleted_with_the_stack(
    default_stack: Synthesized,
) -> None:
    default_stack.template.has_resource(
        "AWS::DynamoDB::Table",
        {"DeletionPolicy": "Delete", "Properties": Match.object_like({"DeletionProtectionEnabled": False})},
    )
    for queue in default_stack.resources("AWS::SQS::Queue").values():
        assert queue["DeletionPolicy"] == "Delete"


def test_given_the_worker_timeout_when_synthesized_then_the_visibility_timeout_follows_aws_guidance(
    default_stack: Synthesized,
) -> None:
    worker = default_stack.function("worker")["Properties"]
    source = default_stack.only("AWS::Lambda::EventSourceMapping")["Properties"]
    queue = _queues(default_stack)["WorkQueue"][1]

    assert worker["Timeout"] == WORKER_TIMEOUT.to_seconds() == WORKER_TIMEOUT_SECONDS == 900
    assert queue["VisibilityTimeout"] == (
        VISIBILITY_TIMEOUT_FACTOR * worker["Timeout"] + source.get("MaximumBatchingWindowInSeconds", 0)
    ), "visibility must be six times the worker's timeout plus the batching window"


def test_given_the_shared_definitions_when_synthesized_then_the_work_queue_redrives_to_a_14_day_dlq(
    default_stack: Synthesized,
) -> None:
    queues = _queues(default_stack)
    dlq_id, dlq = queues["DeadLetterQueue"]
    _, work = queues["WorkQueue"]

    assert dlq["MessageRetentionPeriod"] == DLQ_RETENTION_SECONDS == 14 * 24 * 3600
    assert work["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": WORK_QUEUE_MAX_RECEIVE_COUNT,
    }
    assert WORK_QUEUE_MAX_RECEIVE_COUNT * work["VisibilityTimeout"] < work["MessageRetentionPeriod"], (
        "a failing message must reach the DLQ before the work queue's retention deletes it"
    )


def test_given_both_queues_when_synthesized_then_they_are_encrypted_and_refuse_plain_http(
    default_stack: Synthesized,
) -> None:
    for queue in default_stack.resources("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    policies = default_stack.resources("AWS::SQS::QueuePolicy")
    assert len(policies) == 2
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            statement["Effect"] == "Deny"
            and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for statement in statements
        ), "each queue must deny requests without TLS"


def _queues(stack: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """The work queue and the DLQ by construct id: (logical id, properties)."""
    found = {}
    for logical_id, resource in stack.resources("AWS::SQS::Queue").items():
        construct_id = "DeadLetterQueue" if logical_id.startswith("QueuesDeadLetterQueue") else "WorkQueue"
        found[construct_id] = (logical_id, resource["Properties"])
    return found


def test_given_the_prod_stack_when_synthesized_then_nothing_it_retains_has_a_fixed_name(
    production_stack: Synthesized,
) -> None:
    # cdk destroy keeps these; a fixed name would make the next cdk deploy of the stage fail on them.
    retained = {
        logical_id: resource
        for logical_id, resource in production_stack.raw["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    assert {r["Type"] for r in retained.values()} >= {"AWS::DynamoDB::Table", "AWS::SQS::Queue"}
    # A physical name is a property named like TableName, QueueName, LogGroupName, RoleName...
    named = {
        logical_id: name
        for logical_id, resource in retained.items()
        for name in resource.get("Properties", {})
        if name.endswith("Name")
    }
    assert named == {}, f"retained resources with fixed names: {named}"
    # (the functions' fixed names are fine: the functions go with the stack)
    assert all(
        r.get("DeletionPolicy") != "Retain"
        for r in production_stack.resources("AWS::Lambda::Function").values()
    )

"""Creates the table and queues in an emulator from the same definitions the CDK stack uses, and
writes the deployment's allow-list of targets and its delivery rights into the table, as the CDK
stack's custom resources do."""

from __future__ import annotations

from typing import Any

from punctual_functions.core import aws
from punctual_functions.core.factories import build_store
from punctual_functions.core.resources import (
    TTL_ATTRIBUTE,
    dlq_attributes,
    queue_names,
    table_definition,
    work_queue_attributes,
)
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.settings import Settings


def provision(settings: Settings, prefix: str = "punctual", rights: DeliveryRights | None = None) -> Settings:
    """Idempotent: existing resources are kept (and their state with them). ``rights``: who may
    deliver where (by default every owner to every target the allow-list lets through: the local
    stack's callers are one developer's tokens)."""
    dynamodb: Any = aws.client("dynamodb", settings)
    sqs: Any = aws.client("sqs", settings)
    existing = dynamodb.list_tables().get("TableNames", [])
    if settings.table_name not in existing:
        dynamodb.create_table(**table_definition(settings.table_name))
        dynamodb.get_waiter("table_exists").wait(TableName=settings.table_name)
        dynamodb.update_time_to_live(
            TableName=settings.table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
    work_name, dlq_name = queue_names(prefix)
    dlq_url = sqs.create_queue(QueueName=dlq_name, Attributes=dlq_attributes())["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    work_url = sqs.create_queue(QueueName=work_name, Attributes=work_queue_attributes(dlq_arn))["QueueUrl"]
    store = build_store(settings)
    store.put_allowed_targets(settings.allowed_target_arns)
    store.put_delivery_rights(rights if rights is not None else DeliveryRights.for_every_owner())
    return settings.replace(queue_url=work_url, dlq_url=dlq_url)

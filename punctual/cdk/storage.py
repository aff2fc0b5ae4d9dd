"""The DynamoDB table, declared from ``punctual_functions.core.resources`` (the local stack's source too)."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual_functions.core.resources import TTL_ATTRIBUTE, table_definition

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
}


def _key_attributes(
    definition: dict[str, Any], key_schema: list[dict[str, str]]
) -> tuple[dynamodb.Attribute, dynamodb.Attribute | None]:
    """(partition key, sort key) of a key schema, typed from the definition's attribute list."""
    types = {
        attribute["AttributeName"]: attribute["AttributeType"]
        for attribute in definition["AttributeDefinitions"]
    }
    keys = {key["KeyType"]: key["AttributeName"] for key in key_schema}
    partition = dynamodb.Attribute(name=keys["HASH"], type=_ATTRIBUTE_TYPES[types[keys["HASH"]]])
    sort_name = keys.get("RANGE")
    sort = dynamodb.Attribute(name=sort_name, type=_ATTRIBUTE_TYPES[types[sort_name]]) if sort_name else None
    return partition, sort


class Storage(Construct):
    """One on-demand table with point-in-time recovery, TTL on run items and the owner index."""

    def __init__(self, scope: Construct, construct_id: str, *, config: SchedulerProps) -> None:
        super().__init__(scope, construct_id)
        definition = table_definition(config.name_prefix)
        if definition["BillingMode"] != "PAY_PER_REQUEST":
            raise ValueError("the table definition must stay on-demand (PAY_PER_REQUEST)")
        partition_key, sort_key = _key_attributes(definition, definition["KeySchema"])
        # No fixed name: prod retains the table when the stack is deleted, and a redeploy would fail on
        # a table of the same name still being there. The functions get the generated name.
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=partition_key,
            sort_key=sort_key,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=config.is_production,
            removal_policy=RemovalPolicy.RETAIN if config.is_production else RemovalPolicy.DESTROY,
        )
        self.index_names: list[str] = []
        for index in definition["GlobalSecondaryIndexes"]:
            index_partition, index_sort = _key_attributes(definition, index["KeySchema"])
            self.table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=index_partition,
                sort_key=index_sort,
                projection_type=_PROJECTIONS[index["Projection"]["ProjectionType"]],
            )
            self.index_names.append(index["IndexName"])

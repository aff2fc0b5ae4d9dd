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
    """One table (on-demand, or provisioned with auto scaling) with point-in-time recovery, TTL on
    run items and the owner index."""

    def __init__(self, scope: Construct, construct_id: str, *, config: SchedulerProps) -> None:
        super().__init__(scope, construct_id)
        definition = table_definition(config.name_prefix)
        if definition["BillingMode"] != "PAY_PER_REQUEST":
            raise ValueError("the table definition must stay on-demand (PAY_PER_REQUEST)")
        partition_key, sort_key = _key_attributes(definition, definition["KeySchema"])
        provisioned = config.table_capacity_mode == "provisioned"
        # No fixed name: prod retains the table when the stack is deleted, and a redeploy would fail on
        # a table of the same name still being there. The functions get the generated name.
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=partition_key,
            sort_key=sort_key,
            billing_mode=dynamodb.BillingMode.PROVISIONED
            if provisioned
            else dynamodb.BillingMode.PAY_PER_REQUEST,
            # Provisioned: auto scaling (below) moves them; these are where it starts.
            read_capacity=config.table_min_read_units if provisioned else None,
            write_capacity=config.table_min_write_units if provisioned else None,
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
                read_capacity=config.index_min_read_units if provisioned else None,
                write_capacity=config.index_min_write_units if provisioned else None,
            )
            self.index_names.append(index["IndexName"])
        if provisioned:
            self._auto_scale(config)

    def _auto_scale(self, config: SchedulerProps) -> None:
        """Application Auto Scaling on the table's and each index's reads and writes, tracking
        ``table_target_utilization`` percent of what is provisioned."""
        target = config.table_target_utilization
        self.table.auto_scale_write_capacity(
            min_capacity=config.table_min_write_units, max_capacity=config.table_max_write_units
        ).scale_on_utilization(target_utilization_percent=target)
        self.table.auto_scale_read_capacity(
            min_capacity=config.table_min_read_units, max_capacity=config.table_max_read_units
        ).scale_on_utilization(target_utilization_percent=target)
        for name in self.index_names:
            self.table.auto_scale_global_secondary_index_write_capacity(
                name, min_capacity=config.index_min_write_units, max_capacity=config.index_max_write_units
            ).scale_on_utilization(target_utilization_percent=target)
            self.table.auto_scale_global_secondary_index_read_capacity(
                name, min_capacity=config.index_min_read_units, max_capacity=config.index_max_read_units
            ).scale_on_utilization(target_utilization_percent=target)

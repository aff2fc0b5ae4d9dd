"""The deployment's items in the table (``DEPLOYMENT``: the allow-list of targets, the delivery
rights), written by the deploy: CDK's ``AwsCustomResource``, one ``PutItem`` on every deploy that
changes the item, its role allowed that partition alone."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import custom_resources as cr
from constructs import Construct

from punctual.cdk import permissions
from punctual.cdk.config import SchedulerProps
from punctual.cdk.log_groups import log_group


def item_writer(
    scope: Construct,
    construct_id: str,
    *,
    config: SchedulerProps,
    table: dynamodb.ITable,
    item: dict[str, Any],
    physical_id: str,
) -> cr.AwsCustomResource:
    """Writes ``item`` (its values may be tokens, resolved at deploy time) at each deploy that
    changes it."""
    put = cr.AwsSdkCall(
        service="DynamoDB",
        action="putItem",
        parameters={"TableName": table.table_name, "Item": item},
        physical_resource_id=cr.PhysicalResourceId.of(physical_id),
    )
    return cr.AwsCustomResource(
        scope,
        construct_id,
        on_create=put,
        on_update=put,
        policy=cr.AwsCustomResourcePolicy.from_statements([permissions.deployment_item(table)]),
        install_latest_aws_sdk=False,
        log_group=log_group(scope, f"{construct_id}Logs", config),
    )

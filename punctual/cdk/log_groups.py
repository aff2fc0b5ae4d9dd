"""The service's log groups: kept for ``log_retention_days``, and kept with the stack's deletion in
production (a dev stack takes its logs with it)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct

from punctual.cdk.config import SchedulerProps


def log_group(scope: Construct, construct_id: str, props: SchedulerProps) -> logs.LogGroup:
    removal = RemovalPolicy.RETAIN if props.is_production else RemovalPolicy.DESTROY
    group = logs.LogGroup(scope, construct_id, removal_policy=removal)
    # Days as a number (validated by SchedulerProps), set on the resource itself: the L2 construct
    # takes only its RetentionDays enum.
    resource = group.node.default_child
    assert isinstance(resource, logs.CfnLogGroup)
    resource.retention_in_days = props.log_retention_days
    return group

"""What the stack's custom resources with a function of ours share (the ``Job`` provider and, in
API-key mode, API Gateway's account role): the onEvent function's role and log group, and CDK's
Provider framework with its log group and cdk-nag's findings on CDK's own parts answered."""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.log_groups import log_group

FRAMEWORK_REASON: Final = (
    "CDK's custom resource Provider framework: its function, runtime and role are CDK's own (a Node.js "
    "runtime CDK chooses, the AWSLambdaBasicExecutionRole managed policy, and lambda:InvokeFunction on "
    "the onEvent function and its versions, ':*')."
)


def on_event_role(
    scope: Construct, props: SchedulerProps, description: str
) -> tuple[iam.Role, logs.LogGroup]:
    """The onEvent function's role (``OnEventRole``), allowed to write its log group (``OnEventLogs``)."""
    logs_of_function = log_group(scope, "OnEventLogs", props)
    role = iam.Role(
        scope, "OnEventRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description
    )
    logs_of_function.grant_write(role)
    return role, logs_of_function


def provider(scope: Construct, on_event: lambda_.IFunction, props: SchedulerProps) -> cr.Provider:
    """CDK's Provider framework (``Provider``) in front of ``on_event``; its own function logs to a
    group of ours (``ProviderLogs``) with the deployment's retention (by default it would make one
    that keeps its logs forever)."""
    framework = cr.Provider(
        scope, "Provider", on_event_handler=on_event, log_group=log_group(scope, "ProviderLogs", props)
    )
    NagSuppressions.add_resource_suppressions(
        framework,
        [
            NagPackSuppression(id="AwsSolutions-L1", reason=FRAMEWORK_REASON),
            NagPackSuppression(id="AwsSolutions-IAM4", reason=FRAMEWORK_REASON),
            NagPackSuppression(id="AwsSolutions-IAM5", reason=FRAMEWORK_REASON),
        ],
        apply_to_children=True,
    )
    return framework

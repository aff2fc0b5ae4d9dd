"""API Gateway's account-wide CloudWatch role, set by the stack only where the account names none.

A REST API's stage (API-key mode) writes its access and execution logs through the role of the
account's API Gateway settings, one per account and region. CDK's ``cloudWatchRole`` sets it
unconditionally, replacing the role another stack or the console set there; ``never`` leaves it,
and fails the deploy where the account has none. This construct (``api_gateway_cloudwatch_role``
``if_absent``, the default) makes a role for it, retained with the stack's deletion, and a custom
resource (``punctual_functions/cfn/apigateway_account.py``, behind CDK's Provider framework) that
names it in the account's settings only if they name none. The stage depends on it.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.providers import on_event_role, provider

RESOURCE_TYPE: Final = "Custom::PunctualApiGatewayAccount"
_PUSH_TO_LOGS: Final = "service-role/AmazonAPIGatewayPushToCloudWatchLogs"


class ApiGatewayAccount(Construct):
    """``role``: the role the account's API Gateway settings name after the deploy if they named none."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: SchedulerProps,
        code: lambda_.Code,
        layer: lambda_.ILayerVersion,
        runtime: lambda_.Runtime,
        architecture: lambda_.Architecture,
        runtime_reason: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "CloudWatchRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description="API Gateway's account-wide role for REST APIs' logs (kept when the stack goes)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(_PUSH_TO_LOGS)],
        )
        # The account may name it for other APIs by the time the stack goes.
        self.role.apply_removal_policy(RemovalPolicy.RETAIN)
        function_role, logs_of_function = on_event_role(
            self, props, "Punctual: sets API Gateway's account CloudWatch role if the account names none"
        )
        account_settings = Stack.of(self).format_arn(service="apigateway", account="", resource="/account")
        function_role.add_to_principal_policy(
            iam.PolicyStatement(actions=["apigateway:GET", "apigateway:PATCH"], resources=[account_settings])
        )
        function_role.add_to_principal_policy(
            iam.PolicyStatement(actions=["iam:PassRole"], resources=[self.role.role_arn])
        )
        on_event = lambda_.Function(
            self,
            "OnEvent",
            description="Punctual: names a CloudWatch role in API Gateway's settings if they name none",
            runtime=runtime,
            architecture=architecture,
            handler="punctual_functions.cfn.apigateway_account.handler",
            code=code,
            layers=[layer],
            memory_size=256,
            timeout=Duration.minutes(3),
            role=function_role,
            logging_format=lambda_.LoggingFormat.JSON,
            log_group=logs_of_function,
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider(self, on_event, props).service_token,
            resource_type=RESOURCE_TYPE,
            properties={"RoleArn": self.role.role_arn},
        )
        NagSuppressions.add_resource_suppressions(
            on_event, [NagPackSuppression(id="AwsSolutions-L1", reason=runtime_reason)]
        )
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM4",
                    reason="API Gateway's account-wide CloudWatch role uses AWS's managed policy "
                    "AmazonAPIGatewayPushToCloudWatchLogs, the documented way to let API Gateway write "
                    "access and execution logs.",
                    applies_to=[f"Policy::arn:<AWS::Partition>:iam::aws:policy/{_PUSH_TO_LOGS}"],
                )
            ],
        )

"""The REST API: IAM (SigV4) on every route but health and docs, or API keys with a usage plan."""

from __future__ import annotations

from typing import Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.config import DeploymentConfig

# Served without authentication (SPEC): liveness, the OpenAPI document and Swagger UI (its page, and
# its script and style under /docs/).
PUBLIC_PATHS: Final = ("/v1/health", "/openapi.json", "/docs", "/docs/{asset}")
# Everything else under /v1 goes to the api function behind the chosen authentication.
PROTECTED_PATH: Final = "/v1/{proxy+}"


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        handler: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if config.is_production else RemovalPolicy.DESTROY
        self.access_logs = logs.LogGroup(self, "AccessLogs", removal_policy=removal)
        access_log_resource = self.access_logs.node.default_child
        assert isinstance(access_log_resource, logs.CfnLogGroup)
        access_log_resource.retention_in_days = config.log_retention_days

        api_key_mode = config.api_auth == "api_key"
        self.rest_api = apigateway.RestApi(
            self,
            "RestApi",
            rest_api_name=config.name_prefix,
            description="Punctual: schedule jobs that fire at their second",
            endpoint_types=[apigateway.EndpointType.REGIONAL],
            cloud_watch_role=config.api_gateway_cloudwatch_role,
            api_key_source_type=apigateway.ApiKeySourceType.HEADER if api_key_mode else None,
            deploy_options=apigateway.StageOptions(
                stage_name=config.stage,
                throttling_rate_limit=config.api_throttle_rate_limit,
                throttling_burst_limit=config.api_throttle_burst_limit,
                access_log_destination=apigateway.LogGroupLogDestination(self.access_logs),
                access_log_format=apigateway.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigateway.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # request bodies (job payloads) stay out of the logs
                metrics_enabled=True,
                tracing_enabled=True,
            ),
        )
        # The stack exports the URL itself, as ApiUrl.
        self.rest_api.node.try_remove_child("Endpoint")
        integration = apigateway.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)

        public_reason = (
            "SPEC: GET /v1/health (liveness), /openapi.json and /docs (the API's description) are served "
            "without authentication; they return no owner data."
        )
        for path in PUBLIC_PATHS:
            method = self._resource(path).add_method(
                "GET", integration, authorization_type=apigateway.AuthorizationType.NONE
            )
            NagSuppressions.add_resource_suppressions(
                method,
                [
                    NagPackSuppression(id="AwsSolutions-APIG4", reason=public_reason),
                    NagPackSuppression(id="AwsSolutions-COG4", reason=public_reason),
                ],
            )

        if api_key_mode:
            protected = self._resource(PROTECTED_PATH).add_method(
                "ANY",
                integration,
                authorization_type=apigateway.AuthorizationType.NONE,
                api_key_required=True,
            )
            key_reason = (
                "api_auth=api_key: API Gateway requires a key of the usage plan on every call; the key's "
                "id is the owner of the caller's jobs."
            )
            NagSuppressions.add_resource_suppressions(
                protected,
                [
                    NagPackSuppression(id="AwsSolutions-APIG4", reason=key_reason),
                    NagPackSuppression(id="AwsSolutions-COG4", reason=key_reason),
                ],
            )
            self.api_keys = self._usage_plan(config)
        else:
            protected = self._resource(PROTECTED_PATH).add_method(
                "ANY", integration, authorization_type=apigateway.AuthorizationType.IAM
            )
            NagSuppressions.add_resource_suppressions(
                protected,
                [
                    NagPackSuppression(
                        id="AwsSolutions-COG4",
                        reason="Callers are services and people with AWS credentials: IAM (SigV4) "
                        "authenticates them and the IAM principal is the owner of their jobs.",
                    )
                ],
            )
            self.api_keys = []

        NagSuppressions.add_resource_suppressions(
            self.rest_api,
            [
                NagPackSuppression(
                    id="AwsSolutions-APIG2",
                    reason="The api function validates every request against its typed models and answers "
                    "400/422 naming the field and the reason (SPEC); a gateway validator would answer with "
                    "a generic message first.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-APIG3",
                    reason="Every route but health and docs is authenticated and the stage is throttled; "
                    "a WAF web ACL is an account-level choice (and cost) left to the operator.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM4",
                    reason="API Gateway's account-wide CloudWatch role uses AWS's managed policy "
                    "AmazonAPIGatewayPushToCloudWatchLogs, the documented way to let API Gateway write "
                    "access and execution logs.",
                    applies_to=[
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                        "AmazonAPIGatewayPushToCloudWatchLogs"
                    ],
                ),
            ],
            apply_to_children=True,
        )

    def _resource(self, path: str) -> apigateway.Resource:
        return self.rest_api.root.resource_for_path(path)

    def _usage_plan(self, config: DeploymentConfig) -> list[apigateway.IApiKey]:
        plan = self.rest_api.add_usage_plan(
            "UsagePlan",
            name=config.name_prefix,
            description="Punctual API keys: per-key throttling (and a daily quota when configured)",
            throttle=apigateway.ThrottleSettings(
                rate_limit=config.api_throttle_rate_limit, burst_limit=config.api_throttle_burst_limit
            ),
            quota=apigateway.QuotaSettings(limit=config.api_quota_per_day, period=apigateway.Period.DAY)
            if config.api_quota_per_day
            else None,
        )
        plan.add_api_stage(stage=self.rest_api.deployment_stage)
        keys: list[apigateway.IApiKey] = []
        for name in config.api_key_names:
            key = self.rest_api.add_api_key(f"ApiKey-{name}", api_key_name=f"{config.name_prefix}-{name}")
            plan.add_api_key(key)
            keys.append(key)
        return keys

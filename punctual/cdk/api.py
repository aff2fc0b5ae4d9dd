"""The API: an HTTP API with IAM (SigV4) on every route but health and docs, or, with API keys and a
usage plan, a REST API (HTTP APIs have no API keys).

Why two: an HTTP API costs $1.00 per million requests against a REST API's $3.50, the largest
line of a job created one per request (docs/benchmarks.md), and it carries the IAM caller to the
function as well. It has no API keys, usage plans or X-Ray tracing at the gateway: a deployment that
wants keys keeps the REST API, and the functions trace themselves either way.
"""

from __future__ import annotations

import json
from typing import Final

import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.log_groups import log_group

# Served without authentication: liveness, the OpenAPI document and Swagger UI (its page, and
# its script and style under /docs/).
PUBLIC_PATHS: Final = ("/v1/health", "/openapi.json", "/docs", "/docs/{asset}")
# Everything else under /v1 goes to the api function behind the chosen authentication.
PROTECTED_PATH: Final = "/v1/{proxy+}"
# An HTTP API's access log line (its own $context variables; JSON, one object a request).
HTTP_ACCESS_LOG_FORMAT: Final = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "user": "$context.identity.userArn",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
}


@jsii.implements(apigatewayv2.IAccessLogSettings)
class _AccessLogSettings:
    def __init__(self, destination: apigatewayv2.IAccessLogDestination, format: apigateway.AccessLogFormat):
        self._destination = destination
        self._format = format

    @property
    def destination(self) -> apigatewayv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return self._format


class Api(Construct):
    """``url``: the base URL (paths are ``v1/...`` under it); ``gateway``: the API, for its metrics;
    ``api_keys``: the keys of the usage plan (API-key mode only)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SchedulerProps,
        handler: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = log_group(self, "AccessLogs", config)

        self.api_keys: list[apigateway.IApiKey] = []
        self.gateway: apigateway.RestApi | apigatewayv2.HttpApi
        self.http_api: apigatewayv2.HttpApi | None = None  # IAM mode's
        if config.api_auth == "api_key":
            self.gateway = self.rest_api = self._rest_api(config, handler)
            self.url = self.rest_api.url
            self.api_keys = self._usage_plan(config)
        else:
            self.gateway = self._http_api(config, handler)
            self.http_api = self.gateway
            self.url = self.http_stage.url

    # ------------------------------------------------------------------------------ HTTP API (IAM)

    def _http_api(self, config: SchedulerProps, handler: lambda_.IFunction) -> apigatewayv2.HttpApi:
        """An HTTP API on its ``$default`` stage (no stage in the URL), payload 2.0, which puts the
        IAM caller under ``requestContext.authorizer.iam``."""
        api = apigatewayv2.HttpApi(
            self,
            "HttpApi",
            api_name=config.name_prefix,
            description="Punctual: schedule jobs that fire at their second",
            create_default_stage=False,
        )
        self.http_stage = apigatewayv2.HttpStage(
            self,
            "Stage",
            http_api=api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigatewayv2.ThrottleSettings(
                rate_limit=config.api_throttle_rate_limit, burst_limit=config.api_throttle_burst_limit
            ),
            access_log_settings=_AccessLogSettings(
                apigatewayv2.LogGroupLogDestination(self.access_logs),
                apigateway.AccessLogFormat.custom(json.dumps(HTTP_ACCESS_LOG_FORMAT)),
            ),
        )
        integration = integrations.HttpLambdaIntegration(
            "ApiFunction", handler, payload_format_version=apigatewayv2.PayloadFormatVersion.VERSION_2_0
        )
        public_reason = (
            "GET /v1/health (liveness), /openapi.json and /docs (the API's description) are served "
            "without authentication; they return no owner data."
        )
        for path in PUBLIC_PATHS:
            for route in api.add_routes(
                path=path, methods=[apigatewayv2.HttpMethod.GET], integration=integration
            ):
                NagSuppressions.add_resource_suppressions(
                    route,
                    [NagPackSuppression(id="AwsSolutions-APIG4", reason=public_reason)],
                    apply_to_children=True,
                )
        api.add_routes(
            path=PROTECTED_PATH,
            methods=[apigatewayv2.HttpMethod.ANY],
            integration=integration,
            authorizer=authorizers.HttpIamAuthorizer(),
        )
        return api

    # ---------------------------------------------------------------------- REST API (API keys)

    def _rest_api(self, config: SchedulerProps, handler: lambda_.IFunction) -> apigateway.RestApi:
        """A REST API whose routes need a key of the usage plan (API Gateway checks it)."""
        rest_api = apigateway.RestApi(
            self,
            "RestApi",
            rest_api_name=config.name_prefix,
            description="Punctual: schedule jobs that fire at their second",
            endpoint_types=[apigateway.EndpointType.REGIONAL],
            # Only if asked to ("always"): the default sets it where the account has none
            # (punctual/cdk/api_account.py, made by the Scheduler).
            cloud_watch_role=config.api_gateway_cloudwatch_role == "always",
            api_key_source_type=apigateway.ApiKeySourceType.HEADER,
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
                metrics_enabled=config.api_detailed_metrics,  # billed per method: only if asked
                tracing_enabled=True,
            ),
        )
        # The stack exports the URL itself, as ApiUrl.
        rest_api.node.try_remove_child("Endpoint")
        integration = apigateway.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)

        public_reason = (
            "GET /v1/health (liveness), /openapi.json and /docs (the API's description) are served "
            "without authentication; they return no owner data."
        )
        for path in PUBLIC_PATHS:
            method = rest_api.root.resource_for_path(path).add_method(
                "GET", integration, authorization_type=apigateway.AuthorizationType.NONE
            )
            NagSuppressions.add_resource_suppressions(
                method,
                [
                    NagPackSuppression(id="AwsSolutions-APIG4", reason=public_reason),
                    NagPackSuppression(id="AwsSolutions-COG4", reason=public_reason),
                ],
            )
        protected = rest_api.root.resource_for_path(PROTECTED_PATH).add_method(
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
        NagSuppressions.add_resource_suppressions(
            rest_api,
            [
                NagPackSuppression(
                    id="AwsSolutions-APIG2",
                    reason="The api function validates every request against its typed models and answers "
                    "400/422 naming the field and the reason (docs/api.md); a gateway validator would answer "
                    "with a generic message first.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-APIG3",
                    reason="Every route but health and docs needs a key and the stage is throttled; "
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
        return rest_api

    def _usage_plan(self, config: SchedulerProps) -> list[apigateway.IApiKey]:
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

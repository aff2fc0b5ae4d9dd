"""The API: an HTTP API with IAM by default, the REST API with API keys; who may call which route,
throttling, access logs, the URL output."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import PRODUCTION_CONTEXT, Synthesized

pytestmark = pytest.mark.xdist_group("infrastructure")

PUBLIC = {"/v1/health", "/openapi.json", "/docs", "/docs/{asset}"}


def _paths(synthesized: Synthesized) -> dict[str, str]:
    """Logical id of each REST API resource → its full path."""
    resources = synthesized.resources("AWS::ApiGateway::Resource")
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in paths:
            properties = resources[logical_id]["Properties"]
            parent = properties["ParentId"]
            prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
            paths[logical_id] = f"{prefix}/{properties['PathPart']}"
        return paths[logical_id]

    for logical_id in resources:
        path_of(logical_id)
    return paths


def _methods(synthesized: Synthesized) -> dict[tuple[str, str], dict[str, Any]]:
    """(path, HTTP method) → REST method properties."""
    paths = _paths(synthesized)
    return {
        (paths[method["Properties"]["ResourceId"]["Ref"]], method["Properties"]["HttpMethod"]): method[
            "Properties"
        ]
        for method in synthesized.resources("AWS::ApiGateway::Method").values()
    }


def _routes(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """HTTP API route key ("GET /v1/health") → route properties."""
    return {
        route["Properties"]["RouteKey"]: route["Properties"]
        for route in synthesized.resources("AWS::ApiGatewayV2::Route").values()
    }


def _log_group_of(synthesized: Synthesized, destination: Any) -> list[str]:
    return [
        logical_id
        for logical_id in synthesized.resources("AWS::Logs::LogGroup")
        if logical_id in str(destination)
    ]


# ------------------------------------------------------------------------- IAM mode: an HTTP API


def test_given_iam_mode_when_synthesized_then_an_http_api_requires_sigv4_on_every_route_but_health_and_docs(
    default_stack: Synthesized,
) -> None:
    routes = _routes(default_stack)

    assert set(routes) == {f"GET {path}" for path in PUBLIC} | {"ANY /v1/{proxy+}"}
    assert routes["ANY /v1/{proxy+}"]["AuthorizationType"] == "AWS_IAM"
    for path in PUBLIC:
        assert routes[f"GET {path}"].get("AuthorizationType", "NONE") == "NONE", path
    (integration,) = default_stack.resources("AWS::ApiGatewayV2::Integration").values()
    properties = integration["Properties"]
    assert properties["IntegrationType"] == "AWS_PROXY"
    assert properties["PayloadFormatVersion"] == "2.0", "the function reads the IAM caller from payload 2.0"
    assert default_stack.logical_id_of_function("api") in str(properties["IntegrationUri"])
    integration_id = next(iter(default_stack.resources("AWS::ApiGatewayV2::Integration")))
    for key, route in routes.items():
        assert integration_id in str(route["Target"]), key
    assert not default_stack.resources("AWS::ApiGateway::RestApi"), "no REST API: it costs 3.5x per request"
    assert not default_stack.resources("AWS::ApiGateway::Account"), "HTTP API logs need no account role"


def test_given_iam_mode_when_synthesized_then_the_default_stage_is_throttled_and_writes_access_logs(
    default_stack: Synthesized,
) -> None:
    stage = default_stack.only("AWS::ApiGatewayV2::Stage")["Properties"]

    assert stage["StageName"] == "$default" and stage["AutoDeploy"] is True
    assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == 50
    assert stage["DefaultRouteSettings"]["ThrottlingBurstLimit"] == 100
    assert len(_log_group_of(default_stack, stage["AccessLogSettings"]["DestinationArn"])) == 1
    log_format = stage["AccessLogSettings"]["Format"]
    assert "$context.requestId" in log_format and "$context.identity.userArn" in log_format


def test_given_iam_mode_when_synthesized_then_the_api_url_is_the_http_apis_root(
    default_stack: Synthesized,
) -> None:
    outputs = default_stack.raw["Outputs"]
    url = str(outputs["ApiUrl"]["Value"])
    assert "execute-api" in url
    assert default_stack.logical_id("AWS::ApiGatewayV2::Api") in url
    assert {"TableName", "WorkQueueUrl", "DeadLetterQueueUrl"} <= set(outputs)


# --------------------------------------------------------------------- API-key mode: the REST API


def test_given_api_key_mode_when_synthesized_then_the_routes_require_a_key_of_a_throttled_usage_plan(
    production_stack: Synthesized,
) -> None:
    methods = _methods(production_stack)
    assert set(methods) == {(path, "GET") for path in PUBLIC} | {("/v1/{proxy+}", "ANY")}
    protected = methods[("/v1/{proxy+}", "ANY")]
    assert protected["ApiKeyRequired"] is True
    for path in PUBLIC:
        assert not methods[(path, "GET")].get("ApiKeyRequired", False), path
    api_function = production_stack.logical_id_of_function("api")
    for method in methods.values():
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert api_function in str(method["Integration"]["Uri"])
    assert not production_stack.resources("AWS::ApiGatewayV2::Api")

    production_stack.template.has_resource_properties(
        "AWS::ApiGateway::UsagePlan",
        {
            "Throttle": {"RateLimit": 50, "BurstLimit": 100},
            "Quota": {"Limit": PRODUCTION_CONTEXT["api_quota_per_day"], "Period": "DAY"},
        },
    )
    keys = production_stack.resources("AWS::ApiGateway::ApiKey")
    assert sorted(key["Properties"]["Name"] for key in keys.values()) == [
        f"punctual-prod-{name}" for name in PRODUCTION_CONTEXT["api_key_names"]
    ]
    assert len(production_stack.resources("AWS::ApiGateway::UsagePlanKey")) == len(keys)
    assert production_stack.only("AWS::ApiGateway::RestApi")["Properties"]["ApiKeySourceType"] == "HEADER"


def test_given_api_key_mode_when_synthesized_then_the_stage_is_throttled_traced_and_writes_access_logs(
    production_stack: Synthesized,
) -> None:
    stage = production_stack.only("AWS::ApiGateway::Stage")["Properties"]
    (settings,) = stage["MethodSettings"]

    assert stage["StageName"] == "prod"
    assert stage["TracingEnabled"] is True
    assert settings["ThrottlingRateLimit"] == 50
    assert settings["ThrottlingBurstLimit"] == 100
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False, "job payloads must not land in execution logs"
    assert settings["MetricsEnabled"] is False, "per-method metrics are billed: only if asked"
    assert len(_log_group_of(production_stack, stage["AccessLogSetting"]["DestinationArn"])) == 1
    assert "$context.requestId" in stage["AccessLogSetting"]["Format"]
    # API Gateway needs the account's CloudWatch role before a REST API can write access logs: the
    # stack names its own only where the account names none, before the stage is made, and keeps it.
    assert not production_stack.resources("AWS::ApiGateway::Account"), "the account's role is not replaced"
    account = production_stack.logical_id("Custom::PunctualApiGatewayAccount")
    assert account in production_stack.only("AWS::ApiGateway::Stage")["DependsOn"]
    (role_id,) = [
        name
        for name, role in production_stack.resources("AWS::IAM::Role").items()
        if "apigateway.amazonaws.com" in str(role["Properties"]["AssumeRolePolicyDocument"])
    ]
    role = production_stack.raw["Resources"][role_id]
    assert role["DeletionPolicy"] == "Retain"
    assert production_stack.only("Custom::PunctualApiGatewayAccount")["Properties"]["RoleArn"] == {
        "Fn::GetAtt": [role_id, "Arn"]
    }
    url = str(production_stack.raw["Outputs"]["ApiUrl"]["Value"])
    assert production_stack.logical_id("AWS::ApiGateway::RestApi") in url


@pytest.mark.parametrize(
    ("choice", "account_resource", "custom_resource"),
    [("always", 1, 0), ("never", 0, 0), ("if_absent", 0, 1), (True, 1, 0), ("false", 0, 0)],
)
def test_given_each_choice_of_the_account_role_when_synthesized_then_the_stack_sets_it_as_told(
    choice: object, account_resource: int, custom_resource: int
) -> None:
    from aws_cdk import App, Stack
    from aws_cdk.assertions import Template

    from punctual.cdk import LambdaAssets, Scheduler, SchedulerProps

    stack = Stack(App(), "Keyed")
    props = SchedulerProps(api_auth="api_key", api_gateway_cloudwatch_role=choice)  # type: ignore[arg-type]
    Scheduler(stack, "Punctual", props=props, assets=LambdaAssets.build())
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApiGateway::Account", account_resource)
    template.resource_count_is("Custom::PunctualApiGatewayAccount", custom_resource)

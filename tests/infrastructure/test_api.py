"""The REST API: who may call which route, throttling, access logs, the URL output."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import PRODUCTION_CONTEXT, Synthesized

pytestmark = pytest.mark.xdist_group("infrastructure")

PUBLIC = {"/v1/health", "/openapi.json", "/docs", "/docs/{asset}"}


def _paths(synthesized: Synthesized) -> dict[str, str]:
    """Logical id of each API resource → its full path."""
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
    """(path, HTTP method) → method properties."""
    paths = _paths(synthesized)
    return {
        (paths[method["Properties"]["ResourceId"]["Ref"]], method["Properties"]["HttpMethod"]): method[
            "Properties"
        ]
        for method in synthesized.resources("AWS::ApiGateway::Method").values()
    }


def test_given_iam_mode_when_synthesized_then_every_route_but_health_and_docs_requires_sigv4(
    default_stack: Synthesized,
) -> None:
    methods = _methods(default_stack)

    assert set(methods) == {(path, "GET") for path in PUBLIC} | {("/v1/{proxy+}", "ANY")}
    assert methods[("/v1/{proxy+}", "ANY")]["AuthorizationType"] == "AWS_IAM"
    for path in PUBLIC:
        assert methods[(path, "GET")]["AuthorizationType"] == "NONE", path
    api_function = default_stack.logical_id_of_function("api")
    for method in methods.values():
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert api_function in str(method["Integration"]["Uri"])
        assert not method.get("ApiKeyRequired", False)
    assert not default_stack.resources("AWS::ApiGateway::UsagePlan")


def test_given_api_key_mode_when_synthesized_then_the_routes_require_a_key_of_a_throttled_usage_plan(
    production_stack: Synthesized,
) -> None:
    methods = _methods(production_stack)
    protected = methods[("/v1/{proxy+}", "ANY")]
    assert protected["ApiKeyRequired"] is True
    for path in PUBLIC:
        assert not methods[(path, "GET")].get("ApiKeyRequired", False), path

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


def test_given_the_stage_when_synthesized_then_it_is_throttled_traced_and_writes_access_logs(
    default_stack: Synthesized,
) -> None:
    stage = default_stack.only("AWS::ApiGateway::Stage")["Properties"]
    (settings,) = stage["MethodSettings"]

    assert stage["StageName"] == "dev"
    assert stage["TracingEnabled"] is True
    assert settings["ThrottlingRateLimit"] == 50
    assert settings["ThrottlingBurstLimit"] == 100
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False, "job payloads must not land in execution logs"
    destination = str(stage["AccessLogSetting"]["DestinationArn"])
    log_group_ids = [
        logical_id
        for logical_id in default_stack.resources("AWS::Logs::LogGroup")
        if logical_id in destination
    ]
    assert len(log_group_ids) == 1, "access logs go to a log group of the stack"
    assert "$context.requestId" in stage["AccessLogSetting"]["Format"]
    # API Gateway needs the account's CloudWatch role before it can write access logs.
    assert default_stack.resources("AWS::ApiGateway::Account")


def test_given_a_deployment_when_synthesized_then_the_api_url_is_a_stack_output(
    default_stack: Synthesized,
) -> None:
    outputs = default_stack.raw["Outputs"]
    url = str(outputs["ApiUrl"]["Value"])
    assert "execute-api" in url
    assert default_stack.logical_id("AWS::ApiGateway::RestApi") in url
    assert {"TableName", "WorkQueueUrl", "DeadLetterQueueUrl"} <= set(outputs)

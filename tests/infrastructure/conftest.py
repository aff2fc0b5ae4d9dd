"""Synthesizes the CDK app once per configuration and session, the way ``cdk synth`` does.

The default configuration is exactly the context in ``cdk.json``; the production one adds what an
operator would set for a real account (prod stage, API keys, allowed targets and their keys, an
alarm topic).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Before aws_cdk starts its Node process: Node 20 works, but jsii prints an end-of-life banner.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

REPO_ROOT = Path(__file__).resolve().parents[2]

PRODUCTION_TARGETS = (
    "arn:aws:lambda:eu-west-1:123456789012:function:reports-*",
    "arn:aws:sqs:eu-west-1:123456789012:orders",
    "arn:aws:sns:eu-west-1:123456789012:alerts",
    "arn:aws:events:eu-west-1:123456789012:event-bus/default",
)
# Customer-managed keys of encrypted targets (an SNS topic, an SQS queue).
PRODUCTION_TARGET_KEYS = (
    "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "arn:aws:kms:eu-west-1:123456789012:key/mrk-0123456789abcdef0123456789abcdef",
)
PRODUCTION_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "shard_count": 32,
    "lookahead_seconds": 180,
    "min_interval_seconds": 30,
    "run_retention_days": 90,
    "run_trace_percent": 100,
    "http_allow_list": ["10.20.0.0/16", "hooks.internal.example"],
    "allowed_target_arns": list(PRODUCTION_TARGETS),
    "target_kms_key_arns": list(PRODUCTION_TARGET_KEYS),
    "api_auth": "api_key",
    "api_key_names": ["team-a", "team-b"],
    "api_quota_per_day": 100000,
    "owner_mode": "session",
    "alarm_topic_arn": "arn:aws:sns:eu-west-1:123456789012:oncall",
}


@dataclass(frozen=True)
class Synthesized:
    """One synthesized stack: the assertions view, the raw template and the cloud assembly on disk."""

    stack: Any  # infra.stack.PunctualStack
    template: Any  # aws_cdk.assertions.Template
    raw: dict[str, Any]
    assembly_dir: Path

    @property
    def template_path(self) -> Path:
        return self.assembly_dir / str(self.stack.template_file)

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return resources_of(self.raw, resource_type)

    def logical_id(self, resource_type: str) -> str:
        found = self.resources(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
        return next(iter(found))

    def only(self, resource_type: str) -> dict[str, Any]:
        resource: dict[str, Any] = self.raw["Resources"][self.logical_id(resource_type)]
        return resource

    def function(self, role: str) -> dict[str, Any]:
        """The Lambda function of a role (api, dispatcher, worker), found by its name."""
        name = f"{self.stack.stack_name}-{role}"
        for resource in self.resources("AWS::Lambda::Function").values():
            if resource["Properties"].get("FunctionName") == name:
                return resource
        raise AssertionError(f"no function named {name}")

    def logical_id_of_function(self, role: str) -> str:
        wanted = self.function(role)
        return next(str(key) for key, value in self.raw["Resources"].items() if value is wanted)


def resources_of(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """A synthesized template's resources of one type, by logical id."""
    return {name: value for name, value in template["Resources"].items() if value["Type"] == resource_type}


def logical_id_of(template: dict[str, Any], resource_type: str, prefix: str) -> str:
    """The logical id of the one resource of that type whose id starts with ``prefix``."""
    (name,) = [name for name in resources_of(template, resource_type) if name.startswith(prefix)]
    return str(name)


def policy_statements(template: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Every statement of the IAM policies whose logical id starts with ``prefix``."""
    return [
        statement
        for name, policy in resources_of(template, "AWS::IAM::Policy").items()
        if name.startswith(prefix)
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def target_grants(template: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The worker's grants on job targets: the statements of each of its managed policies, by logical id."""
    return {
        name: policy["Properties"]["PolicyDocument"]["Statement"]
        for name, policy in resources_of(template, "AWS::IAM::ManagedPolicy").items()
        if "TargetGrants" in name
    }


def deployment_item(template: dict[str, Any], sk: str) -> tuple[dict[str, Any], list[Any]]:
    """The item of the ``DEPLOYMENT`` partition the deploy writes under ``sk`` (a custom resource's
    PutItem), its tokens (what the template knows only at deploy time) as ``@<n>@`` in its strings,
    and the tokens."""
    for writer in resources_of(template, "Custom::AWS").values():
        create = writer["Properties"]["Create"]
        parts = create["Fn::Join"][1] if isinstance(create, dict) else [create]
        tokens: list[Any] = []
        text = ""
        for part in parts:
            if isinstance(part, str):
                text += part
            else:
                text += f"@{len(tokens)}@"
                tokens.append(part)
        call = json.loads(text)
        item = call["parameters"]["Item"]
        if item["sk"] == {"S": sk}:
            assert call["action"] == "putItem" and call["service"] == "DynamoDB"
            assert item["pk"] == {"S": "DEPLOYMENT"}
            return item, tokens
    raise AssertionError(f"no custom resource writes the {sk} item")


def _detokenized(text: str, tokens: list[Any]) -> Any:
    return tokens[int(text[1:-1])] if re.fullmatch(r"@\d+@", text) else text


def allowed_target_patterns(template: dict[str, Any]) -> list[Any]:
    """The allow-list the deploy writes into the table (the custom resource's PutItem): each pattern
    a string, or the template's expression of an ARN known at deploy time."""
    item, tokens = deployment_item(template, "ALLOWED_TARGETS")
    joined = item["patterns"]["S"]
    return [_detokenized(part, tokens) for part in (joined.split(",") if joined else [])]


def delivery_rights_written(template: dict[str, Any]) -> dict[str, Any]:
    """The delivery rights the deploy writes into the table, each owner and target a string or the
    template's expression of what is known at deploy time (a role's name, a function's ARN)."""
    item, tokens = deployment_item(template, "DELIVERY_RIGHTS")
    value = json.loads(item["rights"]["S"])

    def resolved(text: str) -> Any:
        pieces = [piece for piece in re.split(r"(@\d+@)", text) if piece]
        named = [_detokenized(piece, tokens) for piece in pieces]
        return named[0] if len(named) == 1 else named

    for right in value["rights"]:
        for key in ("owners", "targets", "hosts"):
            right[key] = [resolved(text) for text in right.get(key, [])]
    return dict(value)


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return context


def synthesize(overrides: dict[str, Any] | None = None) -> Synthesized:
    from aws_cdk.assertions import Template

    from infra.app import build_app
    from punctual.cdk.assets import build_dependency_layer, build_exchange_layer

    build_dependency_layer()  # cached: a no-op when `make infra-setup` already built it
    build_exchange_layer()
    app, stack = build_app({**cdk_json_context(), **(overrides or {})})
    assembly = app.synth()
    template = Template.from_stack(stack)
    return Synthesized(stack, template, dict(template.to_json()), Path(assembly.directory))


@pytest.fixture(scope="session")
def default_stack() -> Synthesized:
    return synthesize()


@pytest.fixture(scope="session")
def production_stack() -> Synthesized:
    return synthesize(PRODUCTION_CONTEXT)

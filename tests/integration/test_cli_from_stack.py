"""`punctual config from-stack` against a stack in moto's CloudFormation (and API Gateway's keys)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws

from punctual.cli import main
from punctual.client import Config

pytestmark = pytest.mark.moto  # in-process moto: left out by make test-fast

DEPLOYED = "https://abc.execute-api.us-east-1.amazonaws.com/prod"


# -------------------------------------------------------------------------- config from-stack


TEMPLATE_QUEUE = {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "punctual-test"}}}


def _stack(name: str, outputs: dict[str, Any]) -> None:
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": TEMPLATE_QUEUE, "Outputs": outputs}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName=name, TemplateBody=json.dumps(template)
    )


@pytest.fixture
def aws(config_file: Path) -> Iterator[None]:
    with mock_aws():
        yield


def test_from_stack_saves_the_api_url_with_sigv4(aws: None, config_file: Path) -> None:
    _stack("Punctual", {"ApiUrl": {"Value": DEPLOYED + "/"}, "TableName": {"Value": "punctual"}})
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1"])
    assert result.exit_code == 0, result.output
    assert json.loads(config_file.read_text()) == {
        "endpoint": DEPLOYED,
        "auth": "sigv4",
        "region": "us-east-1",
    }
    assert "saved to" in result.stdout and str(config_file) in result.stdout
    # and the other commands now use it
    assert Config.load(None, None) == Config(endpoint=DEPLOYED, token=None, auth="sigv4", region="us-east-1")


def test_from_stack_with_a_role_saves_it_for_the_other_commands(aws: None, config_file: Path) -> None:
    role = "arn:aws:iam::123456789012:role/jobs-owner"
    _stack("Punctual", {"ApiUrl": {"Value": DEPLOYED + "/"}})
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1", "--role-arn", role])
    assert result.exit_code == 0, result.output
    assert json.loads(config_file.read_text())["role_arn"] == role
    assert f"(SigV4, as role {role}, region us-east-1) saved to" in result.stdout
    assert Config.load(None, None).role_arn == role


def test_from_stack_refuses_a_role_for_api_key_mode_or_that_is_not_a_role(
    aws: None, config_file: Path
) -> None:
    key_id, _ = _api_key("punctual-prod-default")
    _stack("punctual-prod", {"ApiUrl": {"Value": DEPLOYED + "/"}, "ApiKeyId0": {"Value": key_id}})
    role = "arn:aws:iam::123456789012:role/jobs-owner"
    keyed = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1", "--role-arn", role])
    assert keyed.exit_code == 2 and "--role-arn does not apply" in keyed.stderr
    wrong = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1", "--role-arn", "owner"])
    assert wrong.exit_code == 2 and "not an IAM role ARN" in wrong.stderr
    assert not config_file.exists()


def _api_key(name: str) -> tuple[str, str]:
    """An API key in moto's API Gateway: (id, value)."""
    key = boto3.client("apigateway", region_name="us-east-1").create_api_key(name=name, enabled=True)
    return key["id"], key["value"]


def test_from_stack_in_api_key_mode_saves_the_keys_value(aws: None, config_file: Path) -> None:
    # Given a stack deployed with api_auth=api_key: its ApiKeyId output names the key (infra/stack.py)
    key_id, value = _api_key("punctual-prod-default")
    _stack("punctual-prod", {"ApiUrl": {"Value": DEPLOYED + "/"}, "ApiKeyId0": {"Value": key_id}})
    # When the CLI is configured from it
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1"])
    # Then it saved API-key mode with the key's value, read from API Gateway, and never printed it
    assert result.exit_code == 0, result.output
    assert json.loads(config_file.read_text()) == {
        "endpoint": DEPLOYED,
        "auth": "api_key",
        "region": "us-east-1",
        "api_key": value,
    }
    assert config_file.stat().st_mode & 0o777 == 0o600
    assert value not in result.output
    assert f"(API key punctual-prod-default, id {key_id}, region us-east-1) saved to" in result.stdout
    assert Config.load(None, None) == Config(
        endpoint=DEPLOYED, token=None, auth="api_key", region="us-east-1", api_key=value
    )


def test_from_stack_with_several_api_keys_needs_key(aws: None, config_file: Path) -> None:
    first, _ = _api_key("punctual-prod-default")
    second, value = _api_key("punctual-prod-ci")
    _stack(
        "punctual-prod",
        {
            "ApiUrl": {"Value": DEPLOYED + "/"},
            "ApiKeyId0": {"Value": first},
            "ApiKeyId1": {"Value": second},
        },
    )
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: stack punctual-prod has several API keys: punctual-prod-default ({first}),"
        f" punctual-prod-ci ({second}); choose one with --key\n"
    )
    assert not config_file.exists()
    for choice in ("ci", "punctual-prod-ci", second):
        config_file.unlink(missing_ok=True)
        result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1", "--key", choice])
        assert result.exit_code == 0, result.output
        assert json.loads(config_file.read_text())["api_key"] == value
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1", "--key", "nope"])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: no API key 'nope' in stack punctual-prod")


def test_from_stack_with_a_key_that_cannot_be_read_exits_3(aws: None, config_file: Path) -> None:
    _stack("punctual-prod", {"ApiUrl": {"Value": DEPLOYED + "/"}, "ApiKeyId0": {"Value": "gone123"}})
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1"])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: cannot read API key gone123 of stack punctual-prod:")
    assert not config_file.exists()


def test_from_stack_finds_the_stack_make_deploy_creates_by_default(aws: None, config_file: Path) -> None:
    _stack("punctual-dev", {"ApiUrl": {"Value": DEPLOYED + "/"}})
    result = CliRunner().invoke(main, ["config", "from-stack", "--region", "us-east-1"])
    assert result.exit_code == 0, result.output
    assert json.loads(config_file.read_text())["endpoint"] == DEPLOYED


def test_from_stack_accepts_an_output_key_with_a_cdk_suffix(aws: None, config_file: Path) -> None:
    _stack("Other", {"ApiUrlE5F3A9": {"Value": DEPLOYED + "/"}})
    result = CliRunner().invoke(
        main, ["config", "from-stack", "--stack-name", "Other", "--region", "us-east-1"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(config_file.read_text())["endpoint"] == DEPLOYED


def test_from_stack_without_the_output_exits_3_naming_the_outputs(aws: None, config_file: Path) -> None:
    _stack("NoApi", {"TableName": {"Value": "punctual"}})
    result = CliRunner().invoke(
        main, ["config", "from-stack", "--stack-name", "NoApi", "--region", "us-east-1"]
    )
    assert result.exit_code == 3
    assert result.stderr == "error: stack NoApi has no output ApiUrl (outputs: TableName)\n"
    assert not config_file.exists()


def test_from_stack_with_a_missing_stack_exits_3(aws: None, config_file: Path) -> None:
    result = CliRunner().invoke(
        main, ["config", "from-stack", "--stack-name", "Nope", "--region", "us-east-1"]
    )
    assert result.exit_code == 3, result.output


def test_from_stack_when_cloudformation_cannot_be_read_is_one_line(aws: None, config_file: Path) -> None:
    result = CliRunner().invoke(
        main, ["config", "from-stack", "--stack-name", "Nope", "--region", "us-east-1"]
    )
    assert result.exit_code != 0
    assert result.stderr.startswith("error: cannot read stack Nope:")
    assert len(result.stderr.splitlines()) == 1
    assert not config_file.exists()

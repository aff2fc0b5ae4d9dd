"""``punctual config``: where the CLI sends requests (save a deployed stack's URL, show the resolved one)."""

from __future__ import annotations

import sys
from typing import Any

import click

from punctual.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    api_key_option,
    main,
    role_arn_option,
)
from punctual.cli.stack import StackOutputs, read_stack
from punctual.client import Config, ConfigError, check_role_arn, masked
from punctual.output import fields

# The stack's outputs naming its API keys (infra/stack.py): there only in API-key mode.
API_KEY_OUTPUT_PREFIX = "ApiKeyId"


@main.group()
def config() -> None:
    """Where the CLI sends requests."""


@config.command("from-stack")
@click.option("--stack-name", default=None, help="Default: the one deployed stack named punctual-<stage>.")
@click.option("--region", default=None)
@click.option("--output-key", default="ApiUrl", show_default=True)
@click.option(
    "--key",
    "key_choice",
    default=None,
    help="API-key mode with several keys: which one, by its name (as in api_key_names) or id.",
)
@click.option(
    "--role-arn",
    default=None,
    help="Save this IAM role for SigV4: later commands assume it and act on the jobs it owns.",
)
def config_from_stack(
    stack_name: str | None,
    region: str | None,
    output_key: str,
    key_choice: str | None,
    role_arn: str | None,
) -> None:
    """Read the deployed API URL from the CloudFormation stack outputs and save it, with how to
    authenticate: SigV4 (as --role-arn, when given), or in API-key mode (ApiKeyId outputs) the key's
    value, read from API Gateway."""
    if role_arn is not None:
        try:
            check_role_arn(role_arn)
        except ConfigError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_USAGE)
    stack = read_stack(stack_name, region, output_key)
    url = stack.require(output_key).rstrip("/")
    key_ids = [key_id for _, key_id in stack.with_prefix(API_KEY_OUTPUT_PREFIX)]
    if not key_ids:
        saved = Config(endpoint=url, auth="sigv4", region=stack.region, role_arn=role_arn).save()
        role = f", as role {role_arn}" if role_arn else ""
        click.echo(f"endpoint {url} of {stack.name} (SigV4{role}, region {stack.region}) saved to {saved}")
        return
    if role_arn is not None:
        click.echo(
            f"error: stack {stack.name} is in API-key mode (nothing is signed): --role-arn does not apply",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    key = _api_key(stack, key_ids, key_choice)
    saved = Config(endpoint=url, auth="api_key", region=stack.region, api_key=key["value"]).save()
    disabled = "" if key.get("enabled", True) else "; the key is disabled: enable it in API Gateway"
    click.echo(
        f"endpoint {url} of {stack.name} (API key {key.get('name') or key['id']}, id {key['id']},"
        f" region {stack.region}{disabled}) saved to {saved}"
    )


def _api_key(stack: StackOutputs, key_ids: list[str], choice: str | None) -> dict[str, Any]:
    """The chosen key of the stack with its value (``get_api_key`` with ``includeValue``)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.session.Session(region_name=stack.region).client("apigateway")

    def read(key_id: str, with_value: bool) -> dict[str, Any]:
        try:
            return dict(client.get_api_key(apiKey=key_id, includeValue=with_value))
        except ClientError as error:
            missing = error.response.get("Error", {}).get("Code") == "NotFoundException"
            click.echo(f"error: cannot read API key {key_id} of stack {stack.name}: {error}", err=True)
            sys.exit(EXIT_NOT_FOUND if missing else EXIT_UNAVAILABLE)
        except BotoCoreError as error:
            click.echo(f"error: cannot read API key {key_id} of stack {stack.name}: {error}", err=True)
            sys.exit(EXIT_UNAVAILABLE)

    if choice is None and len(key_ids) == 1:
        return read(key_ids[0], True)
    if choice in key_ids:
        return read(choice, True)
    keys = [read(key_id, False) for key_id in key_ids]
    listed = ", ".join(f"{key.get('name')} ({key['id']})" for key in keys)
    if choice is None:
        click.echo(
            f"error: stack {stack.name} has several API keys: {listed}; choose one with --key", err=True
        )
        sys.exit(EXIT_USAGE)
    chosen = [key for key in keys if key.get("name") == choice or str(key.get("name")).endswith(f"-{choice}")]
    if len(chosen) != 1:
        click.echo(f"error: no API key {choice!r} in stack {stack.name} (keys: {listed})", err=True)
        sys.exit(EXIT_NOT_FOUND)
    return read(chosen[0]["id"], True)


@config.command("show")
@click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT")
@click.option("--token", envvar="PUNCTUAL_TOKEN")
@api_key_option
@role_arn_option
def config_show(endpoint: str | None, token: str | None, api_key: str | None, role_arn: str | None) -> None:
    """The endpoint and authentication the other commands would use (an API key only by its end)."""
    try:
        resolved = Config.load(endpoint, token, api_key=api_key, role_arn=role_arn)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)
    shown = [("endpoint", resolved.endpoint), ("auth", resolved.auth), ("region", resolved.region)]
    if resolved.role_arn:
        shown.append(("role", resolved.role_arn))
    if resolved.api_key:
        shown.append(("api key", masked(resolved.api_key)))
    click.echo(fields(shown))

"""``punctual config``: where the CLI sends requests (save a deployed stack's URL, show the resolved one)."""

from __future__ import annotations

import sys

import click

from punctual.cli.common import EXIT_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_USAGE, main
from punctual.client import Config, ConfigError
from punctual.output import fields


@main.group()
def config() -> None:
    """Where the CLI sends requests."""


@config.command("from-stack")
@click.option("--stack-name", default=None, help="Default: the one deployed stack named punctual-<stage>.")
@click.option("--region", default=None)
@click.option("--output-key", default="ApiUrl", show_default=True)
def config_from_stack(stack_name: str | None, region: str | None, output_key: str) -> None:
    """Read the deployed API URL from the CloudFormation stack outputs and save it."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.session.Session(region_name=region)
    client = session.client("cloudformation")
    try:
        if stack_name is not None:
            stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
        else:
            stacks = [
                stack
                for page in client.get_paginator("describe_stacks").paginate()
                for stack in page["Stacks"]
                if stack["StackName"].lower().startswith("punctual")
                and any(o["OutputKey"].startswith(output_key) for o in stack.get("Outputs", []))
            ]
    except ClientError as error:
        missing = "does not exist" in str(error)
        click.echo(f"error: cannot read stack {stack_name}: {error}", err=True)
        sys.exit(EXIT_NOT_FOUND if missing else EXIT_UNAVAILABLE)
    except BotoCoreError as error:
        click.echo(f"error: cannot read CloudFormation stacks: {error}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    if not stacks:
        click.echo(
            "error: no Punctual stack found here; deploy one (make deploy) or pass --stack-name", err=True
        )
        sys.exit(EXIT_NOT_FOUND)
    if len(stacks) > 1:
        names = ", ".join(stack["StackName"] for stack in stacks)
        click.echo(f"error: several Punctual stacks ({names}); choose one with --stack-name", err=True)
        sys.exit(EXIT_USAGE)
    stack = stacks[0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    url = outputs.get(output_key) or next((v for k, v in outputs.items() if k.startswith(output_key)), None)
    if not url:
        click.echo(
            f"error: stack {stack['StackName']} has no output {output_key} (outputs: {', '.join(outputs)})",
            err=True,
        )
        sys.exit(EXIT_NOT_FOUND)
    saved = Config(endpoint=url.rstrip("/"), auth="sigv4", region=session.region_name).save()
    click.echo(
        f"endpoint {url} of {stack['StackName']} (SigV4, region {session.region_name}) saved to {saved}"
    )


@config.command("show")
@click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT")
@click.option("--token", envvar="PUNCTUAL_TOKEN")
def config_show(endpoint: str | None, token: str | None) -> None:
    """The endpoint and authentication the other commands would use."""
    try:
        resolved = Config.load(endpoint, token)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(
        fields([("endpoint", resolved.endpoint), ("auth", resolved.auth), ("region", resolved.region)])
    )

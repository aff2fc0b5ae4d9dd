"""A deployed stack's CloudFormation outputs, found as ``punctual config from-stack`` and ``punctual
dlq`` find them: the stack named, or else the one stack here whose name starts with ``punctual`` and
that has the wanted output. Errors are one line and an exit code (3 missing, 5 unreadable, 2 several).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click

from punctual.cli.common import EXIT_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_USAGE


@dataclass(frozen=True)
class StackOutputs:
    """A stack's name, its region and its outputs (key → value)."""

    name: str
    region: str
    outputs: dict[str, str]

    def get(self, key: str) -> str | None:
        """The output ``key``, or one whose name starts with it (CDK may add a suffix)."""
        exact = self.outputs.get(key)
        if exact:
            return exact
        return next((value for name, value in sorted(self.outputs.items()) if name.startswith(key)), None)

    def require(self, key: str) -> str:
        """The output ``key``; exits 3 naming the outputs there are when it is missing."""
        value = self.get(key)
        if not value:
            click.echo(
                f"error: stack {self.name} has no output {key} (outputs: {', '.join(self.outputs)})",
                err=True,
            )
            sys.exit(EXIT_NOT_FOUND)
        return value

    def with_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Every output whose name starts with ``prefix`` (``ApiKeyId0``, ``ApiKeyId1``, ...), in order."""
        return sorted((name, value) for name, value in self.outputs.items() if name.startswith(prefix))


def read_stack(stack_name: str | None, region: str | None, output_key: str) -> StackOutputs:
    """The outputs of ``stack_name``, or of the one Punctual stack in ``region`` (default: the AWS
    profile's) that has an output ``output_key``."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.session.Session(region_name=region)
    try:
        client = session.client("cloudformation")
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
    return StackOutputs(stack["StackName"], str(session.region_name), outputs)

"""``punctual dlq``: the deployment's dead-letter queue, for operators: list, show and redrive its
messages, each with why it is there and what its run is now.

The DLQ is the deployment's, across owners, and the owner-scoped HTTP API does not expose it: these
commands talk to SQS and DynamoDB directly, with the caller's AWS credentials (the fixed local ones
for the local stack's emulator). Where the queues and the table are: a deployed stack's outputs
(``--stack-name``, found as ``punctual config from-stack`` finds it), or for the local stack the
supervisor's ``<state dir>/stack.json``; ``--dlq-url``, ``--queue-url``, ``--table`` and
``--aws-endpoint`` override either.

A message's body is a work message (``punctual_functions/core/queue.py``) or something no worker could read
(a poison message). Listing receives every message and makes it visible again at once; a redrive
sends the body back to the work queue (without ``exhausted``, at once) and deletes it from the DLQ.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from punctual.cli.common import EXIT_NOT_FOUND, EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_USAGE, main
from punctual.cli.stack import read_stack
from punctual.client import Config, ConfigError, is_local
from punctual.deadletters import Explained, Resources, build_store, explain, opened
from punctual.output import emit_json, fields, relative, table

F = TypeVar("F", bound=Callable[..., Any])

STATE_FILE = "stack.json"  # written by the local supervisor (punctual/local/supervisor.py)
LIST_HEADERS = [
    "message id",
    "job id",
    "run id",
    "scheduled for",
    "sent",
    "receives",
    "why",
    "run",
    "run error",
]


def resolve_resources(
    *,
    stack_name: str | None,
    region: str | None,
    state_dir: str,
    dlq_url: str | None,
    queue_url: str | None,
    table: str | None,
    aws_endpoint: str | None,
) -> Resources:
    """Options first; then the stack named, or the local stack's state when the CLI is configured for
    the local stack (or an emulator is named), or else the one deployed Punctual stack."""
    given = {"dlq_url": dlq_url, "queue_url": queue_url, "table_name": table}
    found: dict[str, Any]
    if stack_name is None and all(given.values()):
        found = {"region": region or _configured_region(), "source": "options"}
    elif stack_name is None and (aws_endpoint is not None or _configured_for_local()):
        found = _local_state(Path(state_dir), aws_endpoint)
    else:
        stack = read_stack(stack_name, region or _configured_region(), "DeadLetterQueueUrl")
        found = {
            "dlq_url": stack.require("DeadLetterQueueUrl"),
            "queue_url": stack.require("WorkQueueUrl"),
            "table_name": stack.require("TableName"),
            "region": stack.region,
            "source": f"stack {stack.name}",
        }
    found.update({key: value for key, value in given.items() if value})
    if aws_endpoint is not None:
        found["aws_endpoint"] = aws_endpoint
    if region is not None:
        found["region"] = region
    return Resources(**found)


def _configured_region() -> str:
    """The config's region (where ``config from-stack`` found the stack), else the AWS profile's."""
    import boto3

    try:
        configured = Config.load(None, None).region
    except ConfigError:
        configured = None
    return configured or boto3.session.Session().region_name or "us-east-1"


def _configured_for_local() -> bool:
    """Whether the other commands would talk to the local stack (flags aside)."""
    try:
        return is_local(Config.load(None, None).endpoint)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)


def _local_state(state_dir: Path, aws_endpoint: str | None) -> dict[str, Any]:
    """The local stack's resources from its supervisor's state file; without one, those of an
    emulator named by --aws-endpoint as the local stack provisions them."""
    path = state_dir / STATE_FILE
    try:
        state = json.loads(path.read_text())
        return {
            "dlq_url": str(state["dlq_url"]),
            "queue_url": str(state["queue_url"]),
            "table_name": str(state["table_name"]),
            "region": state.get("region") or "us-east-1",
            "aws_endpoint": state.get("aws_endpoint"),
            "source": str(path),
        }
    except OSError:
        if aws_endpoint is None:
            click.echo(
                f"error: no local stack state in {path}: start the stack here (make run, punctual local),"
                " pass --state-dir, or --stack-name for a deployed one",
                err=True,
            )
            sys.exit(EXIT_UNAVAILABLE)
        from punctual.local.env import local_settings

        settings = local_settings(aws_endpoint)
        return {
            "dlq_url": settings.dlq_url,
            "queue_url": settings.queue_url,
            "table_name": settings.table_name,
            "region": settings.region,
            "aws_endpoint": aws_endpoint,
            "source": f"the local stack's names at {aws_endpoint}",
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        click.echo(f"error: {path} is not a local stack's state ({error!r}); start the stack again", err=True)
        sys.exit(EXIT_USAGE)


# ------------------------------------------------------------------------------------ the commands


def dlq_command(function: F) -> F:
    """Adds where the resources are (--stack-name, --region, --state-dir, --dlq-url, --queue-url,
    --table, --aws-endpoint) and --json; turns AWS errors into one line and an exit code."""

    @click.option(
        "--stack-name",
        default=None,
        help="A deployed stack (default: the local stack, else the one deployed punctual-<stage>).",
    )
    @click.option(
        "--region", default=None, help="The stack's region (default: the config's, else the AWS profile's)."
    )
    @click.option(
        "--state-dir",
        default=".punctual",
        show_default=True,
        type=click.Path(file_okay=False),
        help="The local stack's state directory (its stack.json).",
    )
    @click.option("--dlq-url", default=None, help="The dead-letter queue's URL.")
    @click.option("--queue-url", default=None, help="The work queue's URL.")
    @click.option("--table", default=None, help="The table's name.")
    @click.option("--aws-endpoint", default=None, help="An emulator's URL (the local stack's).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
    @functools.wraps(function)
    def wrapper(
        stack_name: str | None,
        region: str | None,
        state_dir: str,
        dlq_url: str | None,
        queue_url: str | None,
        table: str | None,
        aws_endpoint: str | None,
        as_json: bool,
        **kwargs: Any,
    ) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        resources = resolve_resources(
            stack_name=stack_name,
            region=region,
            state_dir=state_dir,
            dlq_url=dlq_url,
            queue_url=queue_url,
            table=table,
            aws_endpoint=aws_endpoint,
        )
        try:
            return function(resources, as_json, **kwargs)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            click.echo(f"error: {error}", err=True)
            if code in (
                "AWS.SimpleQueueService.NonExistentQueue",
                "QueueDoesNotExist",
                "ResourceNotFoundException",
            ):
                sys.exit(EXIT_NOT_FOUND)
            sys.exit(EXIT_REFUSED if code.startswith("AccessDenied") else EXIT_UNAVAILABLE)
        except BotoCoreError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_UNAVAILABLE)

    return wrapper  # type: ignore[return-value]


@main.group()
def dlq() -> None:
    """The dead-letter queue: what is in it, why, and sending it back (operators; AWS credentials)."""


def _sent(moment: str | None) -> str | None:
    """'2026-11-22T13:00:05.000Z (5m ago)'."""
    if moment is None:
        return None
    _, _, how_long = relative(moment).partition(" (")
    return f"{moment} ({how_long}"


def _row(item: Explained) -> list[Any]:
    view = item.view()
    run = view["run"]
    return [
        view["message_id"],
        view["job_id"],
        view["run_id"],
        view["scheduled_for"],
        relative(view["sent_at"]),
        view["receive_count"],
        view["why"],
        run["status"] if run else "not in the table" if item.letter.work else None,
        run["error"] if run else None,
    ]


@dlq.command("list")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many (default: all).")
@dlq_command
def dlq_list(resources: Resources, as_json: bool, limit: int | None) -> None:
    """Every message in the DLQ (each received and made visible again at once): why it is there, and
    its run's status now."""
    with opened(resources) as queue:
        letters = queue.peek(limit)
        max_receives = queue.max_receive_count()
    items = explain(letters, build_store(resources), max_receives)
    if as_json:
        emit_json({"items": [item.view() for item in items], "dlq_url": resources.dlq_url})
        return
    click.echo(table([_row(item) for item in items], LIST_HEADERS))
    count = f"{len(items)} message{'' if len(items) == 1 else 's'}"
    click.echo(f"{count} in {resources.dlq_url} ({resources.source})", err=True)


@dlq.command("show")
@click.argument("message_id")
@dlq_command
def dlq_show(resources: Resources, as_json: bool, message_id: str) -> None:
    """One message in full: its body and attributes, its job and run, and what a redrive would do."""
    with opened(resources) as queue:
        letters = queue.peek(until=lambda letter: letter.message_id == message_id)
        max_receives = queue.max_receive_count()
    letter = next((letter for letter in letters if letter.message_id == message_id), None)
    if letter is None:
        click.echo(f"error: message_id: message {message_id} is not in the DLQ {resources.dlq_url}", err=True)
        sys.exit(EXIT_NOT_FOUND)
    item = explain([letter], build_store(resources), max_receives)[0]
    view = item.view()
    if as_json:
        emit_json(view)
        return
    run, job = view["run"], view["job"]
    click.echo(
        fields(
            [
                ("message id", view["message_id"]),
                ("job id", view["job_id"]),
                ("run id", view["run_id"]),
                ("scheduled for", view["scheduled_for"]),
                ("sent", _sent(view["sent_at"])),
                ("receives", view["receive_count"]),
                ("why", view["why"]),
                ("source queue", view["source_queue_arn"]),
                (
                    "job",
                    f"{job['name'] or '-'} (owner {job['owner']}, {job['status']})"
                    if job
                    else ("not in the table" if item.letter.work else None),
                ),
                (
                    "run",
                    f"{run['status']}, {run['attempt']} attempt{'' if run['attempt'] == 1 else 's'}"
                    if run
                    else ("not in the table" if item.letter.work else None),
                ),
                ("run error", run["error"] if run else None),
                ("redrive", view["redrive"]),
            ]
        )
    )
    click.echo("body:")
    click.echo(json.dumps(view["body"], indent=2) if not isinstance(view["body"], str) else view["body"])
    click.echo("attributes:")
    click.echo(json.dumps(view["attributes"], indent=2))
    if view["message_attributes"]:
        click.echo("message attributes:")
        click.echo(json.dumps(view["message_attributes"], indent=2))


@dlq.command("redrive")
@click.argument("message_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every work message in the DLQ.")
@click.option("--dry-run", is_flag=True, help="Say what would be moved; move nothing.")
@dlq_command
def dlq_redrive(
    resources: Resources, as_json: bool, message_ids: tuple[str, ...], everything: bool, dry_run: bool
) -> None:
    """Send messages back to the work queue (due at once, without "exhausted") and delete them from
    the DLQ: a run still open is picked up by a worker, one that has ended is a no-op duplicate."""
    if everything == bool(message_ids):
        raise click.UsageError("give message ids, or --all")
    with opened(resources) as queue:
        letters = queue.peek()
        max_receives = queue.max_receive_count()
        by_id = {letter.message_id: letter for letter in letters}
        missing = [message_id for message_id in message_ids if message_id not in by_id]
        if missing:
            click.echo(
                f"error: message_id: {', '.join(missing)} not in the DLQ {resources.dlq_url}", err=True
            )
            sys.exit(EXIT_NOT_FOUND)
        chosen = [by_id[message_id] for message_id in dict.fromkeys(message_ids)] if message_ids else letters
        unreadable = [letter for letter in chosen if letter.work is None]
        if message_ids and unreadable:
            names = ", ".join(letter.message_id for letter in unreadable)
            click.echo(
                f"error: message_id: {names}: not a work message (no worker can read it); not redriven",
                err=True,
            )
            sys.exit(EXIT_REFUSED)
        chosen = [letter for letter in chosen if letter.work is not None]
        items = explain(chosen, build_store(resources), max_receives)
        moved: list[dict[str, Any]] = []
        for item in items:
            view = {**item.view(), "new_message_id": None}
            if not dry_run:
                view["new_message_id"] = queue.redrive(item.letter)
            moved.append(view)
    skipped = [letter.message_id for letter in unreadable]
    if as_json:
        emit_json({"dry_run": dry_run, "items": moved, "skipped": skipped})
        return
    rows = [
        [
            view["message_id"],
            view["job_id"],
            view["run_id"],
            (view["run"] or {}).get("status"),
            view["redrive"],
        ]
        for view in moved
    ]
    click.echo(table(rows, ["message id", "job id", "run id", "run", "redrive"]))
    verb = "would move" if dry_run else "moved"
    count = f"{len(moved)} message{'' if len(moved) == 1 else 's'}"
    click.echo(f"{verb} {count} to the work queue {resources.queue_url}", err=True)
    if skipped:
        click.echo(f"left in the DLQ, not work messages: {', '.join(skipped)}", err=True)

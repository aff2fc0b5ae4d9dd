"""``punctual dlq``: the deployment's dead-letter queue, for operators: list, show and redrive its
messages, each with why it is there and what its run is now.

The DLQ is the deployment's, across owners, and the owner-scoped HTTP API does not expose it: these
commands talk to SQS and DynamoDB directly, with the caller's AWS credentials (the fixed local ones
for the local stack's emulator). Where the queues and the table are: a deployed stack's outputs
(``--stack-name``, found as ``punctual config from-stack`` finds it), or for the local stack the
supervisor's ``<state dir>/stack.json``; ``--dlq-url``, ``--queue-url``, ``--table`` and
``--aws-endpoint`` override either.

A message's body is a work message (``functions/core/queue.py``) or something no worker could read
(a poison message). Listing receives every message and makes it visible again at once; a redrive
sends the body back to the work queue (without ``exhausted``, at once) and deletes it from the DLQ.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from functions.core import lifecycle
from functions.core.model import Job, Run, RunStatus, from_ms, iso
from functions.core.queue import WorkMessage
from functions.core.resources import WORK_QUEUE_MAX_RECEIVE_COUNT
from functions.core.settings import Settings
from punctual.cli.common import EXIT_NOT_FOUND, EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_USAGE, main
from punctual.cli.stack import read_stack
from punctual.client import Config, ConfigError, is_local
from punctual.output import emit_json, fields, relative, table

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from functions.core.store import Store

F = TypeVar("F", bound=Callable[..., Any])

# A listing hides each message it received this long, then makes it visible again itself: long enough
# that no message comes round twice while the rest are read.
PEEK_VISIBILITY_SECONDS = 120
# Long polling asks every SQS server, so an empty answer means none is left (short polling samples).
PEEK_WAIT_SECONDS = 1
REASON_ATTRIBUTE = "reason"  # set by WorkQueue.send_to_dlq
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


# ------------------------------------------------------------------------------- where it all is


@dataclass(frozen=True)
class Resources:
    """The DLQ, the work queue and the table, with the region and (for an emulator) its endpoint."""

    dlq_url: str
    queue_url: str
    table_name: str
    region: str
    aws_endpoint: str | None = None
    source: str = "options"

    def settings(self) -> Settings:
        return Settings(
            table_name=self.table_name,
            queue_url=self.queue_url,
            dlq_url=self.dlq_url,
            region=self.region,
            aws_endpoint_url=self.aws_endpoint,
        )

    def client(self, service: str) -> Any:
        """A client of ``service``: with the caller's AWS credentials, or for an emulator the local
        stack's fixed ones (a developer's real credentials never go to it)."""
        import boto3

        from punctual.local.env import LOCAL_CREDENTIALS

        local = self.aws_endpoint is not None
        session = boto3.session.Session(
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"] if local else None,
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"] if local else None,
            aws_session_token=LOCAL_CREDENTIALS["AWS_SESSION_TOKEN"] if local else None,
            region_name=self.region,
        )
        return session.client(service, endpoint_url=self.aws_endpoint)  # type: ignore[call-overload]


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


# ----------------------------------------------------------------------------------- the messages


@dataclass
class Letter:
    """One message of the DLQ as received: its body, SQS's attributes and the sender's."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: dict[str, str]
    message_attributes: dict[str, Any]

    @classmethod
    def of(cls, message: MessageTypeDef) -> Letter:
        return cls(
            message_id=message["MessageId"],
            receipt_handle=message["ReceiptHandle"],
            body=message.get("Body", ""),
            attributes={str(name): value for name, value in message.get("Attributes", {}).items()},
            message_attributes=dict(message.get("MessageAttributes", {})),
        )

    @functools.cached_property
    def work(self) -> WorkMessage | None:
        """The work message of the body; None for a body no worker can read (a poison message)."""
        try:
            return WorkMessage.from_json(self.body)
        except (ValueError, KeyError, TypeError):
            return None

    @property
    def reason(self) -> str | None:
        value = self.message_attributes.get(REASON_ATTRIBUTE, {})
        text = value.get("StringValue") if isinstance(value, dict) else None
        return str(text) if text else None

    @property
    def receive_count(self) -> int:
        return int(self.attributes.get("ApproximateReceiveCount") or 0)

    @property
    def sent_at(self) -> str | None:
        stamp = self.attributes.get("SentTimestamp")
        return iso(from_ms(int(stamp))) if stamp else None

    def redriven_body(self) -> str:
        """The body to send back: as it is, without ``"exhausted": true`` (that marks a copy of a last
        delivery, which would end the run at once)."""
        data = json.loads(self.body)
        if isinstance(data, dict) and "exhausted" in data:
            del data["exhausted"]
            return json.dumps(data, separators=(",", ":"))
        return self.body


@dataclass
class DeadLetterQueue:
    """Receives the DLQ's messages without taking them: each is hidden while held and made visible
    again by ``release`` (or deleted by ``redrive``)."""

    sqs: SQSClient
    dlq_url: str
    queue_url: str
    held: dict[str, Letter] = field(default_factory=dict)

    def peek(self, limit: int | None = None, until: Callable[[Letter], bool] | None = None) -> list[Letter]:
        """Every message, in the order received (up to ``limit``, or until one ``until`` accepts):
        receive until a receive brings no message not seen yet."""
        found: dict[str, Letter] = {}
        while limit is None or len(found) < limit:
            response = self.sqs.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=10 if limit is None else max(1, min(10, limit - len(found))),
                VisibilityTimeout=PEEK_VISIBILITY_SECONDS,
                WaitTimeSeconds=PEEK_WAIT_SECONDS,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received = [Letter.of(message) for message in response.get("Messages", [])]
            self.held.update((letter.message_id, letter) for letter in received)  # newest handle
            new = [letter for letter in received if letter.message_id not in found]
            found.update((letter.message_id, letter) for letter in new)
            if not new or (until is not None and any(until(letter) for letter in new)):
                break
        return list(found.values())[:limit] if limit is not None else list(found.values())

    def release(self) -> None:
        """Make every message still held visible again."""
        letters = list(self.held.values())
        self.held.clear()
        for start in range(0, len(letters), 10):
            self.sqs.change_message_visibility_batch(
                QueueUrl=self.dlq_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": letter.receipt_handle, "VisibilityTimeout": 0}
                    for index, letter in enumerate(letters[start : start + 10])
                ],
            )

    def redrive(self, letter: Letter) -> str:
        """Send the body back to the work queue (due at once), then delete it from the DLQ; the new
        message's id. A failure between the two leaves a duplicate, which a worker ignores."""
        sent = self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=letter.redriven_body(), DelaySeconds=0
        )
        newest = self.held.get(letter.message_id, letter).receipt_handle
        self.sqs.delete_message(QueueUrl=self.dlq_url, ReceiptHandle=newest)
        self.held.pop(letter.message_id, None)
        return sent["MessageId"]

    def max_receive_count(self) -> int:
        """How many receives the work queue allows before its redrive moves a message here."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            attributes = self.sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["RedrivePolicy"]
            )
            policy = json.loads(attributes.get("Attributes", {}).get("RedrivePolicy", "{}"))
            return int(policy.get("maxReceiveCount") or WORK_QUEUE_MAX_RECEIVE_COUNT)
        except (BotoCoreError, ClientError, ValueError):
            return WORK_QUEUE_MAX_RECEIVE_COUNT  # only for the explanation: the deployment's value


@contextmanager
def opened(resources: Resources) -> Iterator[DeadLetterQueue]:
    """The DLQ for the duration of a command: whatever it still holds is made visible again."""
    dlq = DeadLetterQueue(resources.client("sqs"), resources.dlq_url, resources.queue_url)
    try:
        yield dlq
    finally:
        dlq.release()


# ------------------------------------------------------------------------------ what each one is


@dataclass(frozen=True)
class Explained:
    """A message with why it is in the DLQ, its run and job now, and what a redrive would do."""

    letter: Letter
    why: str
    why_kind: str  # reason | redrive | poison
    run: Run | None
    job: Job | None
    redrive: str

    def view(self) -> dict[str, Any]:
        """The JSON of ``--json``."""
        work = self.letter.work
        data = _body_data(self.letter.body)
        scheduled = data.get("scheduled_for") if isinstance(data, dict) else None
        return {
            "message_id": self.letter.message_id,
            "job_id": work.job_id if work else None,
            "run_id": work.run_id if work else None,
            "scheduled_for": (
                iso(from_ms(int(scheduled)))
                if isinstance(scheduled, int)
                else (iso(self.run.scheduled_for) if self.run else None)
            ),
            "sent_at": self.letter.sent_at,
            "receive_count": self.letter.receive_count,
            "why": self.why,
            "why_kind": self.why_kind,
            "reason": self.letter.reason,
            "source_queue_arn": self.letter.attributes.get("DeadLetterQueueSourceArn"),
            "run": _run_view(self.run),
            "job": _job_view(self.job),
            "redrive": self.redrive,
            "body": data if data is not None else self.letter.body,
            "attributes": self.letter.attributes,
            "message_attributes": {
                name: value.get("StringValue", value.get("BinaryValue"))
                for name, value in self.letter.message_attributes.items()
            },
        }


def _body_data(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _run_view(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "status": run.status.value,
        "attempt": run.attempt,
        "error": run.error,
        "scheduled_for": iso(run.scheduled_for),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "next_attempt_at": iso(run.next_attempt_at),
    }


def _job_view(job: Job | None) -> dict[str, Any] | None:
    if job is None:
        return None
    return {"job_id": job.job_id, "name": job.name, "owner": job.owner, "status": job.status.value}


def why_there(letter: Letter, max_receives: int) -> tuple[str, str]:
    """(kind, text): the sender's reason; else a body no worker can read; else the queue's redrive."""
    if letter.reason:
        return "reason", letter.reason
    if letter.work is None:
        return "poison", "not a work message"
    return "redrive", f"received {max_receives} times without an outcome (the queue's redrive)"


def redrive_effect(letter: Letter, run: Run | None, job: Job | None, now: datetime) -> str:
    """What a worker does with the message once it is back on the work queue, as the worker decides
    it (``functions/core/lifecycle.py``), read from the run and job as they are now."""
    message = letter.work
    if message is None:
        return "none: not a work message, no worker can read it (not redriven)"
    if job is not None and job.gone(now):
        job = None
    from_message = run is None and message.queued is not None
    if from_message:
        run = message.queued
    arrival = lifecycle.on_arrival(run, job)
    if isinstance(arrival, lifecycle.Ignore) or run is None:
        if run is None:
            return "no-op: the run is not in the table (expired, or never written)"
        return f"no-op duplicate: the run has ended ({run.status.value})"
    if isinstance(arrival, lifecycle.Cancel) or job is None:
        return "a worker ends the run CANCELLED (its job is cancelled or gone)"
    skip = lifecycle.superseded(run, job)
    if skip is not None:
        return f"a worker ends the run SKIPPED ({skip.reason})"
    if from_message:
        return "a worker starts the run from the message (not in the table yet)"
    if run.status is RunStatus.RUNNING and run.lease_until is not None and run.lease_until > now:
        return f"a worker takes the attempt over if its lease (until {iso(run.lease_until)}) runs out"
    if run.status is RunStatus.RETRYING:
        due = iso(run.next_attempt_at) if run.next_attempt_at else "its time"
        return f"a worker runs the run's next attempt at {due} (RETRYING)"
    return f"a worker picks the run up ({run.status.value}) and runs its attempt"


def explain(
    letters: list[Letter], store: Store, max_receives: int, now: datetime | None = None
) -> list[Explained]:
    """Each message with its run and job as the table has them (the store's own reads)."""
    moment = now or datetime.now(UTC)
    explained = []
    for letter in letters:
        kind, text = why_there(letter, max_receives)
        run = job = None
        if letter.work is not None:
            run, job = store.get_run_and_job(letter.work.job_id, letter.work.run_id)
        explained.append(Explained(letter, text, kind, run, job, redrive_effect(letter, run, job, moment)))
    return explained


def build_store(resources: Resources) -> Store:
    """The store the functions use (``functions.core.store``), on this command's own client."""
    from datetime import timedelta

    from functions.core.store import Store

    settings = resources.settings()
    return Store(
        resources.client("dynamodb"),
        settings.table_name,
        run_retention=timedelta(days=settings.run_retention_days),
    )


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

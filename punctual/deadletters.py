"""The deployment's dead-letter queue, read and explained: what ``punctual dlq`` shows operators.

Where the queues and the table are (``Resources``), the DLQ's messages (``Letter``, read without
taking them away by ``DeadLetterQueue``), and what each one is (``explain``): why it is there, its run
and job as they are now in the table, and what sending it back to the work queue would do, decided
by the worker's own functions (``punctual_functions/core/lifecycle.py``). The commands are in
``punctual/cli/dlq.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from punctual_functions.core import lifecycle
from punctual_functions.core.model import Job, Run, RunStatus, from_ms, iso
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import WORK_QUEUE_MAX_RECEIVE_COUNT
from punctual_functions.core.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from punctual_functions.core.store import Store

# A listing hides each message it received this long, then makes it visible again itself: long enough
# that no message comes round twice while the rest are read.
PEEK_VISIBILITY_SECONDS = 120
# Long polling asks every SQS server, so an empty answer means none is left (short polling samples).
PEEK_WAIT_SECONDS = 1
REASON_ATTRIBUTE = "reason"  # set by WorkQueue.send_to_dlq

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
    it (``punctual_functions/core/lifecycle.py``), read from the run and job as they are now."""
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
    """The store the functions use (``punctual_functions.core.store``), on this command's own client."""
    from datetime import timedelta

    from punctual_functions.core.store import Store

    settings = resources.settings()
    return Store(
        resources.client("dynamodb"),
        settings.table_name,
        run_retention=timedelta(days=settings.run_retention_days),
    )

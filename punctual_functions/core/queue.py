"""SQS access: the work queue and its dead-letter queue."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from punctual_functions.core.model import Run, RunKind, RunStatus, from_ms, to_ms

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient


@dataclass(frozen=True)
class WorkMessage:
    """The body of a work message: which run to look at, read from the table.

    A dispatched occurrence's message also says what its QUEUED run is (``queued``): the dispatcher
    writes that run just after sending, so a message that arrives first can start it all the same.
    """

    job_id: str
    run_id: str
    queued: Run | None = None
    # A copy sent by a worker whose handling of the last delivery SQS would make of the original
    # failed (the table erred): the run ends as on that last delivery (``RunExecutor._last_delivery``).
    exhausted: bool = False
    # A wake-up sent by a worker that handed its slot of this target limit over to the run: a
    # delivery that will not start the run passes the slot on (``punctual_functions/worker/limiting.py``).
    handed: str | None = None

    def to_json(self) -> str:
        body: dict[str, Any] = {"job_id": self.job_id, "run_id": self.run_id}
        if self.exhausted:
            body["exhausted"] = True
        if self.handed is not None:
            body["handed"] = self.handed
        if self.queued is not None:
            body.update(
                scheduled_for=to_ms(self.queued.scheduled_for),
                kind=self.queued.kind.value,
                job_version=self.queued.job_version,
                queued_at=to_ms(self.queued.queued_at or self.queued.scheduled_for),
                owner=self.queued.owner,
            )
            if self.queued.jitter_ms:
                body["jitter_ms"] = self.queued.jitter_ms
            if self.queued.backfill_until is not None:
                body["backfill_until"] = to_ms(self.queued.backfill_until)
            if self.queued.next_attempt_at is not None and self.queued.next_attempt_at != self.queued.due_at:
                body["due"] = to_ms(self.queued.next_attempt_at)
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_json(cls, body: str) -> WorkMessage:
        data = json.loads(body)
        job_id, run_id = str(data["job_id"]), str(data["run_id"])
        queued = None
        if "scheduled_for" in data:
            scheduled_for = from_ms(int(data["scheduled_for"]))
            jitter = int(data.get("jitter_ms", 0))
            queued = Run(
                job_id=job_id,
                run_id=run_id,
                owner=str(data["owner"]),
                scheduled_for=scheduled_for,
                status=RunStatus.QUEUED,
                kind=RunKind(data["kind"]),
                queued_at=from_ms(int(data["queued_at"])),
                next_attempt_at=(
                    from_ms(int(data["due"]))
                    if "due" in data
                    else scheduled_for + timedelta(milliseconds=jitter)
                ),
                job_version=int(data["job_version"]),
                jitter_ms=jitter,
                backfill_until=from_ms(int(data["backfill_until"])) if "backfill_until" in data else None,
            )
        handed = data.get("handed")
        return cls(
            job_id=job_id,
            run_id=run_id,
            queued=queued,
            exhausted=data.get("exhausted") is True,
            handed=str(handed) if handed is not None else None,
        )


def _visibility(seconds: int) -> int:
    """A visibility timeout SQS accepts: 0 to 12 hours."""
    return max(0, min(seconds, 43_200))


class SendError(Exception):
    """Some messages of a batch were not accepted by SQS."""


class WorkQueue:
    def __init__(self, client: SQSClient, queue_url: str, dlq_url: str) -> None:
        self.client = client
        self.queue_url = queue_url
        self.dlq_url = dlq_url

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        """Send (message, delay) pairs in batches of ten; raise if any was refused."""
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            entries: list[Any] = [
                {"Id": str(index), "MessageBody": message.to_json(), "DelaySeconds": delay}
                for index, (message, delay) in enumerate(chunk)
            ]
            response = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = response.get("Failed") or []
            if failed:
                raise SendError(f"{len(failed)} work messages refused: {failed[0].get('Message')}")

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self.client.change_message_visibility(
            QueueUrl=self.queue_url,
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=_visibility(seconds),
        )

    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]:
        refused: list[str] = []
        for start in range(0, len(changes), 10):
            chunk = changes[start : start + 10]
            response = self.client.change_message_visibility_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {
                        "Id": str(index),
                        "ReceiptHandle": handle,
                        "VisibilityTimeout": _visibility(seconds),
                    }
                    for index, (handle, seconds) in enumerate(chunk)
                ],
            )
            refused.extend(chunk[int(failure["Id"])][0] for failure in response.get("Failed") or [])
        return refused

    def delete_messages(self, receipt_handles: list[str]) -> None:
        """Delete in batches of ten. A handle whose message is gone already is no error (SQS deletes
        a message once; the event source mapping may delete the same one after the invocation)."""
        for start in range(0, len(receipt_handles), 10):
            chunk = receipt_handles[start : start + 10]
            self.client.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(index), "ReceiptHandle": handle} for index, handle in enumerate(chunk)],
            )

    def send_to_dlq(self, body: str, reason: str) -> None:
        self.client.send_message(
            QueueUrl=self.dlq_url,
            MessageBody=body,
            MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:1000] or "failed"}},
        )

    def depth(self) -> dict[str, int]:
        """Visible, in-flight and delayed messages, plus the DLQ depth: for stats."""
        names: Any = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        work = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)["Attributes"]
        dlq = self.client.get_queue_attributes(
            QueueUrl=self.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return {
            "queued": int(work.get("ApproximateNumberOfMessages", 0)),
            "in_flight": int(work.get("ApproximateNumberOfMessagesNotVisible", 0)),
            "delayed": int(work.get("ApproximateNumberOfMessagesDelayed", 0)),
            "dlq": int(dlq.get("ApproximateNumberOfMessages", 0)),
        }

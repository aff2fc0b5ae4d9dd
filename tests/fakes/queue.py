"""``MemoryQueue``: the work queue and its DLQ in memory, with SQS's delays, visibility and receive
counts (wall-clock time, like SQS and moto), plus what tests read back: ``receive``, ``delete``,
``dlq_bodies`` and every message sent with its delay (``sent``)."""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from punctual_functions.core.queue import WorkMessage

DEFAULT_VISIBILITY_SECONDS = 30
MAX_VISIBILITY_SECONDS = 43_200


@dataclass
class _Message:
    body: str
    visible_at: float
    message_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    receipt: str | None = None
    receives: int = 0
    reason: str | None = None


class _Fifo:
    """One queue's messages."""

    def __init__(self) -> None:
        self.messages: list[_Message] = []
        self.handles = itertools.count(1)

    def receive(self, max_messages: int, visibility: int) -> list[dict[str, Any]]:
        now = time.monotonic()
        received: list[dict[str, Any]] = []
        for message in self.messages:
            if len(received) == max_messages:
                break
            if message.visible_at <= now:
                message.visible_at = now + visibility
                message.receives += 1
                message.receipt = f"receipt-{next(self.handles)}"
                received.append(
                    {
                        "MessageId": message.message_id,
                        "MD5OfBody": hashlib.md5(message.body.encode()).hexdigest(),
                        "Body": message.body,
                        "ReceiptHandle": message.receipt,
                        "Attributes": {"ApproximateReceiveCount": str(message.receives)},
                    }
                )
        return received

    def find(self, receipt_handle: str) -> _Message | None:
        return next((m for m in self.messages if m.receipt == receipt_handle), None)


class MemoryQueue:
    """Implements ``punctual_functions.core.ports.Queue``. ``delays=False`` sends every message visible at
    once (the delay it would have had is still recorded in ``sent``): for tests whose clock is not
    the wall clock."""

    def __init__(self, *, delays: bool = True) -> None:
        self.delays = delays
        self.lock = threading.Lock()
        self.work = _Fifo()
        self.dlq = _Fifo()
        self.sent: list[tuple[WorkMessage, int]] = []

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        with self.lock:
            self.sent.extend(messages)
            now = time.monotonic()
            for message, delay in messages:
                self.work.messages.append(_Message(message.to_json(), now + (delay if self.delays else 0)))

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        with self.lock:
            message = self.work.find(receipt_handle)
            if message is not None:
                message.visible_at = time.monotonic() + max(0, min(seconds, MAX_VISIBILITY_SECONDS))

    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]:
        refused: list[str] = []
        with self.lock:
            now = time.monotonic()
            for handle, seconds in changes:
                message = self.work.find(handle)
                if message is None:
                    refused.append(handle)
                else:
                    message.visible_at = now + max(0, min(seconds, MAX_VISIBILITY_SECONDS))
        return refused

    def delete_messages(self, receipt_handles: list[str]) -> None:
        with self.lock:
            for handle in receipt_handles:
                message = self.work.find(handle)
                if message is not None:
                    self.work.messages.remove(message)

    def send_to_dlq(self, body: str, reason: str) -> None:
        with self.lock:
            self.dlq.messages.append(_Message(body, time.monotonic(), reason=reason[:1000] or "failed"))

    def depth(self) -> dict[str, int]:
        with self.lock:
            now = time.monotonic()
            waiting = [m for m in self.work.messages if m.visible_at > now]
            return {
                "queued": sum(m.visible_at <= now for m in self.work.messages),
                "in_flight": sum(m.receives > 0 for m in waiting),
                "delayed": sum(m.receives == 0 for m in waiting),
                "dlq": sum(m.visible_at <= now for m in self.dlq.messages),
            }

    # ------------------------------------------------------------------------ what tests read back

    def receive(self, max_messages: int = 10, visibility: int = DEFAULT_VISIBILITY_SECONDS) -> list[Any]:
        with self.lock:
            return self.work.receive(max_messages, visibility)

    def delete(self, receipt_handle: str) -> None:
        with self.lock:
            message = self.work.find(receipt_handle)
            if message is not None:
                self.work.messages.remove(message)

    def dlq_bodies(self) -> list[str]:
        with self.lock:
            return [m["Body"] for m in self.dlq.receive(10, DEFAULT_VISIBILITY_SECONDS)]

"""SQS in virtual time: the work queue (the engine's ``Queue`` port) and the Lambda event source
mapping that hands its messages to worker invocations.

The queue keeps SQS's semantics that the engine depends on: whole-second ``DelaySeconds`` up to 900,
visibility timeouts and receive counts, receipt handles that change with each receive (a stale one
is refused), ten messages to a batch request, and the in-flight limit. The event source mapping
polls it with a number of concurrent batches that grows while messages wait, as AWS's does.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from punctual.scale.params import Parameters, quantile
from punctual.sim.lambdas import Lambdas
from punctual.sim.world import Signal, World
from punctual_functions.core.queue import WorkMessage


class QueueOverLimit(RuntimeError):
    """ReceiveMessage refused: the queue has its limit of messages in flight (SQS's OverLimit)."""


@dataclass(eq=False)
class Message:
    number: int
    body: str
    sent_at: float
    visible_at: float
    receives: int = 0
    receipt: str | None = None
    deleted: bool = False
    version: int = 0
    first_received_at: float | None = None
    delayed: bool = False  # sent with a delay and not visible yet


@dataclass
class QueueStats:
    requests: dict[str, int] = field(default_factory=dict)
    sent: int = 0
    received: int = 0
    deleted: int = 0
    dlq: int = 0
    peak_in_flight: int = 0
    peak_delayed: int = 0
    over_limit: int = 0
    kb: dict[str, float] = field(default_factory=dict)  # "<function> <operation>" -> KB of messages

    def count(self, operation: str, requests: int = 1, kb: float = 0.0) -> None:
        self.requests[operation] = self.requests.get(operation, 0) + requests
        self.kb[operation] = self.kb.get(operation, 0.0) + kb


class SimQueue:
    """Implements ``punctual_functions.core.ports.Queue`` in virtual time. ``in_flight_limit`` is this
    simulation's share of the queue's limit."""

    def __init__(
        self,
        world: World,
        params: Parameters,
        rng: random.Random,
        *,
        visibility_seconds: int,
        in_flight_limit: int,
        charge: Callable[[float], None],
        function: Callable[[], str] = lambda: "-",
    ) -> None:
        self.function = function
        self.world = world
        self.params = params
        self.rng = rng
        self.visibility_seconds = visibility_seconds
        self.in_flight_limit = in_flight_limit
        self.charge = charge  # CPU of a request in the calling invocation (``Lambdas.charge``)
        self.stats = QueueStats()
        self._numbers = itertools.count(1)
        self._receipts = itertools.count(1)
        self._hidden: list[tuple[float, int, int, Message]] = []  # (visible_at, number, version, message)
        self._ready: deque[tuple[Message, int]] = deque()  # visible, with the version that made it so
        self._by_receipt: dict[str, Message] = {}
        self._in_flight: set[Message] = set()
        self._delayed = 0
        self.dlq: list[tuple[str, str]] = []
        self.messages: dict[int, Message] = {}
        self.visible = Signal(world)  # pollers waiting for a message
        self._timer_signal = Signal(world)
        self._timer_at: float | None = None
        world.spawn(self._timer, name="sqs-visibility-timer")

    # ------------------------------------------------------------------------- the Queue port

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        # SQS takes the messages, and starts counting their delays, before its answer is back: half
        # the request's latency on the way there, half on the way back.
        latency = self._request("SendMessageBatch", len(messages), wait=False)
        self.world.sleep(latency / 2)
        now = self.world.now
        for message, delay in messages:
            if not 0 <= delay <= self.params.sqs_max_delay_seconds or delay != int(delay):
                raise ValueError(f"DelaySeconds must be a whole number of seconds within 0..900, not {delay}")
            stored = Message(next(self._numbers), message.to_json(), now, now + delay)
            self.messages[stored.number] = stored
            self.stats.sent += 1
            self._hide(stored)
        self.world.sleep(latency / 2)

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self._request("ChangeMessageVisibility", 1)
        message = self._by_receipt.get(receipt_handle)
        if message is None or message.deleted or message not in self._in_flight:
            # SQS: a stale receipt handle, or a message not in flight (its visibility ran out)
            raise ClientError(
                {"Error": {"Code": "AWS.SimpleQueueService.MessageNotInflight", "Message": "not in flight"}},
                "ChangeMessageVisibility",
            )
        self._set_visibility(message, seconds)

    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]:
        refused = []
        for start in range(0, len(changes), 10):
            chunk = changes[start : start + 10]
            self._request("ChangeMessageVisibilityBatch", len(chunk))
            for handle, seconds in chunk:
                message = self._by_receipt.get(handle)
                if message is None or message.deleted or message not in self._in_flight:
                    refused.append(handle)
                else:
                    self._set_visibility(message, seconds)
        return refused

    def delete_messages(self, receipt_handles: list[str]) -> None:
        for start in range(0, len(receipt_handles), 10):
            chunk = receipt_handles[start : start + 10]
            self._request("DeleteMessageBatch", len(chunk))
            for handle in chunk:
                self._delete(handle)

    def send_to_dlq(self, body: str, reason: str) -> None:
        self._request("SendMessage", 1)
        self.dlq.append((body, reason))
        self.stats.dlq += 1

    def depth(self) -> dict[str, int]:
        return {
            "queued": len(self._ready),
            "in_flight": self.in_flight(),
            "delayed": self._delayed,
            "dlq": len(self.dlq),
        }

    # -------------------------------------------------------------- the event source's side

    def receive(self, count: int) -> list[Message]:
        """Up to ``count`` visible messages, hidden for the queue's visibility timeout (the event
        source's ReceiveMessage; ten at most per request)."""
        if self.in_flight() >= self.in_flight_limit:
            self.stats.over_limit += 1
            raise QueueOverLimit("too many messages in flight")
        taken: list[Message] = []
        while self._ready and len(taken) < count:
            message, version = self._ready.popleft()
            if not message.deleted and version == message.version:
                taken.append(message)
        self.stats.count("event-source ReceiveMessage", max(1, math.ceil(len(taken) / 10)))
        for message in taken:
            if message.receipt is not None:
                self._by_receipt.pop(message.receipt, None)
            message.receives += 1
            message.receipt = f"r{next(self._receipts)}"
            if message.first_received_at is None:
                message.first_received_at = self.world.now
            self._by_receipt[message.receipt] = message
            self._in_flight.add(message)
            self.stats.received += 1
            self._set_visibility(message, self.visibility_seconds)
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, len(self._in_flight))
        return taken

    def delete_received(self, receipt_handles: list[str]) -> None:
        """The event source deletes a batch's successful records (DeleteMessageBatch, ten a request)."""
        for start in range(0, len(receipt_handles), 10):
            chunk = receipt_handles[start : start + 10]
            self.stats.count("event-source DeleteMessageBatch")
            for handle in chunk:
                self._delete(handle)

    def visible_count(self) -> int:
        return len(self._ready)

    def in_flight(self) -> int:
        return len(self._in_flight)

    def delayed(self) -> int:
        return self._delayed

    # ------------------------------------------------------------------------------- inside

    def _request(self, operation: str, items: int, *, wait: bool = True) -> float:
        """Count and charge a request; its round trip (seconds), waited unless ``wait`` is false."""
        # a work message is about half a KB
        self.stats.count(f"{self.function()} {operation}", kb=items / 2)
        self.charge((self.params.cpu_per_request_ms + self.params.cpu_per_kb_ms * items / 2) / 1000)
        latency = quantile(self.params.sqs_latency_ms, self.rng.random()) / 1000
        if wait:
            self.world.sleep(latency)
        return latency

    def _delete(self, handle: str) -> None:
        message = self._by_receipt.pop(handle, None)
        if message is None or message.deleted or message.receipt != handle:
            return  # a stale handle: SQS answers success but may not delete (we never do)
        message.deleted = True
        self._in_flight.discard(message)
        self.messages.pop(message.number, None)
        self.stats.deleted += 1

    def _set_visibility(self, message: Message, seconds: int) -> None:
        seconds = max(0, min(int(seconds), 43_200))
        message.visible_at = self.world.now + seconds
        self._hide(message)

    def _hide(self, message: Message) -> None:
        message.version += 1
        if message.receives == 0 and message.visible_at > self.world.now and not message.delayed:
            message.delayed = True
            self._delayed += 1
            self.stats.peak_delayed = max(self.stats.peak_delayed, self._delayed)
        heapq.heappush(self._hidden, (message.visible_at, message.number, message.version, message))
        if self._timer_at is None or message.visible_at < self._timer_at:
            self._timer_signal.notify()

    def _timer(self) -> None:
        """Moves messages whose time has come to the visible ones and wakes as many pollers."""
        while True:
            became = 0
            while self._hidden and self._hidden[0][0] <= self.world.now:
                _at, _number, version, message = heapq.heappop(self._hidden)
                if message.deleted or version != message.version:
                    continue
                if message.delayed:
                    message.delayed = False
                    self._delayed -= 1
                self._in_flight.discard(message)  # its visibility ran out: visible again
                self._ready.append((message, version))
                became += 1
            if became:
                self.visible.notify(max(1, math.ceil(became / 10)))
            self._timer_at = self._hidden[0][0] if self._hidden else None
            self._timer_signal.wait(None if self._timer_at is None else self._timer_at - self.world.now)


class EventSourceMapping:
    """Lambda's SQS poller: ``concurrency`` batches at once, growing while messages wait (from
    ``esm_initial_concurrency``, or in provisioned mode what its ``minimum_pollers`` serve, by
    ``esm_scale_per_minute`` up to the smaller of AWS's maximum and the mapping's
    ``MaximumConcurrency``); each batch is a synchronous invocation of the worker whose
    successful records the mapping deletes."""

    def __init__(
        self,
        world: World,
        queue: SimQueue,
        lambdas: Lambdas,
        params: Parameters,
        rng: random.Random,
        *,
        handle_batch: Callable[[list[Message]], list[str]],
        batch_size: int,
        window_seconds: float,
        maximum_concurrency: int,
        provisioned: bool = False,
        minimum_pollers: int = 0,
        scale_share: float = 1.0,
    ) -> None:
        self.world = world
        self.queue = queue
        self.lambdas = lambdas
        self.params = params
        self.rng = rng
        self.handle_batch = handle_batch
        self.batch_size = batch_size
        self.window_seconds = window_seconds
        ceiling = params.esm_provisioned_max_concurrency if provisioned else params.esm_max_concurrency
        self.ceiling = max(1, int(min(ceiling, maximum_concurrency) * scale_share))
        self.step_per_second = (
            (params.esm_provisioned_scale_per_minute if provisioned else params.esm_scale_per_minute)
            * scale_share
            / 60
        )
        ready = params.esm_initial_concurrency
        if provisioned:  # MinimumPollers kept ready, each for its concurrent invocations
            ready = max(ready, minimum_pollers * params.esm_invocations_per_poller)
        self.concurrency = float(min(self.ceiling, max(1, ready * scale_share)))
        self.pollers = 0
        self.busy = 0
        self.peak_busy = 0
        self.batches = 0
        self.records = 0
        self.throttled = 0
        self.idle_polls = 0.0
        self.provisioned = provisioned
        # Provisioned mode's event pollers, by the second they were kept (each serves
        # ``esm_invocations_per_poller`` concurrent invocations; a group's share of them): what the
        # mode bills.
        self.poller_seconds = 0.0
        self._grow()
        world.spawn(self._scaler, name="esm-scaler")

    def _grow(self) -> None:
        while self.pollers < int(self.concurrency):
            self.pollers += 1
            self.world.spawn(self._poll, name=f"esm-poller-{self.pollers}")

    def _scaler(self) -> None:
        """Each second: while more messages wait than the free pollers take in a receive each, add
        this second's share of the scaling. (It asked that every poller be busy at that instant: with
        tens of pollers, one of them was nearly always between two batches, and a whole deployment's
        event source stalled at 40 invocations with 20,000 messages waiting, where a group's few
        pollers, nearly always all busy, scaled.)"""
        while True:
            self.world.sleep(1.0)
            if self.provisioned:
                self.poller_seconds += self.concurrency / self.params.esm_invocations_per_poller
            free = max(0, self.pollers - self.busy)
            if self.queue.visible_count() > free * self.batch_size:
                self.concurrency = min(self.ceiling, self.concurrency + self.step_per_second)
                self._grow()

    def _poll(self) -> None:
        idle_since = self.world.now
        while True:
            if self.queue.visible_count() == 0:
                self.queue.visible.wait()
                continue
            waited = 0.0
            while self.window_seconds > waited and self.queue.visible_count() < self.batch_size:
                step = min(0.05, self.window_seconds - waited)  # the window: a batch fills or it ends
                self.world.sleep(step)
                waited += step
            self.idle_polls += (self.world.now - idle_since) / 20  # a long poll of 20 s while idle
            try:
                batch = self.queue.receive(
                    min(self.batch_size, 10) if self.window_seconds == 0 else self.batch_size
                )
            except QueueOverLimit:
                self.world.sleep(1.0)
                continue
            if not batch:
                idle_since = self.world.now
                continue
            # The mapping's own latency: from the message being visible to the handler running with it.
            self.world.sleep(quantile(self.params.esm_latency_ms, self.rng.random()) / 1000)
            self.busy += 1
            self.peak_busy = max(self.peak_busy, self.busy)
            succeeded: list[str] = []

            def invoke(batch: list[Message] = batch, succeeded: list[str] = succeeded) -> None:
                succeeded.extend(self.handle_batch(batch))

            task = self.lambdas.invoke("worker", invoke, name="worker")
            while task is None:  # throttled by the account's concurrency: the mapping backs off
                self.throttled += 1
                self.world.sleep(1.0)
                task = self.lambdas.invoke("worker", invoke, name="worker")
            task.outcome()
            self.busy -= 1
            self.batches += 1
            self.records += len(batch)
            if succeeded:
                self.queue.delete_received(succeeded)
            idle_since = self.world.now

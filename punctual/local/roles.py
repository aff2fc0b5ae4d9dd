"""The local roles' main loops: the EventBridge tick and the SQS event source mapping, emulated.

Each runs in its own process (see ``supervisor``) and talks to the emulator over HTTP, exactly as the
Lambda functions talk to AWS.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from punctual.local.gateway import LambdaContext
from punctual.local.recursion import Chains, Invocation, RecursiveLoop
from punctual.local.recursion import install as install_recursion_header
from punctual_functions.core import aws
from punctual_functions.core.observability import logger
from punctual_functions.core.settings import Settings

# How long a received message stays hidden until the worker hides it for its own wait (its first
# request on arrival). Only a worker process killed in between makes it count: its messages come back
# this long after the receive, which for a message arriving the head start before its second is
# about this late. 3 s keeps that under a lapsed lease's 3.5 s and well above the worker's first
# request (tens of milliseconds, a second under the emulator's heaviest load).
RECEIVE_VISIBILITY_SECONDS = 3


def run_dispatcher(settings: Settings, tick_seconds: float) -> None:
    """Call the dispatcher handler on every tick, aligned to the wall clock like an EventBridge rule.

    It also sweeps once as it starts: an EventBridge rule ticks whatever became of the previous
    invocation, but this role, restarted after dying just before a tick, would otherwise miss that
    tick and leave a minute of dispatches (and those its predecessor left unsent) to the next one.
    Sweeps are safe to run twice.
    """
    from punctual_functions.dispatcher.handler import handler

    first = True
    while True:
        if not first:
            time.sleep(tick_seconds - (time.time() % tick_seconds))
        first = False
        context = LambdaContext(function_name="punctual-dispatcher-local", aws_request_id=uuid.uuid4().hex)
        try:
            handler({"source": "aws.events", "detail-type": "Scheduled Event"}, cast(Any, context))
        except Exception:  # a failed tick is retried by the next one, as on AWS
            logger.exception("dispatcher tick failed")


def _to_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": message.get("MessageAttributes", {}),
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


# The most messages a local worker process has in flight: see ``EventSource``.
MAX_MESSAGES_IN_FLIGHT = 40


class _Budget:
    """A count of messages a process may still take in."""

    def __init__(self, total: int) -> None:
        self._free = total
        self._condition = threading.Condition()

    def take(self, most: int) -> int:
        """Wait until some room is left; take up to ``most`` of it."""
        with self._condition:
            self._condition.wait_for(lambda: self._free > 0)
            taken = min(most, self._free)
            self._free -= taken
            return taken

    def give(self, count: int) -> None:
        with self._condition:
            self._free += count
            self._condition.notify_all()


class EventSource:
    """Lambda's SQS event source mapping, emulated in one worker process: ``pollers`` threads long-poll
    the queue and hand each batch to an invocation of its own, at most ``max_concurrency`` of them in
    flight at once (the mapping's ``MaximumConcurrency``).

    A poller does not wait for the invocation it started: a message that becomes visible while every
    earlier invocation still waits for its second (a message sent by the API arrives up to 1.25 s
    before its second, alone) is received and invoked at once, as on AWS, where each batch runs in an
    execution environment of its own. When ``max_concurrency`` invocations are in flight, the pollers
    stop receiving until one ends: no message is received that no invocation could take.

    Unlike Lambda's, it also keeps at most ``max_messages`` messages in flight (four batches of ten by
    default): the emulator serves the table one request at a time, and 300 runs due at one second
    under a target limit of ten, all in flight at once in 30 invocations, kept it busy for minutes
    (starts answered after their leases had lapsed, attempts taken over again and again). On AWS the
    table serves them side by side. Messages that arrive one at a time (sent by the API) still each
    get an invocation of their own.

    Like Lambda, it counts each message's chain of invocations (``punctual/local/recursion.py``): a
    message that would invoke the worker a 17th time in one chain goes to the dead-letter queue
    unless ``recursive_loop`` is ``Allow``, the worker's setting on AWS.
    """

    # How the local worker is named to the detection (and in its logs).
    FUNCTION_NAME = "punctual-worker-local"

    def __init__(
        self,
        settings: Settings,
        pollers: int,
        max_concurrency: int,
        batch_size: int = 10,
        handler: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None,
        max_messages: int = MAX_MESSAGES_IN_FLIGHT,
        recursive_loop: RecursiveLoop = "Terminate",
    ) -> None:
        if handler is None:
            # Imported, and its executor built, before the first receive, not by the first invocation:
            # its message would wait.
            from punctual_functions.worker.handler import handler as worker_handler
            from punctual_functions.worker.handler import warm_up

            warm_up()

            handler = cast(Callable[[dict[str, Any], Any], dict[str, Any]], worker_handler)
        self.handler = handler
        self.settings = settings
        self.chains = Chains(self.FUNCTION_NAME, recursive_loop)
        self.pollers = pollers
        self.batch_size = batch_size
        self.slots = threading.BoundedSemaphore(max_concurrency)
        self.messages = _Budget(max_messages)
        self.invocations = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="invocation")
        self.sqs: Any = aws.client("sqs", settings)
        self.queue_arn = self.sqs.get_queue_attributes(
            QueueUrl=settings.queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        self._stopping = threading.Event()

    def run(self) -> None:
        """Poll until ``stop``; then let the invocations under way end."""
        threads = [
            threading.Thread(target=self._poll_forever, name=f"poller-{i}", daemon=True)
            for i in range(self.pollers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.invocations.shutdown(wait=True)

    def stop(self) -> None:
        """No receive after the ones under way (a long poll ends within its 2 s)."""
        self._stopping.set()

    def _poll_forever(self) -> None:
        while not self._stopping.is_set():
            self.slots.acquire()  # an invocation free to take what this receive brings
            room = self.messages.take(self.batch_size)
            try:
                messages = self._receive(room)
            except Exception:
                self.messages.give(room)
                self.slots.release()
                if self._stopping.is_set():
                    return
                logger.exception("receive failed")
                self._stopping.wait(1)
                continue
            self.messages.give(room - len(messages))
            if not messages:
                self.slots.release()
                continue
            self.invocations.submit(self._invoke, messages)

    def _receive(self, most: int) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.settings.queue_url,
            MaxNumberOfMessages=most,
            WaitTimeSeconds=2,
            # Short, unlike Lambda's poller (which uses the queue's): a worker process killed right
            # after receiving gives its messages back in seconds. The handler then holds each
            # message for exactly as long as it needs.
            VisibilityTimeout=RECEIVE_VISIBILITY_SECONDS,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return list(response.get("Messages") or [])

    def _invoke(self, messages: list[dict[str, Any]]) -> None:
        """One invocation of the worker handler with the batch; then, as the mapping does, delete the
        messages it did not report as failed (an invocation error returns the whole batch)."""
        taken = len(messages)
        try:
            verdict = self.chains.judge(messages)
            self._delete(self._stop(verdict.stopped))  # moved to the DLQ: gone, whatever the invocation does
            messages = verdict.invoke
            context = LambdaContext(function_name=self.FUNCTION_NAME, aws_request_id=uuid.uuid4().hex)
            try:
                with Invocation(verdict.header):
                    result = (
                        self.handler(
                            _to_event(messages, self.queue_arn, self.settings.region), cast(Any, context)
                        )
                        if messages
                        else {}
                    )
                failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
            except Exception:
                logger.exception("worker invocation failed")
                return
            self._delete([m for m in messages if m["MessageId"] not in failed])
        except Exception:  # a delete that failed: the messages come back, and their runs end once
            logger.exception("batch not deleted")
        finally:
            self.messages.give(taken)
            self.slots.release()

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        if messages:
            self.sqs.delete_message_batch(
                QueueUrl=self.settings.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )

    def _stop(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Lambda's stop of a recursive loop: the messages go to the dead-letter queue, uninvoked;
        the ones moved there (to be deleted from the work queue)."""
        moved: list[dict[str, Any]] = []
        for message in messages:
            logger.warning(
                "recursive loop detected: the message goes to the dead-letter queue uninvoked "
                "(the function's RecursiveLoop is Terminate)",
                extra={"message_id": message["MessageId"]},
            )
            try:
                self.sqs.send_message(
                    QueueUrl=self.settings.dlq_url,
                    MessageBody=message["Body"],
                    MessageAttributes={
                        "reason": {"DataType": "String", "StringValue": "recursive loop detected by Lambda"}
                    },
                )
            except Exception:  # it stays on the work queue, and is stopped again when it comes back
                logger.exception("a stopped message could not be moved to the dead-letter queue")
                continue
            moved.append(message)
        return moved


def run_worker(
    settings: Settings,
    pollers: int,
    max_concurrency: int,
    recursive_loop: RecursiveLoop,
    batch_size: int = 10,
) -> None:
    """Like Lambda's SQS event source mapping: several pollers, an invocation of the handler per batch."""
    install_recursion_header()  # before the first client: its requests carry the invocation's header
    EventSource(settings, pollers, max_concurrency, batch_size, recursive_loop=recursive_loop).run()

"""The local roles' main loops: the EventBridge tick and the SQS event source mapping, emulated.

Each runs in its own process (see ``supervisor``) and talks to the emulator over HTTP, exactly as the
Lambda functions talk to AWS.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, cast

from functions.core import aws
from functions.core.observability import logger
from functions.core.settings import Settings
from punctual.local.gateway import LambdaContext

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
    from functions.dispatcher.handler import handler

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


def _poll_forever(settings: Settings, batch_size: int, queue_arn: str) -> None:
    from functions.worker.handler import handler

    sqs: Any = aws.client("sqs", settings)
    while True:
        try:
            response = sqs.receive_message(
                QueueUrl=settings.queue_url,
                MaxNumberOfMessages=batch_size,
                WaitTimeSeconds=2,
                # Short, unlike Lambda's poller (which uses the queue's): a worker process killed right
                # after receiving gives its messages back in seconds. The handler then holds each
                # message for exactly as long as it needs.
                VisibilityTimeout=RECEIVE_VISIBILITY_SECONDS,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
        except Exception:
            logger.exception("receive failed")
            time.sleep(1)
            continue
        messages = response.get("Messages") or []
        if not messages:
            continue
        context = LambdaContext(function_name="punctual-worker-local", aws_request_id=uuid.uuid4().hex)
        try:
            result = handler(_to_event(messages, queue_arn, settings.region), cast(Any, context))
            failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
        except Exception:  # an invocation error returns the whole batch, as Lambda does
            logger.exception("worker invocation failed")
            continue
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=settings.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )


def run_worker(settings: Settings, concurrency: int, batch_size: int = 10) -> None:
    """Like Lambda's SQS event source mapping: several pollers, each invoking the handler per batch."""
    sqs: Any = aws.client("sqs", settings)
    queue_arn = sqs.get_queue_attributes(QueueUrl=settings.queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    threads = [
        threading.Thread(
            target=_poll_forever, args=(settings, batch_size, queue_arn), name=f"poller-{i}", daemon=True
        )
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

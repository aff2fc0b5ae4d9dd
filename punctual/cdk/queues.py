"""The SQS work queue and its dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual_functions.core.resources import (
    DLQ_RETENTION_SECONDS,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
    deployed_visibility_seconds,
)

# A message is redriven to the DLQ after WORK_QUEUE_MAX_RECEIVE_COUNT receives; it must get there
# before the work queue's retention would silently delete it.
WORK_QUEUE_RETENTION = Duration.days(4)


def work_queue_visibility(batching_window_seconds: int) -> Duration:
    """AWS's guidance for an SQS event source (punctual_functions/core/resources.py). Crash recovery does not
    wait for it: the worker hides each message only for as long as it needs it, and gives back within
    seconds any record that fails (punctual_functions/worker/batch.py)."""
    return Duration.seconds(deployed_visibility_seconds(batching_window_seconds))


class WorkQueues(Construct):
    """Encrypted (SSE-SQS), TLS-only queues; a message received too often moves to the DLQ.

    CloudFormation names them: prod keeps them when the stack is deleted, and a fixed name would make
    the next deploy of the same stack fail on the queue that is still there.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SchedulerProps,
        visibility_timeout: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        if (
            WORK_QUEUE_MAX_RECEIVE_COUNT * visibility_timeout.to_seconds()
            >= WORK_QUEUE_RETENTION.to_seconds()
        ):
            raise ValueError(
                "the work queue would delete a failing message before redriving it to the DLQ: "
                "max receive count x visibility timeout must stay below its retention period"
            )
        removal = RemovalPolicy.RETAIN if config.is_production else RemovalPolicy.DESTROY
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            retention_period=Duration.seconds(DLQ_RETENTION_SECONDS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=removal,
        )
        self.work_queue = sqs.Queue(
            self,
            "WorkQueue",
            visibility_timeout=visibility_timeout,
            retention_period=WORK_QUEUE_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=WORK_QUEUE_MAX_RECEIVE_COUNT
            ),
            removal_policy=removal,
        )

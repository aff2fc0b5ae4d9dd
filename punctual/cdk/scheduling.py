"""What makes the functions run: the dispatcher's minute tick and the worker's SQS event source."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual_functions.core.resources import TICK_SECONDS


class Scheduling(Construct):
    """An EventBridge rule every minute, and batches of work messages with partial-failure reports.

    Nothing here makes the dispatcher a singleton: a late tick may overlap the next one. That is safe:
    dispatching an occurrence twice names the same run (its id is derived from job and time), and the
    worker's conditional start runs it once.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SchedulerProps,
        dispatcher: lambda_.IFunction,
        worker: lambda_.IFunction,
        work_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tick = events.Rule(
            self,
            "DispatcherTick",
            description="Punctual: sweep due triggers every minute",
            schedule=events.Schedule.rate(Duration.seconds(TICK_SECONDS)),
            # Delivery retries are pointless after a minute: the next tick covers the same buckets.
            targets=[targets.LambdaFunction(dispatcher, retry_attempts=2, max_event_age=Duration.minutes(1))],
        )
        # No batching window by default: a window holds records back to fill a batch, and every
        # second a message waits is a second of the worker's hold before its due time. Only a batch
        # above 10 needs one (the config refuses it without).
        window = config.worker_batching_window_seconds
        # Provisioned mode or a maximum concurrency: AWS takes one of the two (the config refuses both).
        pollers = config.worker_provisioned_pollers
        poller_config = (
            None
            if pollers is None
            else lambda_.ProvisionedPollerConfig(minimum_pollers=pollers[0], maximum_pollers=pollers[1])
        )
        self.work_source = event_sources.SqsEventSource(
            work_queue,
            batch_size=config.worker_batch_size,
            max_batching_window=Duration.seconds(window) if window else None,
            report_batch_item_failures=True,
            max_concurrency=config.worker_maximum_concurrency,
            provisioned_poller_config=poller_config,
        )
        worker.add_event_source(self.work_source)

"""The Punctual stack: composes one construct per capability and exports what a client needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.api import Api
from infra.config import DeploymentConfig
from infra.functions import Functions
from infra.monitoring import Monitoring
from infra.queues import WorkQueues, work_queue_visibility
from infra.scheduling import Scheduling
from infra.storage import Storage


class PunctualStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        code_dir: Path,
        layer_dir: Path,
        exchange_layer_dir: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        storage = Storage(self, "Storage", config=config)
        queues = WorkQueues(
            self,
            "Queues",
            config=config,
            visibility_timeout=work_queue_visibility(config.worker_batching_window_seconds),
        )
        functions = Functions(
            self,
            "Functions",
            config=config,
            table=storage.table,
            index_names=storage.index_names,
            queues=queues,
            code_dir=code_dir,
            layer_dir=layer_dir,
            exchange_layer_dir=exchange_layer_dir,
        )
        Scheduling(
            self,
            "Scheduling",
            config=config,
            dispatcher=functions.dispatcher,
            worker=functions.worker,
            work_queue=queues.work_queue,
        )
        api = Api(self, "Api", config=config, handler=functions.api)
        monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            api=api.gateway,
            api_function=functions.api,
            dispatcher=functions.dispatcher,
            dispatcher_logs=functions.log_groups["dispatcher"],
            worker=functions.worker,
            worker_logs=functions.log_groups["worker"],
            queues=queues,
            table=storage.table,
        )
        if monitoring.alarm_topic_key is not None and config.may_target_sns:
            # Jobs may then alert to the stack's own alarm topic (allowed_target_arns names it once
            # it exists, or allows '*'), which its key encrypts; no setting can name that key.
            functions.allow_worker_target_keys(monitoring.alarm_topic_key.key_arn)

        CfnOutput(self, "ApiUrl", value=api.url, description="Base URL of the API (append v1/...)")
        CfnOutput(self, "TableName", value=storage.table.table_name)
        CfnOutput(self, "WorkQueueUrl", value=queues.work_queue.queue_url)
        CfnOutput(self, "DeadLetterQueueUrl", value=queues.dead_letter_queue.queue_url)
        CfnOutput(
            self,
            "AlarmTopicArn",
            value=monitoring.alarm_topic.topic_arn,
            description="Every alarm notifies this SNS topic (alarm_email subscribes to it)",
        )
        for index, key in enumerate(api.api_keys):
            CfnOutput(
                self,
                f"ApiKeyId{index}",
                value=key.key_id,
                description="aws apigateway get-api-key --include-value --api-key <id> shows the key",
            )

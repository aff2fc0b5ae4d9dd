"""``Scheduler``: the whole Punctual service (table, queues, functions, schedule, API, alarms,
dashboard) as one construct, composed of one construct per capability. The project's own app holds
one in ``PunctualStack`` (``infra/stack.py``); docs/architecture.md, "Being built: schedules as code",
has where it goes next (a construct library users add to their own apps)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.api import Api
from infra.config import DeploymentConfig
from infra.functions import Functions
from infra.monitoring import Monitoring
from infra.queues import WorkQueues, work_queue_visibility
from infra.scheduling import Scheduling
from infra.storage import Storage


class Scheduler(Construct):
    """Punctual, deployed by ``config``. What a user wires to: ``api_url``, ``alarm_topic``,
    ``table``; and, for the stack's outputs, ``api``, ``queues``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        code_dir: Path,
        layer_dir: Path,
        exchange_layer_dir: Path,
    ) -> None:
        super().__init__(scope, construct_id)
        storage = Storage(self, "Storage", config=config)
        self.queues = WorkQueues(
            self,
            "Queues",
            config=config,
            visibility_timeout=work_queue_visibility(config.worker_batching_window_seconds),
        )
        self.functions = Functions(
            self,
            "Functions",
            config=config,
            table=storage.table,
            index_names=storage.index_names,
            queues=self.queues,
            code_dir=code_dir,
            layer_dir=layer_dir,
            exchange_layer_dir=exchange_layer_dir,
        )
        Scheduling(
            self,
            "Scheduling",
            config=config,
            dispatcher=self.functions.dispatcher,
            worker=self.functions.worker,
            work_queue=self.queues.work_queue,
        )
        self.api = Api(self, "Api", config=config, handler=self.functions.api)
        monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            api=self.api.gateway,
            api_function=self.functions.api,
            dispatcher=self.functions.dispatcher,
            dispatcher_logs=self.functions.log_groups["dispatcher"],
            worker=self.functions.worker,
            worker_logs=self.functions.log_groups["worker"],
            queues=self.queues,
            table=storage.table,
        )
        if monitoring.alarm_topic_key is not None and config.may_target_sns:
            # Jobs may then alert to the stack's own alarm topic (allowed_target_arns names it once
            # it exists, or allows '*'), which its key encrypts; no setting can name that key.
            self.functions.allow_worker_target_keys(monitoring.alarm_topic_key.key_arn)
        self.table: dynamodb.ITable = storage.table
        self.alarm_topic: sns.ITopic = monitoring.alarm_topic

    @property
    def api_url(self) -> str:
        """The API's base URL (append ``v1/...``)."""
        return self.api.url

"""The three Lambda functions (api, dispatcher, worker): one role each, with only what it uses."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import jsii
from aws_cdk import ArnFormat, Aws, Duration, IStableStringProducer, Lazy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk import permissions
from punctual.cdk.assets import LAMBDA_PYTHON_VERSION, LambdaAssets
from punctual.cdk.config import ALLOW_ALL_TARGETS, WORKER_RECURSIVE_LOOP, SchedulerProps, target_service
from punctual.cdk.deployment_items import item_writer
from punctual.cdk.grants import TargetGrants
from punctual.cdk.log_groups import log_group
from punctual.cdk.queues import WorkQueues
from punctual_functions.core.resources import (
    API_MEMORY_MB,
    DISPATCHER_MEMORY_MB,
    WORKER_MEMORY_MB,
    WORKER_TIMEOUT_SECONDS,
)
from punctual_functions.core.store.deployment import allowed_targets_item

# Python 3.13, not the newest runtime: the assets ship bytecode, which is specific to one Python
# minor version, compiled at build time by that very version (punctual/cdk/assets.py), and the build
# machines have a 3.13 but no 3.14. Without bytecode every cold start compiled every module.
RUNTIME: Final = lambda_.Runtime.PYTHON_3_13
RUNTIME_REASON: Final = (
    "Python 3.13 rather than the newest runtime: the functions ship bytecode compiled at build time by "
    "exactly the runtime's Python version (a read-only /var/task would otherwise recompile every module "
    "on each cold start), and the build has a 3.13 interpreter. Supported by Lambda until 2029."
)
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
if RUNTIME.name != f"python{LAMBDA_PYTHON_VERSION}":
    raise RuntimeError("the layer's wheels and the functions' runtime must be the same Python version")

# Lambda's ceiling; the longest job timeout leaves room in it for the wait and the outcome's write.
WORKER_TIMEOUT: Final = Duration.seconds(WORKER_TIMEOUT_SECONDS)
# Ticks come every minute; a slow sweep may overlap the next one (dispatchers are safe to run twice).
DISPATCHER_TIMEOUT: Final = Duration.minutes(3)
# API Gateway gives up on an integration after 29 s.
API_TIMEOUT: Final = Duration.seconds(29)

_XRAY_REASON: Final = (
    "Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level "
    "permissions, so CDK grants them on '*'. They write traces only and read no data."
)


# Lambda's limit on one function's environment variables, names and values together; a value known
# only at deploy time (a table's name, a queue's URL) is counted at _TOKEN_BYTES.
ENVIRONMENT_BYTES: Final = 4096
_TOKEN_BYTES: Final = 128
# How a string holds a deploy-time value until the template is written.
_ENCODED_TOKEN: Final = re.compile(r"\$\{Token\[[^\]]+\]\}")


def environment_size(environment: Mapping[str, str]) -> int:
    """The bytes Lambda counts against ENVIRONMENT_BYTES, each deploy-time value at its estimate."""
    size = 0
    for name, value in environment.items():
        size += len(name.encode())
        literal, tokens = _ENCODED_TOKEN.subn("", value)
        size += len(literal.encode()) + _TOKEN_BYTES * tokens
    return size


def check_environment_size(environment: Mapping[str, str]) -> None:
    """Refuse at synth what Lambda would refuse at deploy (the long settings: http_allow_list)."""
    size = environment_size(environment)
    if size > ENVIRONMENT_BYTES:
        raise ValueError(
            f"the functions' environment variables take about {size} bytes, over Lambda's limit of "
            f"{ENVIRONMENT_BYTES} bytes for a function's variables (names and values): shorten "
            "http_allow_list (a CIDR covers many hosts)"
        )


@dataclass(frozen=True)
class _FunctionSpec:
    construct_id: str
    role_name: str
    handler: str
    memory_mb: int
    timeout: Duration
    description: str
    # Lambda's recursive-loop detection: its default (Terminate) unless the function continues chains.
    recursive_loop: lambda_.RecursiveLoop = lambda_.RecursiveLoop.TERMINATE


@jsii.implements(IStableStringProducer)
class _Joined:
    """The patterns given, then the ARNs added until synthesis, comma-separated."""

    def __init__(self, first: list[str], added: list[str]) -> None:
        self._first = first
        self._added = added

    def produce(self) -> str:
        return ",".join([*self._first, *self._added])


class Functions(Construct):
    """Code from ``punctual_functions/``, dependencies from a layer built without Docker, arm64, X-Ray,
    JSON logs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SchedulerProps,
        table: dynamodb.ITable,
        index_names: list[str],
        queues: WorkQueues,
        assets: LambdaAssets,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._target_keys_suppressed = False
        self._allowed_keys: set[str] = set()
        self.log_groups: dict[str, logs.LogGroup] = {}
        settings = config.runtime_settings(
            table_name=table.table_name,
            queue_url=queues.work_queue.queue_url,
            dlq_url=queues.dead_letter_queue.queue_url,
            region=Aws.REGION,
            account_id=Aws.ACCOUNT_ID,
            partition=Aws.PARTITION,
        )
        environment = settings.to_env()
        del environment["PUNCTUAL_ALLOWED_TARGET_ARNS"]  # the table's item holds it (below)
        self._environment = {**environment, "POWERTOOLS_SERVICE_NAME": "punctual"}
        check_environment_size(self._environment)
        self._code = lambda_.Code.from_asset(str(assets.code_dir))
        self._layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(assets.layer_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="Punctual's Python dependencies: Powertools, pydantic, croniter, tzdata (arm64)",
        )
        # The API's alone: it expands exchanges' closed days when a calendar is written (pandas).
        self._exchange_layer = lambda_.LayerVersion(
            self,
            "ExchangeCalendars",
            code=lambda_.Code.from_asset(str(assets.exchange_layer_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="Punctual API's exchange-calendars with pandas and numpy (arm64)",
        )

        self.api = self._function(
            _FunctionSpec(
                "Api",
                "api",
                "punctual_functions.api.handler.handler",
                API_MEMORY_MB,
                API_TIMEOUT,
                "Punctual HTTP API",
            ),
            layers=[self._layer, self._exchange_layer],
        )
        self.dispatcher = self._function(
            _FunctionSpec(
                "Dispatcher",
                "dispatcher",
                "punctual_functions.dispatcher.handler.handler",
                DISPATCHER_MEMORY_MB,
                DISPATCHER_TIMEOUT,
                "Punctual dispatcher: dispatches due triggers to the work queue, every minute",
            ),
            # A failed tick is not retried: the next one, a minute later, sweeps the same buckets.
            retry_attempts=0,
            max_event_age=Duration.minutes(1),
            # Only if asked for (dispatcher_reserved_concurrency): a new account cannot spare any.
            reserved_concurrency=config.dispatcher_concurrency,
        )
        self.worker = self._function(
            _FunctionSpec(
                "Worker",
                "worker",
                "punctual_functions.worker.handler.handler",
                WORKER_MEMORY_MB,
                WORKER_TIMEOUT,
                "Punctual worker: executes runs from the work queue against their targets",
                recursive_loop=lambda_.RecursiveLoop(WORKER_RECURSIVE_LOOP.upper()),
            )
        )

        self._grant_api(table, index_names, queues)
        self._grant_dispatcher(table, queues)
        self._grant_worker(table, queues)
        # Targets allowed by allow_target join the configured patterns when the template is written
        # (the list is read lazily, after every construct of the app has had its say), into an item of
        # the table that the API reads: hundreds of ARNs do not fit Lambda's 4 KB of environment.
        self._allowed_targets: list[str] = []
        self._write_allow_list(config, table)

    @property
    def code(self) -> lambda_.Code:
        """The functions' code (the ``punctual_functions`` package), for another function of the service."""
        return self._code

    @property
    def layer(self) -> lambda_.ILayerVersion:
        """The dependency layer (Powertools, pydantic, ...), for another function of the service."""
        return self._layer

    # -------------------------------------------------------------------------------------------

    def _function(
        self,
        spec: _FunctionSpec,
        *,
        retry_attempts: int | None = None,
        max_event_age: Duration | None = None,
        reserved_concurrency: int | None = None,
        layers: list[lambda_.ILayerVersion] | None = None,
    ) -> lambda_.Function:
        logs_of_function = log_group(self, f"{spec.construct_id}Logs", self._config)
        self.log_groups[spec.role_name] = logs_of_function

        role = iam.Role(
            self,
            f"{spec.construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Punctual {spec.role_name} function: only the resources it uses",
        )
        function = lambda_.Function(
            self,
            spec.construct_id,
            function_name=f"{self._config.name_prefix}-{spec.role_name}",
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=spec.handler,
            code=self._code,
            layers=layers or [self._layer],
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            role=role,
            environment=self._environment,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.INFO,
            log_group=logs_of_function,
            retry_attempts=retry_attempts,
            max_event_age=max_event_age,
            reserved_concurrent_executions=reserved_concurrency,
            recursive_loop=spec.recursive_loop,
        )
        logs_of_function.grant_write(role)
        NagSuppressions.add_resource_suppressions(
            role,
            [NagPackSuppression(id="AwsSolutions-IAM5", reason=_XRAY_REASON, applies_to=["Resource::*"])],
            apply_to_children=True,
        )
        NagSuppressions.add_resource_suppressions(
            function, [NagPackSuppression(id="AwsSolutions-L1", reason=RUNTIME_REASON)]
        )
        return function

    @staticmethod
    def _role(function: lambda_.Function) -> iam.IRole:
        role = function.role
        assert role is not None
        return role

    def _grant_api(self, table: dynamodb.ITable, index_names: list[str], queues: WorkQueues) -> None:
        role = self._role(self.api)
        role.add_to_principal_policy(permissions.table_items(table, "api"))
        for index_name in index_names:  # "list my jobs"
            role.add_to_principal_policy(permissions.index_query(table, index_name))
        # Jobs due within the look-ahead are queued at once; /v1/stats reads both queues' depth.
        role.add_to_principal_policy(permissions.queue_actions(["sqs:SendMessage"], queues.work_queue))
        role.add_to_principal_policy(
            permissions.queue_actions(["sqs:GetQueueAttributes"], queues.work_queue, queues.dead_letter_queue)
        )

    def _grant_dispatcher(self, table: dynamodb.ITable, queues: WorkQueues) -> None:
        role = self._role(self.dispatcher)
        role.add_to_principal_policy(permissions.table_items(table, "dispatcher"))
        role.add_to_principal_policy(permissions.queue_actions(["sqs:SendMessage"], queues.work_queue))
        if self._config.sweep_invocations > 1:
            # A tick fans its sweep out by invoking this same function. The ARN is spelled from the
            # function's fixed name: a reference to the function itself would be a circular dependency
            # (the function waits for its role's policy).
            own_arn = Stack.of(self).format_arn(
                service="lambda",
                resource="function",
                resource_name=f"{self._config.name_prefix}-dispatcher",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[own_arn])
            )

    def allow_target(self, service: str, arn: str) -> None:
        """Let jobs target the resource ``arn`` of ``service`` (a key of TARGET_ACTIONS): the API finds
        it on the allow-list, and the worker may do exactly the one action delivery needs, on exactly
        that resource (punctual/cdk/grants.py). Once per resource, however many jobs target it."""
        if arn in self._allowed_targets:
            return
        self._allowed_targets.append(arn)
        if ALLOW_ALL_TARGETS not in self._config.allowed_target_arns:
            self._target_grants.add(service, arn)

    def _write_allow_list(self, config: SchedulerProps, table: dynamodb.ITable) -> None:
        """The item of the table that holds the allow-list (punctual_functions/core/store/deployment.py),
        written by CDK's AwsCustomResource (one PutItem) on every deploy that changes the list. The API
        reads it again when a target is not on its copy, so a Job created by the same deploy is never
        refused for an old copy."""
        patterns = Lazy.string(_Joined([*config.allowed_target_arns], self._allowed_targets))
        writer = item_writer(
            self,
            "AllowedTargets",
            config=self._config,
            table=table,
            item=allowed_targets_item(patterns),
            physical_id="punctual-allowed-targets",
        )
        self.allow_list_writer = writer
        writer_role = writer.grant_principal
        if isinstance(writer_role, Construct):
            NagSuppressions.add_resource_suppressions(
                writer_role,
                [
                    NagPackSuppression(
                        id="AwsSolutions-IAM4",
                        reason=(
                            "CDK's AwsCustomResource: its function's role is CDK's own, with the "
                            "AWSLambdaBasicExecutionRole managed policy (writing its logs); the one call "
                            "it makes is granted on the allow-list's item alone (dynamodb:LeadingKeys)."
                        ),
                        applies_to=[
                            "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                            "AWSLambdaBasicExecutionRole"
                        ],
                    )
                ],
                apply_to_children=True,
            )

    def allow_worker_target_keys(self, *key_arns: str) -> None:
        """Let the worker publish to targets encrypted with these keys (target_kms_key_arns, and the
        stack's own alarm-topic key): exactly TARGET_KEY_ACTIONS, on exactly these keys (each once)."""
        key_arns = tuple(arn for arn in dict.fromkeys(key_arns) if arn not in self._allowed_keys)
        if not key_arns:
            return
        self._allowed_keys.update(key_arns)
        role = self._role(self.worker)
        role.add_to_principal_policy(permissions.target_key_statement(key_arns))
        if self._target_keys_suppressed:
            return
        self._target_keys_suppressed = True
        NagSuppressions.add_resource_suppressions(
            role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "kms:GenerateDataKey* is what AWS documents a publisher to an SNS topic encrypted "
                        "with a customer-managed key needs (with kms:Decrypt); it is granted on the named "
                        "keys of the deployment's targets only, never on every key."
                    ),
                    applies_to=["Action::kms:GenerateDataKey*"],
                )
            ],
            apply_to_children=True,
        )

    def _grant_worker(self, table: dynamodb.ITable, queues: WorkQueues) -> None:
        role = self._role(self.worker)
        role.add_to_principal_policy(permissions.table_items(table, "worker"))
        role.add_to_principal_policy(permissions.scoped_table_items(table, "worker"))  # limits' slots
        # Receive and delete come with the event source; the heartbeat and retries set visibility.
        role.add_to_principal_policy(
            permissions.queue_actions(["sqs:ChangeMessageVisibility"], queues.work_queue)
        )
        # After the last attempt the worker copies the message to the DLQ itself; on a message's last
        # delivery, a run another worker still holds gets a fresh copy of it on the work queue.
        role.add_to_principal_policy(
            permissions.queue_actions(["sqs:SendMessage"], queues.work_queue, queues.dead_letter_queue)
        )
        patterns = self._config.allowed_target_arns
        if ALLOW_ALL_TARGETS in patterns:
            for statement in permissions.target_statements(patterns):
                role.add_to_principal_policy(statement)
        self._target_grants = TargetGrants(
            self,
            "TargetGrants",
            role=role,
            reason=(
                "The worker may deliver to exactly the job targets the operator allowed in the "
                "allowed_target_arns context; these ARN patterns are that configuration."
            ),
        )
        for pattern in patterns:
            if pattern != ALLOW_ALL_TARGETS:
                self._target_grants.add(str(target_service(pattern)), pattern)
        if self._config.target_kms_key_arns:
            self.allow_worker_target_keys(*self._config.target_kms_key_arns)
        if ALLOW_ALL_TARGETS in patterns:
            reason = (
                "The deployment's allowed_target_arns is '*': the operator chose to let jobs target any "
                "Lambda function, SQS queue, SNS topic or EventBridge bus, so the worker may invoke, send, "
                "publish and put events on any resource (and X-Ray, as for every function)."
            )
            NagSuppressions.add_resource_suppressions(
                role,
                [NagPackSuppression(id="AwsSolutions-IAM5", reason=reason, applies_to=["Resource::*"])],
                apply_to_children=True,
            )

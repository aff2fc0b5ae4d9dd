"""``Scheduler``: the whole Punctual service (table, queues, functions, schedule, API, alarms,
dashboard) as one construct, composed of one construct per capability, and what a user wires to it:
``api_url``, ``grant_invoke``, ``allow_target``, ``alarm_topic``. docs/cdk.md shows it in an app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk.api import Api
from punctual.cdk.api_account import ApiGatewayAccount
from punctual.cdk.assets import LambdaAssets
from punctual.cdk.config import SchedulerProps
from punctual.cdk.functions import ARCHITECTURE, RUNTIME, RUNTIME_REASON, Functions
from punctual.cdk.job_provider import JobProvider
from punctual.cdk.monitoring import Monitoring
from punctual.cdk.queues import WorkQueues, work_queue_visibility
from punctual.cdk.rights import DeliveryRightsItem
from punctual.cdk.scheduling import Scheduling
from punctual.cdk.storage import Storage

# The caller's one action on the API (API Gateway's IAM authorization).
INVOKE_ACTION = "execute-api:Invoke"
# How cdk-nag names the resource grant_invoke grants it on (.../<stage>/*/v1/*).
_API_ROUTES_RESOURCE = r"/^Resource::arn:<AWS::Partition>:execute-api:.*\/v1\/\*$/g"


class Scheduler(Construct):
    """Punctual, deployed with ``props`` (every setting has a default) from ``assets`` (by default the
    Lambda code of the installed package, its layers built on the first synth: ``LambdaAssets.build``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: SchedulerProps | None = None,
        assets: LambdaAssets | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        config = props or SchedulerProps()
        assets = assets or LambdaAssets.build()
        self.props = config
        self._job_provider: JobProvider | None = None
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
            assets=assets,
        )
        # Who may deliver where: the setting's rights and those allow_target gives.
        self.delivery_rights = DeliveryRightsItem(self, "DeliveryRights", config=config, table=storage.table)
        Scheduling(
            self,
            "Scheduling",
            config=config,
            dispatcher=self.functions.dispatcher,
            worker=self.functions.worker,
            work_queue=self.queues.work_queue,
        )
        self.api = Api(self, "Api", config=config, handler=self.functions.api)
        if config.api_auth == "api_key" and config.api_gateway_cloudwatch_role == "if_absent":
            account = ApiGatewayAccount(
                self,
                "ApiGatewayAccount",
                props=config,
                code=self.functions.code,
                layer=self.functions.layer,
                runtime=RUNTIME,
                architecture=ARCHITECTURE,
                runtime_reason=RUNTIME_REASON,
            )
            # The stage's logs need the account's role named before the stage is made.
            self.api.rest_api.deployment_stage.node.add_dependency(account.resource)
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

    @property
    def jobs_owner(self) -> iam.Role:
        """The role that owns the jobs this app declares (``Job``): the custom resource calls the API as
        it. Let your team assume it to see and act on them (add them to its
        ``assume_role_policy``, then ``punctual jobs list --role-arn <its ARN>``)."""
        return self.job_provider.jobs_owner

    @property
    def job_provider(self) -> JobProvider:
        """The jobs' custom resource provider, made with the first ``Job`` (a Scheduler without jobs
        has none)."""
        if self._job_provider is None:
            if self.api.http_api is None:
                raise ValueError(
                    "Job: a Scheduler with api_auth=api_key cannot hold Jobs: the jobs' custom resource "
                    "calls the API with SigV4, as the jobs' owner role, which only api_auth=iam (the "
                    "default) takes. Deploy the Jobs with a Scheduler in iam mode, or create those jobs "
                    "with the API and a key."
                )
            self._job_provider = JobProvider(
                self, "Jobs", props=self.props, functions=self.functions, api_url=self.api_url
            )
            self.grant_invoke(self._job_provider.jobs_owner)
        return self._job_provider

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (a role, a function, a user) call the API's ``/v1/...`` routes: the jobs it
        creates belong to its role (or its session, with owner_mode=session). An API in api_key mode
        authorizes callers by key, not IAM: nothing to grant there."""
        if self.api.http_api is None:
            raise ValueError("grant_invoke: this Scheduler's API authorizes by API key (api_auth=api_key)")
        routes = self.api.http_api.arn_for_execute_api("*", "/v1/*", self.api.http_stage.stage_name)
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=[INVOKE_ACTION], resource_arns=[routes])
        principal = grantee.grant_principal
        if isinstance(principal, Construct):
            NagSuppressions.add_resource_suppressions(
                principal,
                [
                    NagPackSuppression(
                        id="AwsSolutions-IAM5",
                        reason=(
                            "execute-api:Invoke on the Punctual API's /v1/ routes, every method: the "
                            "caller may use the whole API, which keeps each caller's jobs to itself."
                        ),
                        applies_to=[
                            {"regex": "/^Resource::arn:<AWS::Partition>:execute-api:.*\\/v1\\/\\*$/g"}
                        ],
                    )
                ],
                apply_to_children=True,
            )
        return grant

    def allow_target(self, target: Any, *, owners: Sequence[str | iam.IRole] | None = None) -> None:
        """Let jobs deliver to ``target``, a Lambda function, an SQS queue, an SNS topic or an
        EventBridge bus of this app: it joins the allow-list the API checks a job's target against,
        the worker may do exactly what delivery needs (invoke, send, publish, put events) on it, and
        use its KMS key if it has one (encrypt a message for a queue or a topic).

        ``owners`` may deliver to it (docs/security.md): owners as the API names them (a role's ARN,
        an API key's id, ``*`` for every owner) or roles (every session of the role, or each of them
        with owner_mode=session). By default the owner of this app's ``Job``s (``jobs_owner``), if it
        has any; nobody else."""
        service, arn, key = _target_of(target)
        self.functions.allow_target(service, arn)
        if key is not None:
            self.functions.allow_worker_target_keys(key.key_arn)
        if owners is None:
            self.delivery_rights.give(self._own_jobs_owner, arn)
        else:
            named = [self._owner_name(owner) for owner in owners]
            self.delivery_rights.give(lambda: named, arn)

    def _own_jobs_owner(self) -> list[str]:
        """The owner the API sees for this app's Jobs (none before the first Job)."""
        if self._job_provider is None:
            return []
        return [self._owner_name(self._job_provider.jobs_owner)]

    def _owner_name(self, owner: str | iam.IRole) -> str:
        """An owner as the API names it: a string as it is; a role's ARN without its path (what
        ``owner_of_arn`` makes of its sessions), or each of its sessions with owner_mode=session."""
        if isinstance(owner, str):
            return owner
        stack = Stack.of(self)
        if self.props.owner_mode == "session":
            return f"arn:{stack.partition}:sts::{stack.account}:assumed-role/{owner.role_name}/*"
        return f"arn:{stack.partition}:iam::{stack.account}:role/{owner.role_name}"


def _target_of(target: Any) -> tuple[str, str, Any]:
    """(service, ARN, KMS key or None) of a function, queue, topic or bus (jsii interfaces cannot be
    checked with isinstance: each is told by the ARN attribute it has)."""
    for attribute, service, key_attribute in (
        ("function_arn", "lambda", None),
        ("queue_arn", "sqs", "encryption_master_key"),
        ("topic_arn", "sns", "master_key"),
        ("event_bus_arn", "events", None),
    ):
        arn = getattr(target, attribute, None)
        if isinstance(arn, str):
            key = getattr(target, key_attribute, None) if key_attribute else None
            return service, arn, key
    raise TypeError(
        f"allow_target: {target!r} is not a Lambda function, SQS queue, SNS topic or EventBridge bus"
    )

"""The custom resource provider behind every ``Job`` of one ``Scheduler``: the onEvent function (the
handler of ``punctual_functions/cfn/handler.py``), the role that owns the jobs, and CDK's Provider framework.

Why CDK's ``custom_resources.Provider`` rather than crhelper: the framework answers CloudFormation
itself (the pre-signed S3 response, a timeout's failure, the log of each request), so the handler is
one function that returns or raises, unit-tested without a CloudFormation event's S3 URL; crhelper
would put that answering inside our function and its package into the Lambda asset.

The jobs belong to a role of their own (``jobs_owner``), not to the function's: the API keeps each
caller's jobs to itself, and a team sees and acts on its stack's jobs by assuming that role
(``punctual jobs list --role-arn ...``), which the function's own role could not be lent for.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.functions import ARCHITECTURE, RUNTIME, RUNTIME_REASON, Functions
from punctual.cdk.providers import on_event_role, provider

# The custom resource's type in the template (Custom::<name>).
RESOURCE_TYPE: Final = "Custom::PunctualJob"
# A CloudFormation request makes at most three API calls (read, patch; or a create and the cleanup of
# a failed one) after assuming the owner role, and each sends again for up to 120 s while the answers
# are transient (punctual_functions/cfn/api.py: a first deploy's IAM propagation, routes not live yet,
# throttling), each attempt bounded to 10 s: at most about eight minutes.
ON_EVENT_TIMEOUT: Final = Duration.minutes(9)
ON_EVENT_MEMORY_MB: Final = 256


class JobProvider(Construct):
    """``service_token`` for the jobs' custom resources; ``jobs_owner``, the role the jobs belong to."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: SchedulerProps,
        functions: Functions,
        api_url: str,
    ) -> None:
        super().__init__(scope, construct_id)
        role, logs_of_function = on_event_role(
            self, props, "Punctual jobs' custom resource: assumes the jobs' owner role, nothing else"
        )
        self.jobs_owner = iam.Role(
            self,
            "JobsOwner",
            assumed_by=iam.ArnPrincipal(role.role_arn),
            description="Owns the Punctual jobs of this app's Job constructs (see them: punctual --role-arn)",
        )
        self.on_event = lambda_.Function(
            self,
            "OnEvent",
            description="Punctual jobs' custom resource: creates, updates and cancels jobs through the API",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="punctual_functions.cfn.handler.handler",
            code=functions.code,
            layers=[functions.layer],
            memory_size=ON_EVENT_MEMORY_MB,
            timeout=ON_EVENT_TIMEOUT,
            role=role,
            environment={
                "PUNCTUAL_API_URL": api_url,
                "PUNCTUAL_JOBS_OWNER_ROLE_ARN": self.jobs_owner.role_arn,
                "POWERTOOLS_SERVICE_NAME": "punctual-jobs",
            },
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.INFO,
            log_group=logs_of_function,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[self.jobs_owner.role_arn])
        )
        NagSuppressions.add_resource_suppressions(
            self.on_event, [NagPackSuppression(id="AwsSolutions-L1", reason=RUNTIME_REASON)]
        )
        self.service_token = provider(self, self.on_event, props).service_token

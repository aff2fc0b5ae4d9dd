"""The ``Job`` custom resource's Lambda function: the ``onEvent`` handler of CDK's Provider framework
(``job_resource.on_event``), calling the API at ``PUNCTUAL_API_URL`` signed with SigV4, as the role
named by ``PUNCTUAL_JOBS_OWNER_ROLE_ARN`` (the jobs' owner) when set, else as its own."""

from __future__ import annotations

import os
from typing import Any

from punctual_functions.cfn.api import HttpJobsApi
from punctual_functions.cfn.job_resource import on_event
from punctual_functions.core.observability import logger
from punctual_functions.core.sigv4 import sign_sigv4

OWNER_ROLE_ENV = "PUNCTUAL_JOBS_OWNER_ROLE_ARN"
SESSION_NAME = "punctual-job-resource"


def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    logger.info(
        "custom resource request",
        extra={
            "request": event.get("RequestType"),
            "resource": event.get("LogicalResourceId"),
            "physical_id": event.get("PhysicalResourceId"),
        },
    )
    answer = on_event(event, api_from_environment())
    logger.info("custom resource answered", extra={"physical_id": answer.get("PhysicalResourceId")})
    return answer


def api_from_environment() -> HttpJobsApi:
    region = os.environ.get("AWS_REGION") or "us-east-1"
    credentials = _credentials(os.environ.get(OWNER_ROLE_ENV))

    def sign(method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        return sign_sigv4(credentials, region, method, url, data, headers)

    return HttpJobsApi(os.environ["PUNCTUAL_API_URL"], sign)


def _credentials(role_arn: str | None) -> Any:
    """The function's own credentials, or the owner role's (assumed once per invocation: custom
    resource requests are few)."""
    import boto3

    session = boto3.session.Session()
    if not role_arn:
        return session.get_credentials()
    assumed = session.client("sts").assume_role(RoleArn=role_arn, RoleSessionName=SESSION_NAME)["Credentials"]
    return boto3.session.Session(
        aws_access_key_id=assumed["AccessKeyId"],
        aws_secret_access_key=assumed["SecretAccessKey"],
        aws_session_token=assumed["SessionToken"],
    ).get_credentials()

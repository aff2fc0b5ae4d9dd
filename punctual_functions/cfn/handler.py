"""The ``Job`` custom resource's Lambda function: the ``onEvent`` handler of CDK's Provider framework
(``job_resource.on_event``), calling the API at ``PUNCTUAL_API_URL`` signed with SigV4, as the role
named by ``PUNCTUAL_JOBS_OWNER_ROLE_ARN`` (the jobs' owner) when set, else as its own."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from punctual_functions.cfn.api import RETRY_FOR_SECONDS, HttpJobsApi, backoff
from punctual_functions.cfn.job_resource import on_event
from punctual_functions.core.clock import SYSTEM_CLOCK
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


def _credentials(
    role_arn: str | None,
    sleep: Callable[[float], None] = SYSTEM_CLOCK.sleep,
    monotonic: Callable[[], float] = SYSTEM_CLOCK.monotonic,
) -> Any:
    """The function's own credentials, or the owner role's (assumed once per invocation: custom
    resource requests are few). A role created with the stack may refuse to be assumed for a few
    seconds, until IAM has propagated it and its trust policy: AccessDenied is tried again, with
    the API's backoff, for as long as a request to the API would be."""
    import boto3
    from botocore.exceptions import ClientError

    session = boto3.session.Session()
    if not role_arn:
        return session.get_credentials()
    sts = session.client("sts")
    deadline = monotonic() + RETRY_FOR_SECONDS
    attempt = 0
    while True:
        try:
            assumed = sts.assume_role(RoleArn=role_arn, RoleSessionName=SESSION_NAME)["Credentials"]
            break
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "AccessDenied" or monotonic() >= deadline:
                raise
            logger.info(
                "owner role not assumable yet (IAM propagating): trying again", extra={"attempt": attempt}
            )
            sleep(max(0.0, min(backoff(attempt), deadline - monotonic())))
            attempt += 1
    return boto3.session.Session(
        aws_access_key_id=assumed["AccessKeyId"],
        aws_secret_access_key=assumed["SecretAccessKey"],
        aws_session_token=assumed["SessionToken"],
    ).get_credentials()

"""API Gateway's account-wide CloudWatch role, set only where the account has none (REST API mode).

A REST API's stage writes its access and execution logs through the one role the account's API
Gateway settings name: a stage with logs fails to deploy in an account that names none. CDK's
``cloudWatchRole`` sets the account's role unconditionally, replacing what another team's stack or
the console set there. This custom resource (the ``onEvent`` handler of CDK's Provider framework)
sets the deployment's role only if the account names none, and leaves the setting as it is on every
later request, Delete included: another API of the account may write its logs through it by then,
and the stack retains the role. A role created with the stack may be refused for a few seconds
("does not have required permissions") until IAM has propagated it: that is tried again, with the
``Job`` provider's backoff, for up to ``RETRY_FOR_SECONDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from punctual_functions.cfn.api import RETRY_FOR_SECONDS, backoff
from punctual_functions.core.clock import SYSTEM_CLOCK
from punctual_functions.core.observability import logger

PHYSICAL_ID: Final = "punctual-apigateway-account"
ROLE_PROPERTY: Final = "RoleArn"


def on_event(
    event: dict[str, Any],
    apigateway: Any,
    *,
    sleep: Callable[[float], None] = SYSTEM_CLOCK.sleep,
    monotonic: Callable[[], float] = SYSTEM_CLOCK.monotonic,
    retry_for: float = RETRY_FOR_SECONDS,
) -> dict[str, Any]:
    """Create or Update: the account's role, set to ``RoleArn`` if it had none. Delete: nothing."""
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    ours = str(event["ResourceProperties"][ROLE_PROPERTY])
    current = apigateway.get_account().get("cloudwatchRoleArn")
    if not current:
        _set_role(apigateway, ours, sleep, monotonic, retry_for)
        current = ours
        logger.info("account's API Gateway CloudWatch role set", extra={"role": ours})
    else:
        logger.info("account's API Gateway CloudWatch role kept", extra={"role": current})
    return {
        "PhysicalResourceId": PHYSICAL_ID,
        "Data": {"RoleArn": current, "SetByThisStack": "true" if current == ours else "false"},
    }


def _set_role(
    apigateway: Any,
    role_arn: str,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    retry_for: float,
) -> None:
    from botocore.exceptions import ClientError

    started = monotonic()
    attempt = 0
    while True:
        try:
            apigateway.update_account(
                patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}]
            )
            return
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            propagating = code == "BadRequestException" or code in (
                "TooManyRequestsException",
                "ConflictException",
            )
            if not propagating or monotonic() - started >= retry_for:
                raise
        sleep(backoff(attempt))
        attempt += 1


def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    import boto3

    logger.info("custom resource request", extra={"request": event.get("RequestType")})
    return on_event(event, boto3.client("apigateway"))

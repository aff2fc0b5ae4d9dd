"""The custom resource that names API Gateway's account-wide CloudWatch role only where the account
names none (API-key mode): it never replaces another's role, leaves the setting on Delete, and waits
out IAM's propagation of a new role."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from punctual_functions.cfn.apigateway_account import PHYSICAL_ID, on_event

OURS = "arn:aws:iam::123456789012:role/punctual-prod-ApiGatewayAccountCloudWatchRole"
THEIRS = "arn:aws:iam::123456789012:role/platform-apigateway-logs"


class Account:
    """API Gateway's account settings; ``refusals``: how many updates IAM's propagation refuses."""

    def __init__(self, role: str | None = None, refusals: int = 0) -> None:
        self.role = role
        self.refusals = refusals
        self.updates = 0

    def get_account(self) -> dict[str, Any]:
        return {"cloudwatchRoleArn": self.role} if self.role else {}

    def update_account(self, patchOperations: list[dict[str, str]]) -> dict[str, Any]:
        self.updates += 1
        if self.refusals:
            self.refusals -= 1
            message = "The role ARN does not have required permissions set to API Gateway"
            raise ClientError({"Error": {"Code": "BadRequestException", "Message": message}}, "UpdateAccount")
        (operation,) = patchOperations
        assert operation["path"] == "/cloudwatchRoleArn" and operation["op"] == "replace"
        self.role = operation["value"]
        return {}


def _event(request: str) -> dict[str, Any]:
    return {
        "RequestType": request,
        "PhysicalResourceId": PHYSICAL_ID,
        "ResourceProperties": {"RoleArn": OURS},
    }


def _no_sleep(_seconds: float) -> None:
    return None


def test_an_account_without_a_role_gets_the_stacks() -> None:
    account = Account()
    answer = on_event(_event("Create"), account, sleep=_no_sleep)
    assert account.role == OURS
    assert answer["Data"] == {"RoleArn": OURS, "SetByThisStack": "true"}


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_an_account_with_a_role_keeps_it(request_type: str) -> None:
    account = Account(THEIRS)
    answer = on_event(_event(request_type), account, sleep=_no_sleep)
    assert account.role == THEIRS and account.updates == 0
    assert answer["Data"] == {"RoleArn": THEIRS, "SetByThisStack": "false"}


def test_a_delete_leaves_the_account_as_it_is() -> None:
    account = Account(OURS)
    assert on_event(_event("Delete"), account, sleep=_no_sleep) == {"PhysicalResourceId": PHYSICAL_ID}
    assert account.role == OURS and account.updates == 0


def test_a_role_iam_has_not_propagated_yet_is_named_again_until_it_is_taken() -> None:
    account = Account(refusals=3)
    waits: list[float] = []
    on_event(_event("Create"), account, sleep=waits.append)
    assert account.role == OURS and account.updates == 4 and len(waits) == 3


def test_a_refusal_that_outlasts_the_retries_fails_the_request() -> None:
    account = Account(refusals=1000)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += max(seconds, 1.0)

    with pytest.raises(ClientError):
        on_event(_event("Create"), account, sleep=sleep, monotonic=lambda: now[0])
    assert account.role is None

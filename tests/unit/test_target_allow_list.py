"""Which AWS targets a deployment's allow-list admits, for targets named by ARN or by bare name."""

from __future__ import annotations

from typing import Any

import pytest

from punctual_functions.api.policy import target_allowed
from punctual_functions.core.settings import Settings

ACCOUNT = "123456789012"
# The allow-list docs/deploy.md shows: the account's report functions and its default bus.
DEPLOYMENT = Settings(
    region="eu-west-1",
    account_id=ACCOUNT,
    allowed_target_arns=(
        f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:reports-*",
        f"arn:aws:events:eu-west-1:{ACCOUNT}:event-bus/default",
        f"arn:aws:sqs:eu-west-1:{ACCOUNT}:jobs-*",
    ),
)


@pytest.mark.parametrize(
    "target",
    [
        pytest.param({"type": "lambda", "function": "reports-daily"}, id="lambda-bare-name"),
        pytest.param(
            {"type": "lambda", "function": f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:reports-daily"},
            id="lambda-arn",
        ),
        pytest.param({"type": "eventbridge", "bus": "default"}, id="eventbridge-default-bus"),
        pytest.param({"type": "eventbridge"}, id="eventbridge-bus-omitted"),
        pytest.param(
            {"type": "sqs", "queue_url": f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/jobs-nightly"},
            id="sqs-url",
        ),
    ],
)
def test_given_an_allow_list_of_this_account_when_a_target_is_named_then_it_is_allowed(
    target: dict[str, Any],
) -> None:
    assert target_allowed(target, DEPLOYMENT), f"{target} resolves into the allow-list but was refused"


@pytest.mark.parametrize(
    "target",
    [
        pytest.param({"type": "lambda", "function": "billing-daily"}, id="lambda-other-name"),
        pytest.param(
            {"type": "lambda", "function": "arn:aws:lambda:eu-west-1:999999999999:function:reports-daily"},
            id="lambda-other-account",
        ),
        pytest.param({"type": "eventbridge", "bus": "audit"}, id="eventbridge-other-bus"),
        pytest.param(
            {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/999999999999/jobs-nightly"},
            id="sqs-other-account",
        ),
    ],
)
def test_given_an_allow_list_when_a_target_is_outside_it_then_it_is_refused(target: dict[str, Any]) -> None:
    assert not target_allowed(target, DEPLOYMENT), f"{target} is outside the allow-list but was allowed"


def test_given_another_partition_when_a_bare_name_is_checked_then_it_resolves_in_that_partition() -> None:
    china = Settings(
        region="cn-north-1",
        account_id=ACCOUNT,
        partition="aws-cn",
        allowed_target_arns=(f"arn:aws-cn:lambda:cn-north-1:{ACCOUNT}:function:reports-*",),
    )
    assert target_allowed({"type": "lambda", "function": "reports-daily"}, china)
    assert not target_allowed(
        {"type": "lambda", "function": "reports-daily"},
        DEPLOYMENT.replace(
            allowed_target_arns=(f"arn:aws-cn:lambda:eu-west-1:{ACCOUNT}:function:reports-*",)
        ),
    )


def test_given_no_known_account_when_a_bare_name_is_checked_then_only_a_pattern_naming_it_admits_it() -> None:
    unknown = DEPLOYMENT.replace(account_id="")
    assert not target_allowed({"type": "lambda", "function": "reports-daily"}, unknown)
    assert target_allowed(
        {"type": "lambda", "function": "reports-daily"}, unknown.replace(allowed_target_arns=("*",))
    )


@pytest.mark.parametrize(
    "host",
    [
        "sqs.eu-central-1.amazonaws.com",
        "eu-central-1.queue.amazonaws.com",
        "sqs-fips.eu-central-1.amazonaws.com",
    ],
)
def test_a_queue_is_checked_in_the_region_its_host_names_where_it_is_delivered(host: str) -> None:
    # The worker delivers in the region the queue URL's host names (legacy and FIPS hosts too); the
    # allow-list, which is also the worker's IAM grant, must be checked against that same region.
    target = {"type": "sqs", "queue_url": f"https://{host}/{ACCOUNT}/jobs-nightly"}
    assert not target_allowed(target, DEPLOYMENT), "allowed as a queue of the deployment's region"
    frankfurt = DEPLOYMENT.replace(allowed_target_arns=(f"arn:aws:sqs:eu-central-1:{ACCOUNT}:jobs-*",))
    assert target_allowed(target, frankfurt)

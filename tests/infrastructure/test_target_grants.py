"""The allow-list of targets and the worker's grants on them, as a deploy meets them.

* The allow-list is an item of the table written by the deploy (CDK's AwsCustomResource, one
  PutItem), not an environment variable: 200 targets synthesize, every function's environment stays
  under Lambda's 4 KB, and the PutItem, made against DynamoDB (moto), reads back as the API reads it.
* The grants are managed policies under IAM's 6,144 characters each, named by what they grant: a
  policy never changes in place, so a target's grant is deleted only in the cleanup phase, after the
  ``Job`` that used it is cancelled or updated (a grant outlives its last job).
"""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from moto import mock_aws

from punctual.cdk import Job, LambdaAssets, Schedule, Scheduler, SchedulerProps, Target
from punctual.cdk.functions import ENVIRONMENT_BYTES, environment_size
from punctual.cdk.grants import MANAGED_POLICY_CHARACTERS, MAX_POLICIES
from punctual_functions.core.resources import table_definition
from punctual_functions.core.store import DynamoStore
from tests.infrastructure.conftest import (
    allowed_target_patterns,
    resources_of,
    synthesize,
    target_grants,
)

pytestmark = pytest.mark.xdist_group("infrastructure")

MANY = [f"arn:aws:sqs:eu-west-1:123456789012:team-{index:03d}-reports-queue" for index in range(200)]


def _policy_characters(policy: dict[str, Any]) -> int:
    """What IAM counts: the policy's JSON without white space."""
    return len(re.sub(r"\s", "", json.dumps(policy["Properties"]["PolicyDocument"])))


def _granted(statements: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {
        (statement["Action"], json.dumps(resource, sort_keys=True))
        for statement in statements
        for resource in (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
    }


@pytest.fixture(scope="module")
def many_targets() -> dict[str, Any]:
    return synthesize({"allowed_target_arns": MANY}).raw


def test_given_200_allowed_targets_when_synthesized_then_no_environment_holds_them(many_targets) -> None:
    for function in resources_of(many_targets, "AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert not any(MANY[0] in json.dumps(value) for value in variables.values())
        rendered = {
            name: value if isinstance(value, str) else "${Token[X.1]}" for name, value in variables.items()
        }
        assert environment_size(rendered) < ENVIRONMENT_BYTES // 2
    assert allowed_target_patterns(many_targets) == MANY


def test_given_200_allowed_targets_when_synthesized_then_the_grants_fit_iams_quotas(many_targets) -> None:
    policies = {
        name: policy
        for name, policy in resources_of(many_targets, "AWS::IAM::ManagedPolicy").items()
        if "TargetGrants" in name
    }
    assert 1 < len(policies) <= MAX_POLICIES
    for policy in policies.values():
        assert _policy_characters(policy) <= MANAGED_POLICY_CHARACTERS
    granted = set().union(*(_granted(statements) for statements in target_grants(many_targets).values()))
    assert granted == {("sqs:SendMessage", json.dumps(arn)) for arn in MANY}
    # The worker's inline policy (10,240 characters for all of a role's inline policies) names none.
    for name, policy in resources_of(many_targets, "AWS::IAM::Policy").items():
        assert MANY[0] not in json.dumps(policy), name


def test_given_too_many_targets_for_iam_when_synthesized_then_synth_names_the_quota() -> None:
    stack = Stack(App(), "TooMany")
    long_names = [f"arn:aws:sns:eu-west-1:123456789012:{'topic-' * 35}{index:03d}" for index in range(200)]
    Scheduler(
        stack,
        "Punctual",
        props=SchedulerProps(allowed_target_arns=tuple(long_names)),
        assets=LambdaAssets.build(),
    )
    with pytest.raises(Exception, match=r"managed policies of 6144 characters.*allowed_target_arns"):
        Template.from_stack(stack)


def test_given_the_deploys_put_item_when_made_against_dynamodb_then_the_api_reads_the_allow_list(
    many_targets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The custom resource's call, as the SDK makes it, against a table of the stack's definition."""
    (writer,) = [
        resource
        for name, resource in resources_of(many_targets, "Custom::AWS").items()
        if name.startswith("FunctionsAllowedTargets")
    ]
    parts = writer["Properties"]["Create"]["Fn::Join"][1]
    table_name = "punctual-test"
    call = json.loads("".join(part if isinstance(part, str) else table_name for part in parts))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(**table_definition(table_name))
        client.put_item(**call["parameters"])
        from datetime import timedelta

        assert DynamoStore(client, table_name, timedelta(days=1)).allowed_targets() == tuple(MANY)


def _app(targets: dict[str, str]) -> dict[str, Any]:
    """A user's app: one Job per entry (its name → the queue it sends to), queues q1..q3 either way."""
    stack = Stack(App(), "Reports")
    scheduler = Scheduler(stack, "Punctual", assets=LambdaAssets.build())
    queues = {name: sqs.Queue(stack, name, enforce_ssl=True) for name in ("q1", "q2", "q3")}
    for job, queue in targets.items():
        Job(
            stack,
            job,
            scheduler=scheduler,
            schedule=Schedule.rate("5 minutes"),
            target=Target.queue(queues[queue]),
        )
    return dict(Template.from_stack(stack).to_json())


def _granting(template: dict[str, Any], queue: str) -> set[str]:
    """The managed policies that grant sending to the app's queue ``queue``."""
    (queue_id,) = [name for name in resources_of(template, "AWS::SQS::Queue") if name.startswith(queue)]
    wanted = ("sqs:SendMessage", json.dumps({"Fn::GetAtt": [queue_id, "Arn"]}, sort_keys=True))
    return {name for name, statements in target_grants(template).items() if wanted in _granted(statements)}


def _job(template: dict[str, Any], name: str) -> dict[str, Any]:
    (job,) = [
        job
        for job_id, job in resources_of(template, "Custom::PunctualJob").items()
        if job_id.startswith(name)
    ]
    return job


def test_given_a_job_removed_or_moved_to_another_target_when_deployed_then_the_old_grant_outlives_it() -> (
    None
):
    before = _app({"Moving": "q1", "Leaving": "q2"})
    after = _app({"Moving": "q3"})
    kept = set(target_grants(before)) & set(target_grants(after))
    for name in kept:  # a policy in both templates is the same policy: nothing changes in place
        assert before["Resources"][name] == after["Resources"][name]
    # The removed job's grant: a policy the new template no longer has, so CloudFormation deletes it in
    # the cleanup phase, and after the job (which depends on it), which it cancels first.
    (leaving_grant,) = _granting(before, "q2")
    assert leaving_grant not in after["Resources"]
    assert leaving_grant in _job(before, "Leaving")["DependsOn"]
    # The moved job's old grant goes the same way, after the job's update; its new grant is a new
    # policy, created before the job (which depends on it) is updated to use it.
    (old_grant,) = _granting(before, "q1")
    assert old_grant not in after["Resources"]
    (new_grant,) = _granting(after, "q3")
    assert new_grant not in before["Resources"]
    assert new_grant in _job(after, "Moving")["DependsOn"]
    # And no inline policy of the worker names a target: its updates never take a grant away.
    for template in (before, after):
        app_queues = [
            name for name in resources_of(template, "AWS::SQS::Queue") if name[:2] in ("q1", "q2", "q3")
        ]
        for name, policy in resources_of(template, "AWS::IAM::Policy").items():
            assert not any(queue in json.dumps(policy) for queue in app_queues), name

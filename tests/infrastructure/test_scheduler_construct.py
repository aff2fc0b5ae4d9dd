"""What a user wires to a ``Scheduler``: ``allow_target`` for each kind of target (topic with its key,
bus), ``grant_invoke``, and the refusals of what cannot work. (A whole user app, from the installed
package, with jobs on a function and a queue: test_user_app.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from punctual.cdk import Job, LambdaAssets, Schedule, Scheduler, SchedulerProps, Target
from tests.infrastructure.conftest import (
    allowed_target_patterns,
    logical_id_of,
    policy_statements,
    target_grants,
)

pytestmark = pytest.mark.xdist_group("infrastructure")


@pytest.fixture(scope="module")
def wired() -> dict[str, Any]:
    stack = Stack(App(), "Wired")
    scheduler = Scheduler(stack, "Punctual", assets=LambdaAssets.build())
    key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key)
    bus = events.EventBus(stack, "Orders")
    scheduler.allow_target(topic)
    scheduler.allow_target(bus)
    scheduler.allow_target(topic)  # two jobs on one topic: allowed once
    caller = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    scheduler.grant_invoke(caller)
    template = Template.from_stack(stack).to_json()
    return {"template": template}


def test_given_a_topic_and_a_bus_when_allowed_then_the_worker_publishes_and_puts_events_on_them_alone(wired):
    template = wired["template"]
    topic = logical_id_of(template, "AWS::SNS::Topic", "Alerts")
    bus = logical_id_of(template, "AWS::Events::EventBus", "Orders")
    key = logical_id_of(template, "AWS::KMS::Key", "AlertsKey")
    statements = policy_statements(template, "PunctualFunctionsWorkerRoleDefaultPolicy")
    statements += [s for grant in target_grants(template).values() for s in grant]
    assert {"Action": "sns:Publish", "Effect": "Allow", "Resource": {"Ref": topic}} in statements
    assert {
        "Action": "events:PutEvents",
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [bus, "Arn"]},
    } in statements
    assert {
        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [key, "Arn"]},
    } in statements
    # Nothing else of the worker's names them, and each once.
    mentioning = [s for s in statements if any(n in json.dumps(s) for n in (topic, bus, key))]
    assert len(mentioning) == 3
    assert allowed_target_patterns(template) == [{"Ref": topic}, {"Fn::GetAtt": [bus, "Arn"]}]


def test_given_a_grantee_when_granted_then_it_may_invoke_the_api_routes_and_nothing_more(wired):
    template = wired["template"]
    (statement,) = policy_statements(template, "CallerDefaultPolicy")
    assert statement["Action"] == "execute-api:Invoke"
    resource = json.dumps(statement["Resource"])
    assert logical_id_of(template, "AWS::ApiGatewayV2::Api", "PunctualApiHttpApi") in resource
    assert resource.endswith('/*/v1/*"]]}')


def test_given_an_api_key_scheduler_when_granting_invoke_then_it_says_keys_authorize_it() -> None:
    stack = Stack(App(), "Keyed")
    scheduler = Scheduler(
        stack, "Punctual", props=SchedulerProps(api_auth="api_key"), assets=LambdaAssets.build()
    )
    with pytest.raises(ValueError, match="API key"):
        scheduler.grant_invoke(iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal()))


def test_given_an_api_key_scheduler_when_a_job_is_declared_then_synth_says_why_a_job_cannot_be() -> None:
    """The jobs' custom resource calls the API with SigV4 as their owner role: a key-mode API would
    refuse it at deploy time. The synth refuses the Job instead, naming it and the way out."""
    stack = Stack(App(), "Keyed")
    scheduler = Scheduler(
        stack, "Punctual", props=SchedulerProps(api_auth="api_key"), assets=LambdaAssets.build()
    )
    with pytest.raises(ValueError, match=r"^Job: a Scheduler with api_auth=api_key cannot hold Jobs"):
        Job(
            stack,
            "Nightly",
            scheduler=scheduler,
            schedule=Schedule.cron("0 2 * * *"),
            target=Target.http("https://example.com/report"),
        )


def test_given_something_else_when_allowed_as_a_target_then_it_is_refused_by_name() -> None:
    stack = Stack(App(), "Other")
    scheduler = Scheduler(stack, "Punctual", assets=LambdaAssets.build())
    with pytest.raises(TypeError, match="not a Lambda function, SQS queue, SNS topic or EventBridge bus"):
        scheduler.allow_target(iam.Role(stack, "NotATarget", assumed_by=iam.AccountRootPrincipal()))


def test_given_a_misspelt_job_field_when_declared_then_synth_names_it() -> None:
    stack = Stack(App(), "Misspelt")
    scheduler = Scheduler(stack, "Punctual", assets=LambdaAssets.build())
    with pytest.raises(TypeError, match="Job Nightly: no job field timout_seconds"):
        Job(
            stack,
            "Nightly",
            scheduler=scheduler,
            schedule=Schedule.cron("0 2 * * *"),
            target=Target.http("https://example.com/report"),
            timout_seconds=30,
        )


def test_given_bad_props_when_made_then_the_field_is_named() -> None:
    with pytest.raises(ValueError, match="shard_count"):
        SchedulerProps(shard_count=0)

"""Alarms an operator needs and the dashboard that shows them."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.monitoring import LAG_METRIC_NAME, SWEEP_FINISHED_MESSAGE
from tests.infrastructure.conftest import PRODUCTION_CONTEXT, Synthesized

pytestmark = pytest.mark.xdist_group("infrastructure")


def _alarms(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]
        for alarm in synthesized.resources("AWS::CloudWatch::Alarm").values()
    }


def test_given_the_stack_when_synthesized_then_it_alarms_on_every_failure_mode_of_the_scheduler(
    default_stack: Synthesized,
) -> None:
    alarms = _alarms(default_stack)
    assert set(alarms) == {
        "punctual-dev-dlq-not-empty",
        "punctual-dev-dispatcher-errors",
        "punctual-dev-worker-errors",
        "punctual-dev-worker-throttles",
        "punctual-dev-oldest-message-age",
        "punctual-dev-dispatcher-lag",
    }
    expected = {
        "punctual-dev-dlq-not-empty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "DeadLetterQueue"),
        "punctual-dev-dispatcher-errors": ("AWS/Lambda", "Errors", "Dispatcher"),
        "punctual-dev-worker-errors": ("AWS/Lambda", "Errors", "Worker"),
        "punctual-dev-worker-throttles": ("AWS/Lambda", "Throttles", "Worker"),
        "punctual-dev-oldest-message-age": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "WorkQueue"),
    }
    for name, (namespace, metric, resource) in expected.items():
        alarm = alarms[name]
        assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric), name
        assert resource in str(alarm["Dimensions"]), f"{name} watches the wrong resource"
    assert alarms["punctual-dev-dlq-not-empty"]["Threshold"] == 0
    assert alarms["punctual-dev-dlq-not-empty"]["ComparisonOperator"] == "GreaterThanThreshold"


def test_given_the_dispatcher_logs_when_synthesized_then_its_lag_is_a_metric_and_silence_is_an_alarm(
    default_stack: Synthesized,
) -> None:
    dispatcher_logs = default_stack.function("dispatcher")["Properties"]["LoggingConfig"]["LogGroup"]
    metric_filter = default_stack.only("AWS::Logs::MetricFilter")["Properties"]
    assert metric_filter["LogGroupName"] == dispatcher_logs
    assert SWEEP_FINISHED_MESSAGE in metric_filter["FilterPattern"]
    (transformation,) = metric_filter["MetricTransformations"]
    assert transformation["MetricValue"] == "$.lag_seconds"
    assert transformation["MetricName"] == LAG_METRIC_NAME

    lag = _alarms(default_stack)["punctual-dev-dispatcher-lag"]
    assert (lag["Namespace"], lag["MetricName"]) == (transformation["MetricNamespace"], LAG_METRIC_NAME)
    assert lag["Threshold"] == 180
    assert lag["TreatMissingData"] == "breaching", "a dispatcher that stopped ticking must alarm too"


def test_given_an_alarm_topic_when_synthesized_then_every_alarm_notifies_it(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for alarm in _alarms(production_stack).values():
        assert alarm["AlarmActions"] == [PRODUCTION_CONTEXT["alarm_topic_arn"]]
        assert alarm["OKActions"] == [PRODUCTION_CONTEXT["alarm_topic_arn"]]
    # Without a topic of the operator's, the stack's own topic hears every alarm (and alarm_email
    # subscribes to it), so a fresh deployment alerts someone.
    (topic_id,) = default_stack.resources("AWS::SNS::Topic")
    for alarm in _alarms(default_stack).values():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["OKActions"] == [{"Ref": topic_id}]
    assert not production_stack.resources("AWS::SNS::Topic"), "an operator's topic needs no topic of ours"


def test_given_an_alarm_email_when_synthesized_then_it_subscribes_to_the_alarm_topic() -> None:
    from infra.app import build_app

    _app, stack = build_app({"alarm_email": "oncall@example.com"}, nag=False)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall@example.com"}
    )
    policy = template.find_resources("AWS::SNS::TopicPolicy")
    statements = [s for p in policy.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert any(s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"} for s in statements)
    outputs = template.find_outputs("AlarmTopicArn")
    assert outputs, "the stack must output the alarm topic"


def test_given_the_stacks_own_alarm_topic_when_synthesized_then_it_is_encrypted_with_a_key_cloudwatch_may_use(
    default_stack: Synthesized,
) -> None:
    topic = default_stack.only("AWS::SNS::Topic")["Properties"]
    key_id = default_stack.logical_id("AWS::KMS::Key")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}, "the alarm topic must be encrypted"
    key = default_stack.only("AWS::KMS::Key")
    assert key["Properties"]["EnableKeyRotation"] is True
    # The AWS-managed SNS key would not do: CloudWatch may not use it, and its alarms would be lost.
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert [sorted(s["Action"]) for s in cloudwatch] == [["kms:Decrypt", "kms:GenerateDataKey"]]
    assert key["DeletionPolicy"] == "Delete", "the key goes with the topic it encrypts"


@pytest.mark.parametrize("address", ["oncall", "oncall@", "on call@example.com", "oncall@example"])
def test_given_an_alarm_email_that_is_no_address_when_configured_then_synth_refuses_it(address: str) -> None:
    from pydantic import ValidationError

    from infra.config import DeploymentConfig

    with pytest.raises(ValidationError, match="alarm_email"):
        DeploymentConfig.from_mapping({"alarm_email": address})


def test_given_the_stack_when_synthesized_then_a_dashboard_shows_api_dispatcher_worker_queues_and_table(
    default_stack: Synthesized,
) -> None:
    dashboard = default_stack.only("AWS::CloudWatch::Dashboard")["Properties"]
    body = str(dashboard["DashboardBody"])
    for title in ("API requests", "Dispatcher lag", "Worker invocations", "Work queue", "DLQ depth", "Table"):
        assert title in body, f"dashboard lacks the {title!r} widget"

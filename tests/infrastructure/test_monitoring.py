"""Alarms an operator needs and the dashboard that shows them."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from aws_cdk.assertions import Template

from punctual.cdk.monitoring import (
    HOLD_METRIC_NAME,
    INIT_ERRORS_METRIC_NAME,
    LAG_METRIC_NAME,
    LATENESS_METRIC_NAME,
    SWEEP_FINISHED_MESSAGE,
)
from punctual_functions.core.model import iso
from tests.conftest import Clock
from tests.infrastructure.conftest import PRODUCTION_CONTEXT, Synthesized
from tests.infrastructure.log_filter_pattern import matches, metric_value

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
        "punctual-dev-worker-init-errors",
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
    metric_filter = metric_filter_of(default_stack, LAG_METRIC_NAME)
    assert metric_filter["LogGroupName"] == dispatcher_logs
    assert SWEEP_FINISHED_MESSAGE in metric_filter["FilterPattern"]
    (transformation,) = metric_filter["MetricTransformations"]
    assert transformation["MetricValue"] == "$.lag_seconds"
    assert transformation["MetricName"] == LAG_METRIC_NAME

    lag = _alarms(default_stack)["punctual-dev-dispatcher-lag"]
    assert (lag["Namespace"], lag["MetricName"]) == (transformation["MetricNamespace"], LAG_METRIC_NAME)
    assert lag["Threshold"] == 180
    # Not breaching: a new stack, with no datapoint yet, would be in ALARM from its creation. A
    # dispatcher that stopped ticking leaves the alarm without data, and that state notifies.
    assert lag["TreatMissingData"] == "missing"
    assert lag["InsufficientDataActions"] == lag["AlarmActions"] != []


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

    from punctual.cdk.config import DeploymentConfig

    with pytest.raises(ValidationError, match="alarm_email"):
        DeploymentConfig.from_mapping({"alarm_email": address})


def test_given_the_stack_when_synthesized_then_a_dashboard_shows_api_dispatcher_worker_queues_and_table(
    default_stack: Synthesized,
) -> None:
    dashboard = default_stack.only("AWS::CloudWatch::Dashboard")["Properties"]
    body = str(dashboard["DashboardBody"])
    for title in ("API requests", "Dispatcher lag", "Worker invocations", "Work queue", "DLQ depth", "Table"):
        assert title in body, f"dashboard lacks the {title!r} widget"


@dataclass(frozen=True)
class _LambdaContext:
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:punctual-dev-dispatcher"
    function_name: str = "punctual-dev-dispatcher"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = "tick"


def metric_filter_of(stack: Synthesized, metric_name: str) -> dict[str, Any]:
    """The properties of the one metric filter that makes ``metric_name``."""
    found: list[dict[str, Any]] = [
        resource["Properties"]
        for resource in stack.resources("AWS::Logs::MetricFilter").values()
        if resource["Properties"]["MetricTransformations"][0]["MetricName"] == metric_name
    ]
    (properties,) = found
    return properties


@contextmanager
def log_lines() -> Iterator[list[str]]:
    """The lines the functions' logger writes meanwhile, as Powertools writes them to a function's
    log stream (one JSON object a line), at INFO as deployed (the tests' environment says WARNING)."""
    from punctual_functions.core.observability import logger

    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    stream = io.StringIO()
    previous, level = handler.setStream(stream), logger.log_level
    logger.setLevel(logging.INFO)
    lines: list[str] = []
    try:
        yield lines
    finally:
        handler.setStream(previous)
        logger.setLevel(level)
        lines.extend(stream.getvalue().splitlines())


@pytest.fixture
def dispatcher_log_lines(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines the dispatcher's handler writes for two ticks over an empty table, as Powertools
    writes them to the function's log stream (one JSON object a line)."""
    from punctual.testing.fakes.store import MemoryStore
    from punctual_functions.core.factories import build_dispatcher
    from punctual_functions.core.settings import Settings
    from punctual_functions.dispatcher import handler as dispatcher_handler
    from tests.fakes.queue import MemoryQueue

    settings = Settings(table_name="memory", shard_count=2, queue_url="memory://work", dlq_url="memory://dlq")
    dispatcher = build_dispatcher(settings, store=MemoryStore(), queue=MemoryQueue(delays=False), clock=clock)
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)
    monkeypatch.setattr(dispatcher_handler, "default_dispatcher", lambda: dispatcher)
    with log_lines() as lines:
        clock.advance(42.25)
        dispatcher_handler.handler({"source": "aws.events"}, _LambdaContext())  # type: ignore[arg-type]
        clock.advance(60.5)  # the next tick
        dispatcher_handler.handler({"source": "aws.events"}, _LambdaContext())  # type: ignore[arg-type]
    return lines


def test_given_the_dispatchers_own_log_lines_when_the_lag_filter_reads_them_then_each_tick_is_a_datapoint(
    default_stack: Synthesized, dispatcher_log_lines: list[str]
) -> None:
    # The alarm counts silence as lag: a pattern that never matches the real line would hold it in
    # ALARM for good. lag_seconds is a JSON number, which a quoted ("*") value never matches.
    metric_filter = metric_filter_of(default_stack, LAG_METRIC_NAME)
    pattern = metric_filter["FilterPattern"]
    (transformation,) = metric_filter["MetricTransformations"]
    sweeps = [line for line in dispatcher_log_lines if json.loads(line)["message"] == SWEEP_FINISHED_MESSAGE]
    assert len(sweeps) == 2, dispatcher_log_lines
    assert [line for line in dispatcher_log_lines if matches(pattern, line)] == sweeps
    for line in sweeps:
        lag = json.loads(line)["lag_seconds"]
        assert isinstance(lag, float), "the dispatcher logs its lag as a JSON number"
        assert metric_value(transformation["MetricValue"], line) == lag
    assert "DefaultValue" not in transformation, "a default value would hide a silent dispatcher"


@pytest.mark.parametrize(
    ("pattern", "message", "expected"),
    [
        # the examples of AWS's "Filter pattern syntax for metric filters" (JSON log events)
        ('{ $.eventType = "UpdateTrail" }', '{"eventType": "UpdateTrail"}', True),
        ('{ $.eventType = "Update*" }', '{"eventType": "UpdateTrail"}', True),
        ('{ $.eventType != "UpdateTrail" }', '{"eventType": "CreateTrail"}', True),
        ("{ $.bandwidth > 75 }", '{"bandwidth": 80.5}', True),
        ("{ $.bandwidth > 75 }", '{"bandwidth": 70}', False),
        ('{ ($.user.id = 2) && ($.user.name = "Alice") }', '{"user": {"id": 2, "name": "Alice"}}', True),
        ("{ $.a = 1 || $.b = 1 }", '{"b": 1}', True),
        # a string value compares with strings only, a number with numbers only; missing matches nothing
        ('{ $.latency = "*" }', '{"latency": 50}', False),
        ("{ $.latency >= 0 }", '{"latency": "50"}', False),
        ("{ $.latency >= 0 }", '{"other": 1}', False),
        ("{ $.latency >= 0 }", "not json", False),
    ],
)
def test_given_a_json_filter_pattern_when_evaluated_then_it_follows_the_documented_semantics(
    pattern: str, message: str, expected: bool
) -> None:
    assert matches(pattern, message) is expected


def test_given_a_pattern_beyond_the_evaluators_subset_when_evaluated_then_it_refuses_to_guess() -> None:
    # A negative literal too: AWS documents none (a pattern holding one may be refused, or read as text).
    for pattern in ("{ $.a = * }", "{ $.a IS NULL }", "{ $.a NOT EXISTS }", "ERROR", "{ $.a >= -5 }"):
        with pytest.raises(NotImplementedError):
            matches(pattern, '{"a": 1}')


def test_given_every_metric_filter_when_synthesized_then_its_pattern_keeps_to_the_documented_grammar(
    default_stack: Synthesized,
) -> None:
    filters = default_stack.resources("AWS::Logs::MetricFilter")
    assert len(filters) >= 3
    for logical_id, resource in filters.items():
        # Parsing reads every term (both sides of an ||): a pattern outside the subset raises.
        try:
            matches(resource["Properties"]["FilterPattern"], "{}")
        except NotImplementedError as error:
            pytest.fail(f"{logical_id}: {error}")


def test_given_every_alarm_when_its_metric_falls_silent_then_only_the_dispatcher_lag_counts_that_as_alarm(
    default_stack: Synthesized,
) -> None:
    # An alarm that treats missing data as breaching is in ALARM from its creation and never leaves
    # it while its metric is silent: none does. Only the lag alarm tells silence apart (a dispatcher
    # that stopped ticking: INSUFFICIENT_DATA, notified), and its metric comes from a line every
    # tick writes (above), with the filter's unit, or the alarm would see no data.
    alarms = _alarms(default_stack)
    not_breaching = {
        name for name, alarm in alarms.items() if alarm.get("TreatMissingData") == "notBreaching"
    }
    assert set(alarms) - not_breaching == {"punctual-dev-dispatcher-lag"}
    assert alarms["punctual-dev-dispatcher-lag"]["TreatMissingData"] == "missing"
    metric_filter = metric_filter_of(default_stack, LAG_METRIC_NAME)
    (transformation,) = metric_filter["MetricTransformations"]
    assert alarms["punctual-dev-dispatcher-lag"].get("Unit") == transformation.get("Unit")


def test_given_one_stage_in_two_regions_when_synthesized_then_their_dashboards_have_different_names(
    default_stack: Synthesized,
) -> None:
    from infra.app import build_app

    # Dashboard names are unique per account across regions: the region is part of the name.
    name = default_stack.only("AWS::CloudWatch::Dashboard")["Properties"]["DashboardName"]
    assert name == {"Fn::Join": ["", ["punctual-dev-", {"Ref": "AWS::Region"}]]}
    names = set()
    for region in ("eu-west-1", "us-east-1"):
        _app, stack = build_app({"region": region, "account": "123456789012"}, nag=False)
        (dashboard,) = Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard").values()
        names.add(dashboard["Properties"]["DashboardName"])
    assert names == {"punctual-dev-eu-west-1", "punctual-dev-us-east-1"}


@pytest.fixture
def worker_log_lines(clock: Clock) -> list[str]:
    """The lines the worker writes for two runs on the in-memory fakes, as Powertools writes them:
    one whose message arrived 2 s before its second, one whose message arrived 1.5 s after it."""
    from tests.unit.test_engine_on_fakes import SETTINGS, engine_with

    engine = engine_with(SETTINGS, clock)
    due = clock() + timedelta(seconds=10)
    engine.create(schedule={"at": iso(due)})
    engine.create(schedule={"at": iso(due + timedelta(seconds=30))})
    (early, _), (late, _) = engine.queue.sent
    with log_lines() as lines:
        clock.now = due - timedelta(seconds=2)
        engine.executor.handle(early, None)
        clock.now = due + timedelta(seconds=31.5)
        engine.executor.handle(late, None)
    return lines


def test_given_the_workers_own_log_lines_when_the_run_filters_read_them_then_each_run_is_plotted(
    default_stack: Synthesized, worker_log_lines: list[str]
) -> None:
    # The dashboard plots each run's hold (how long before its second the message reached a worker)
    # and lateness from the worker's outcome lines: a filter that matched no real line would plot
    # nothing, and the operator could not tell whether the head start suits the deployment.
    worker_logs = default_stack.function("worker")["Properties"]["LoggingConfig"]["LogGroup"]
    outcomes = [line for line in worker_log_lines if json.loads(line)["message"] == "run succeeded"]
    assert len(outcomes) == 2, worker_log_lines
    expected = {HOLD_METRIC_NAME: [2000, -1500], LATENESS_METRIC_NAME: [0, 1500]}
    for name, values in expected.items():
        metric_filter = metric_filter_of(default_stack, name)
        assert metric_filter["LogGroupName"] == worker_logs
        (transformation,) = metric_filter["MetricTransformations"]
        assert transformation["Unit"] == "Milliseconds" and "DefaultValue" not in transformation
        assert [
            line for line in worker_log_lines if matches(metric_filter["FilterPattern"], line)
        ] == outcomes
        assert [metric_value(transformation["MetricValue"], line) for line in outcomes] == values
    dashboard = json.dumps(default_stack.only("AWS::CloudWatch::Dashboard")["Properties"]["DashboardBody"])
    assert HOLD_METRIC_NAME in dashboard and LATENESS_METRIC_NAME in dashboard


def test_given_a_worker_that_fails_before_its_handler_when_lambda_reports_it_then_an_alarm_names_it(
    default_stack: Synthesized,
) -> None:
    """Lambda's JSON system log line for an environment's start: a failed one counts, a good one
    does not, and the alarm watches that count."""
    metric_filter = metric_filter_of(default_stack, INIT_ERRORS_METRIC_NAME)
    pattern = metric_filter["FilterPattern"]
    failed: dict[str, Any] = {
        "time": "2026-11-28T10:00:00.000Z",
        "type": "platform.initReport",
        "record": {
            "initializationType": "on-demand",
            "phase": "init",
            "status": "error",
            "errorType": "Runtime.ImportModuleError",
        },
    }
    record = {key: value for key, value in failed["record"].items() if key != "errorType"}
    started = {**failed, "record": {**record, "status": "success"}}
    assert matches(pattern, json.dumps(failed))
    assert not matches(pattern, json.dumps(started))
    assert not matches(pattern, json.dumps({"message": "sweep finished", "lag_seconds": 1.0}))
    alarm = _alarms(default_stack)["punctual-dev-worker-init-errors"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Punctual/dev", INIT_ERRORS_METRIC_NAME)
    assert alarm["Threshold"] == 1 and "operations.md" in alarm["AlarmDescription"]

"""Delivery templates: which ``{{...}}`` a job may carry, and how each attempt fills them in."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual_functions.core.targets.outcome import Delivery
from punctual_functions.core.templating import (
    TemplateError,
    check_templates,
    has_templates,
    render,
    values_of,
)

HTTP = {"type": "http", "url": "https://example.com/runs/{{run_id}}?at={{scheduled_for}}&n={{attempt}}"}
DELIVERY = Delivery(
    job_id="job_1",
    run_id="20261122T130005.000Z-3fa9c2d1",
    attempt=2,
    scheduled_for=datetime(2026, 11, 22, 13, 0, 5, tzinfo=UTC),
    payload=None,
)


def test_the_four_names_are_filled_in_for_each_attempt() -> None:
    payload = {"run": "{{run_id}}", "when": "at {{ scheduled_for }}", "n": 3, "tries": ["{{attempt}}", None]}
    target = {**HTTP, "headers": {"X-Job": "{{job_id}}", "X-Plain": "plain"}}
    rendered, body = render(target, payload, values_of(DELIVERY))
    assert body == {
        "run": "20261122T130005.000Z-3fa9c2d1",
        "when": "at 2026-11-22T13:00:05.000Z",
        "n": 3,
        "tries": ["2", None],
    }
    assert rendered["headers"] == {"X-Job": "job_1", "X-Plain": "plain"}
    assert rendered["url"] == (
        "https://example.com/runs/20261122T130005.000Z-3fa9c2d1?at=2026-11-22T13%3A00%3A05.000Z&n=2"
    ), "values are percent-encoded in a URL"
    assert target["url"] == HTTP["url"], "the stored target is left as it is"


def test_keys_and_non_strings_are_left_alone() -> None:
    payload: Any = {"{{run_id}}": 1, "list": [1, 2.5, True, None]}
    assert render({"type": "sqs"}, payload, values_of(DELIVERY))[1] == payload


def test_other_target_types_take_templates_in_the_payload_only() -> None:
    target = {"type": "sqs", "queue_url": "https://sqs.eu-central-1.amazonaws.com/1/q"}
    rendered, body = render(target, "{{job_id}}", values_of(DELIVERY))
    assert rendered == target and body == "job_1"


@pytest.mark.parametrize(
    ("target", "payload", "field", "reason"),
    [
        (
            HTTP,
            {"when": "{{schedule_for}}"},
            "payload",
            "{{schedule_for}} (at payload.when) is not a template",
        ),
        (HTTP, ["x", {"a": "{{ run_id | upper }}"}], "payload", "(at payload[1].a)"),
        (HTTP, "{{now}}", "payload", "{{now}} is not a template value"),
        (
            {"type": "http", "url": "https://example.com/{{ attempt + 1 }}"},
            None,
            "target.url",
            "no expressions",
        ),
        (
            {"type": "http", "url": "https://{{job_id}}.example.com/"},
            None,
            "target.url",
            "not its scheme, host",
        ),
        (
            {"type": "http", "url": "https://example.com:{{attempt}}/"},
            None,
            "target.url",
            "not its scheme, host",
        ),
        ({"type": "http", "url": "{{job_id}}://example.com/"}, None, "target.url", "not its scheme, host"),
        (
            {"type": "http", "url": "https://example.com/", "headers": {"X-Run": "{{run}}"}},
            None,
            "target.headers.X-Run",
            "{{run}} is not a template value",
        ),
    ],
)
def test_anything_else_is_refused_naming_the_field(
    target: Any, payload: Any, field: str, reason: str
) -> None:
    with pytest.raises(TemplateError) as refused:
        check_templates(target, payload)
    assert refused.value.field == field
    assert reason in refused.value.reason


def test_templates_in_the_path_query_and_fragment_are_accepted() -> None:
    check_templates(
        {"type": "http", "url": "https://example.com/a/{{job_id}}?run={{run_id}}#{{attempt}}", "headers": {}},
        {"deep": [{"at": "{{scheduled_for}}"}]},
    )
    check_templates({"type": "http", "url": "https://example.com?run={{run_id}}"}, None)


def test_has_templates_tells_whether_rendering_is_needed() -> None:
    assert has_templates(HTTP, None)
    assert has_templates({"type": "sqs"}, {"x": ["{{run_id}}"]})
    assert not has_templates({"type": "http", "url": "https://example.com/"}, {"x": "plain {braces}"})

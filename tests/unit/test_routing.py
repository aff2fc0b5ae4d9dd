"""The api's resolver (``punctual_functions/api/routing.py``): how it reads both API Gateway payload versions,
checks parameters and bodies, and answers; on routes of its own, apart from the api's."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Any

import pytest
from botocore.exceptions import ClientError

from punctual_functions.api.errors import Conflict
from punctual_functions.api.routing import Answer, Body, Param, Request, Router


class Colour(Enum):
    RED = "RED"
    BLUE = "BLUE"


def rest_event(
    method: str, path: str, query: dict[str, list[str]] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "httpMethod": method,
        "path": path,
        "multiValueQueryStringParameters": query,
        "queryStringParameters": {k: v[-1] for k, v in (query or {}).items()} or None,
        "requestContext": {"stage": "prod", "path": f"/prod{path}"},
        **extra,
    }


def http_event(method: str, raw_path: str, stage: str = "$default", **extra: Any) -> dict[str, Any]:
    return {
        "version": "2.0",
        "rawPath": raw_path,
        "requestContext": {"stage": stage, "http": {"method": method}},
        **extra,
    }


@pytest.fixture
def router() -> Router:
    router = Router()

    @router.route("GET", "/things/<thing_id>")
    def get_thing(request: Request, thing_id: str) -> dict[str, Any]:
        return {"thing_id": thing_id}

    @router.route(
        "GET",
        "/things",
        params=(
            Param("limit", int, default=20, ge=1, le=100),
            Param("colour", Colour),
            Param("name", min_length=1, max_length=5),
            Param("X-Key", where="header", max_length=3),
        ),
    )
    def list_things(
        request: Request, limit: int, colour: Colour | None, name: str | None, x_key: str | None
    ) -> dict[str, Any]:
        return {"limit": limit, "colour": colour.value if colour else None, "name": name, "key": x_key}

    @router.route("POST", "/things/<thing_id>/pause", body=Body("PauseIn", "pause", optional=True))
    def pause(request: Request, thing_id: str, pause: Any) -> Answer:
        return Answer(202, {"note": pause.note if pause is not None else "no body"})

    @router.route("POST", "/previews", body=Body("PreviewIn", "preview"))
    def preview(request: Request, preview: Any) -> dict[str, Any]:
        return {"count": preview.count}

    @router.route("POST", "/conflict")
    def conflict(request: Request) -> None:
        raise Conflict("busy", "thing", thing_id="t1")

    @router.route("GET", "/bug")
    def bug(request: Request) -> None:
        raise RuntimeError("secret detail")

    @router.route("POST", "/busy/<code>")
    def busy(request: Request, code: str) -> None:
        raise ClientError({"Error": {"Code": code, "Message": "Throughput exceeds the limit"}}, "PutItem")

    return router


def answer(result: dict[str, Any]) -> tuple[int, Any]:
    return result["statusCode"], json.loads(result["body"])


def test_a_rest_event_is_routed_with_its_path_parameter_and_answers_with_multi_value_headers(
    router: Router,
) -> None:
    result = router.resolve(rest_event("GET", "/things/abc"))
    assert answer(result) == (200, {"thing_id": "abc"})
    assert result["multiValueHeaders"] == {"Content-Type": ["application/json"]} and "headers" not in result


def test_an_http_api_event_is_routed_without_its_stage_and_answers_with_headers(router: Router) -> None:
    result = router.resolve(http_event("GET", "/prod/things/abc", stage="prod"))
    assert answer(result) == (200, {"thing_id": "abc"})
    assert result["headers"] == {"Content-Type": "application/json"} and "multiValueHeaders" not in result
    assert answer(router.resolve(http_event("GET", "/things/abc"))) == (200, {"thing_id": "abc"})
    # Only a whole first segment is the stage: stage "th" leaves /things/abc alone.
    assert answer(router.resolve(http_event("GET", "/things/abc", stage="th"))) == (200, {"thing_id": "abc"})


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/nothing"), ("DELETE", "/things/abc"), ("GET", "/things/abc/more"), ("GET", "/thingsx")],
)
def test_an_unknown_route_or_method_is_a_404_naming_the_path(router: Router, method: str, path: str) -> None:
    status, body = answer(router.resolve(rest_event(method, path)))
    assert status == 404 and body == {"error": "not_found", "reason": "no such route", "field": "path"}


def test_a_trailing_slash_is_the_same_route(router: Router) -> None:
    assert answer(router.resolve(rest_event("GET", "/things/abc/"))) == (200, {"thing_id": "abc"})


def test_parameters_are_parsed_with_their_defaults_and_the_last_of_a_repeated_one(router: Router) -> None:
    status, body = answer(router.resolve(rest_event("GET", "/things")))
    assert (status, body) == (200, {"limit": 20, "colour": None, "name": None, "key": None})
    event = rest_event(
        "GET", "/things", {"limit": ["5", "7"], "colour": ["BLUE"], "name": ["ab"]}, headers={"x-KEY": "k"}
    )
    assert answer(router.resolve(event)) == (200, {"limit": 7, "colour": "BLUE", "name": "ab", "key": "k"})
    http = http_event("GET", "/things", queryStringParameters={"limit": "3"}, headers={"x-key": "z"})
    assert answer(router.resolve(http)) == (200, {"limit": 3, "colour": None, "name": None, "key": "z"})


@pytest.mark.parametrize(
    ("query", "headers", "field", "reason"),
    [
        ({"limit": ["0"]}, {}, "limit", "Input should be greater than or equal to 1"),
        ({"limit": ["101"]}, {}, "limit", "Input should be less than or equal to 100"),
        (
            {"limit": ["ten"]},
            {},
            "limit",
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            {"limit": ["1.5"]},
            {},
            "limit",
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        ({"colour": ["red"]}, {}, "colour", "Input should be 'RED' or 'BLUE'"),
        ({"name": [""]}, {}, "name", "String should have at least 1 character"),
        ({"name": ["abcdef"]}, {}, "name", "String should have at most 5 characters"),
        ({}, {"X-Key": "abcd"}, "X-Key", "String should have at most 3 characters"),
    ],
)
def test_a_bad_parameter_is_a_422_naming_it(
    router: Router, query: dict[str, list[str]], headers: dict[str, str], field: str, reason: str
) -> None:
    status, body = answer(router.resolve(rest_event("GET", "/things", query, headers=headers)))
    assert status == 422
    assert (body["error"], body["field"], body["reason"]) == ("invalid_input", field, reason)
    assert body["problems"] == [{"field": field, "reason": reason}]


def test_every_bad_parameter_is_listed_the_first_named(router: Router) -> None:
    status, body = answer(router.resolve(rest_event("GET", "/things", {"limit": ["0"], "colour": ["x"]})))
    assert status == 422 and body["field"] == "limit"
    assert [problem["field"] for problem in body["problems"]] == ["limit", "colour"]


def test_a_body_is_validated_by_its_model_and_an_optional_one_may_be_left_out(router: Router) -> None:
    with_body = rest_event("POST", "/things/t/pause", body=json.dumps({"note": "why"}))
    assert answer(router.resolve(with_body)) == (202, {"note": "why"})
    assert answer(router.resolve(rest_event("POST", "/things/t/pause"))) == (202, {"note": "no body"})
    status, body = answer(router.resolve(rest_event("POST", "/things/t/pause", body='{"nope": 1}')))
    assert status == 422 and body["field"] == "nope"


def test_a_required_body_left_out_is_a_422_naming_the_body(router: Router) -> None:
    status, body = answer(router.resolve(rest_event("POST", "/previews")))
    assert status == 422 and (body["field"], body["reason"]) == ("body", "Field required")


def test_a_nested_field_refused_by_the_model_is_named_by_its_path(router: Router) -> None:
    event = rest_event("POST", "/previews", body=json.dumps({"schedule": {"cron": 5}, "count": 0}))
    status, body = answer(router.resolve(event))
    assert status == 422
    assert {problem["field"] for problem in body["problems"]} == {"schedule.cron", "count"}


def test_a_refusal_raised_by_a_route_is_its_status_and_body(router: Router) -> None:
    status, body = answer(router.resolve(rest_event("POST", "/conflict")))
    assert (status, body) == (
        409,
        {"error": "conflict", "reason": "busy", "field": "thing", "thing_id": "t1"},
    )


def test_a_bug_is_a_500_that_leaks_nothing_and_is_logged(
    router: Router, caplog: pytest.LogCaptureFixture
) -> None:
    status, body = answer(router.resolve(rest_event("GET", "/bug")))
    assert status == 500 and body["error"] == "internal_error" and "secret" not in json.dumps(body)
    assert "secret detail" in caplog.text


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_a_request_the_table_throttled_past_the_sdk_retries_is_a_429_to_retry_after_a_second(
    router: Router, code: str
) -> None:
    result = router.resolve(http_event("POST", "/busy/" + code))
    status, body = answer(result)
    assert status == 429 and body["error"] == "throttled" and "retry" in body["reason"]
    assert result["headers"]["Retry-After"] == "1"
    assert answer(router.resolve(http_event("POST", "/busy/ValidationException")))[0] == 500, (
        "any other AWS error is a bug"
    )


def test_the_models_are_not_imported_until_a_body_is_checked() -> None:
    import subprocess

    code = (
        "import sys, json; from punctual_functions.api.routing import Router, Request, Body; r = Router(); "
        "r.route('GET', '/a')(lambda request: {}); r.resolve({'httpMethod': 'GET', 'path': '/a'}); "
        "print('pydantic' in sys.modules, 'punctual_functions.api.requests' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]

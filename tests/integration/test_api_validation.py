"""Bad input through the api handler: every refusal is a 4xx naming the field, and creates nothing.

Each case is an API Gateway proxy event through ``punctual_functions.api.handler.handler`` (as in
test_api_routes.py), against a fresh table. The contract (docs/api.md): malformed JSON is 400, a
body over 64 KiB is 413, a name conflict 409, anything else wrong 422, always with a JSON body
``{"error": ..., "field": ..., "reason": ...}``; no input produces a 5xx.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from punctual_functions.core.factories import build_job_service
from punctual_functions.core.ssrf_guard import NetworkPolicy
from tests.integration.conftest import GOOD_JOB as GOOD
from tests.integration.conftest import Call, Harness, make_call

ERROR_CODES = {
    400: "bad_request",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    422: "invalid_input",
}


@pytest.fixture(autouse=True)
def _no_aws_targets(harness: Harness) -> None:
    """The harness's service allows loopback targets (as the local stack does) and no AWS targets."""
    assert harness.settings.allowed_target_arns == ()


@pytest.fixture
def strict_call(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Call:
    """A deployment that does NOT allow loopback targets (as on AWS)."""
    strict = build_job_service(
        harness.settings,
        store=harness.store,
        dispatcher=harness.dispatcher,
        policy=NetworkPolicy(allow_loopback=False),
        clock=harness.clock,
    )
    return make_call(strict, monkeypatch)


def body_with(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD)
    body.update(changes)
    return body


def schedule(**fields: Any) -> dict[str, Any]:
    return body_with(schedule=fields)


def target(**fields: Any) -> dict[str, Any]:
    return body_with(target=fields)


def http(url: str, **extra: Any) -> dict[str, Any]:
    return target(type="http", url=url, **extra)


def assert_refused(status: int, error: Any, expected_status: int, field: str) -> None:
    assert status == expected_status, error
    assert isinstance(error, dict), error
    assert error["error"] == ERROR_CODES[expected_status], error
    assert error["field"] == field, error
    assert isinstance(error["reason"], str) and error["reason"], error


def assert_no_jobs(call: Call, owner: str = "alice") -> None:
    status, page = call("GET", "/v1/jobs?limit=100", owner=owner)
    assert status == 200, page
    assert page["items"] == [], "a refused request created a job"


# The harness clock is 2026-11-22T12:00:00Z.
CREATE_CASES = [
    # --- cron, Unix 5 fields
    pytest.param(schedule(cron="61 * * * *"), "schedule.cron", id="unix-minute-61"),
    pytest.param(schedule(cron="0 24 * * *"), "schedule.cron", id="unix-hour-24"),
    pytest.param(schedule(cron="0 0 32 * *"), "schedule.cron", id="unix-day-32"),
    pytest.param(schedule(cron="0 0 1 13 *"), "schedule.cron", id="unix-month-13"),
    pytest.param(schedule(cron="0 0 * * 8"), "schedule.cron", id="unix-weekday-8"),
    pytest.param(schedule(cron="0 0 * *"), "schedule.cron", id="unix-four-fields"),
    pytest.param(schedule(cron="every day at noon"), "schedule.cron", id="cron-gibberish"),
    pytest.param(schedule(cron="0 0 30 2 *"), "schedule.cron", id="unix-30-february-never-fires"),
    pytest.param(schedule(cron="5-1 * * * *"), "schedule.cron", id="unix-backwards-range"),
    pytest.param(schedule(cron="*/0 * * * *"), "schedule.cron", id="unix-step-zero"),
    pytest.param(schedule(cron=""), "schedule.cron", id="cron-empty"),
    # --- cron, 6 fields with leading seconds
    pytest.param(schedule(cron="60 * * * * *"), "schedule.cron", id="seconds-60"),
    pytest.param(schedule(cron="*/5 * * * * *"), "schedule.cron", id="seconds-every-5s-below-minimum"),
    pytest.param(schedule(cron="* * * * * *"), "schedule.cron", id="seconds-every-second"),
    # --- cron, EventBridge
    pytest.param(schedule(cron="cron(0 13 ? * 8 *)"), "schedule.cron", id="eventbridge-weekday-8"),
    pytest.param(schedule(cron="cron(0 13 ? * MON-FRI)"), "schedule.cron", id="eventbridge-no-year"),
    pytest.param(schedule(cron="cron(0 25 ? * * *)"), "schedule.cron", id="eventbridge-hour-25"),
    pytest.param(schedule(cron="cron(0 0 30 2 ? *)"), "schedule.cron", id="eventbridge-30-february"),
    pytest.param(schedule(cron="cron(0 0 1 1 ? 2020)"), "schedule.cron", id="eventbridge-years-past"),
    # --- rate
    pytest.param(schedule(rate="1 second"), "schedule.rate", id="rate-below-minimum"),
    pytest.param(schedule(rate="rate(9 seconds)"), "schedule.rate", id="rate-wrapped-below-minimum"),
    pytest.param(schedule(rate="0 minutes"), "schedule.rate", id="rate-zero"),
    pytest.param(schedule(rate="-5 minutes"), "schedule.rate", id="rate-negative"),
    pytest.param(schedule(rate="5 fortnights"), "schedule.rate", id="rate-unknown-unit"),
    pytest.param(schedule(rate="1.5 hours"), "schedule.rate", id="rate-fraction"),
    # --- time zone
    pytest.param(schedule(cron="0 12 * * *", timezone="Mars/Olympus"), "schedule.timezone", id="tz-unknown"),
    pytest.param(schedule(cron="0 12 * * *", timezone=""), "schedule.timezone", id="tz-empty"),
    pytest.param(schedule(cron="0 12 * * *", timezone=1), "schedule.timezone", id="tz-wrong-type"),
    # --- at
    pytest.param(schedule(at="2026-02-30T10:00:00Z"), "schedule.at", id="at-30-february"),
    pytest.param(schedule(at="at(2026-13-01T00:00:00)"), "schedule.at", id="at-month-13"),
    pytest.param(schedule(at="tomorrow"), "schedule.at", id="at-not-a-date"),
    pytest.param(schedule(at="2300-01-01T00:00:00Z"), "schedule.at", id="at-year-2300"),
    pytest.param(
        schedule(at="2027-01-01T00:00:00Z", end_at="2027-01-02T00:00:00Z"),
        "schedule.end_at",
        id="at-with-end_at",
    ),
    # --- bounds
    pytest.param(
        schedule(cron="0 12 * * *", start_at="2027-01-02T00:00:00Z", end_at="2027-01-01T00:00:00Z"),
        "schedule.end_at",
        id="end-before-start",
    ),
    pytest.param(
        schedule(rate="5 minutes", end_at="2026-11-01T00:00:00Z"), "schedule.end_at", id="end-in-the-past"
    ),
    pytest.param(
        schedule(cron="0 12 * * *", start_at="2027-02-30T00:00:00Z"),
        "schedule.start_at",
        id="start-30-february",
    ),
    # --- schedule forms and options
    pytest.param(schedule(cron="0 12 * * *", rate="5 minutes"), "schedule", id="cron-and-rate"),
    pytest.param(schedule(at="2027-01-01T00:00:00Z", cron="0 12 * * *"), "schedule", id="at-and-cron"),
    pytest.param(schedule(), "schedule", id="no-schedule-form"),
    pytest.param(schedule(timezone="UTC"), "schedule", id="only-a-timezone"),
    pytest.param(body_with(schedule="0 * * * *"), "schedule", id="schedule-a-string"),
    pytest.param({"target": GOOD["target"]}, "schedule", id="schedule-missing"),
    pytest.param(schedule(cron="0 12 * * *", misfire="sometimes"), "schedule.misfire", id="misfire-unknown"),
    pytest.param(schedule(cron="0 12 * * *", overlap="never"), "schedule.overlap", id="overlap-unknown"),
    pytest.param(
        schedule(cron="0 12 * * *", catchup_seconds=-1), "schedule.catchup_seconds", id="catchup-negative"
    ),
    pytest.param(schedule(cron="0 12 * * *", every="day"), "schedule.every", id="schedule-unknown-field"),
    # --- target
    pytest.param(target(type="ftp", url="ftp://example.com"), "target.type", id="target-type-unknown"),
    pytest.param(target(url="https://example.com"), "target.type", id="target-type-missing"),
    pytest.param(body_with(target="https://example.com"), "target", id="target-a-string"),
    pytest.param({"schedule": GOOD["schedule"]}, "target", id="target-missing"),
    pytest.param(target(type="http"), "target.url", id="http-url-missing"),
    pytest.param(http("not a url"), "target.url", id="http-url-not-a-url"),
    pytest.param(http("ftp://example.com/file"), "target.url", id="http-url-ftp"),
    pytest.param(http("https://user:pw@example.com/"), "target.url", id="http-url-credentials"),
    pytest.param(http("https://example.com:99999/"), "target.url", id="http-url-port-out-of-range"),
    pytest.param(http("https://example.com", method="TRACE"), "target.method", id="http-method-trace"),
    pytest.param(
        http("https://example.com", headers={"Host": "evil"}), "target.headers", id="http-host-header"
    ),
    pytest.param(
        http("https://example.com", headers={"Punctual-Run-Id": "x"}),
        "target.headers",
        id="http-reserved-header",
    ),
    pytest.param(http("https://example.com", headers=["x"]), "target.headers", id="http-headers-a-list"),
    pytest.param(
        http("https://example.com", timeout_seconds=0), "target.timeout_seconds", id="http-timeout-zero"
    ),
    pytest.param(http("https://example.com", retries=3), "target.retries", id="http-unknown-field"),
    # --- SSRF: refused even where loopback is allowed
    pytest.param(http("http://169.254.169.254/latest/meta-data/"), "target.url", id="ssrf-metadata"),
    pytest.param(http("http://10.0.0.1/"), "target.url", id="ssrf-10"),
    pytest.param(http("http://172.16.0.1/"), "target.url", id="ssrf-172-16"),
    pytest.param(http("http://192.168.1.1/"), "target.url", id="ssrf-192-168"),
    pytest.param(http("http://[::ffff:10.0.0.1]/"), "target.url", id="ssrf-ipv4-mapped-private"),
    pytest.param(http("http://[fd00::1]/"), "target.url", id="ssrf-ipv6-unique-local"),
    pytest.param(http("http://0x0a.0.0.1/"), "target.url", id="ssrf-hex-private"),
    # --- AWS targets: malformed, or not allowed by this deployment (allowed_target_arns is empty)
    pytest.param(target(type="lambda", function="my-function"), "target.function", id="lambda-not-allowed"),
    pytest.param(target(type="lambda", function="no spaces!"), "target.function", id="lambda-bad-name"),
    pytest.param(
        target(type="sqs", queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q"),
        "target.queue_url",
        id="sqs-not-allowed",
    ),
    pytest.param(target(type="sqs", queue_url="https://example.com/q"), "target.queue_url", id="sqs-bad-url"),
    pytest.param(
        target(type="sns", topic_arn="arn:aws:sns:us-east-1:123456789012:t"),
        "target.topic_arn",
        id="sns-not-allowed",
    ),
    pytest.param(target(type="sns", topic_arn="my-topic"), "target.topic_arn", id="sns-bad-arn"),
    pytest.param(target(type="eventbridge"), "target.bus", id="eventbridge-not-allowed"),
    pytest.param(target(type="eventbridge", source="aws.ec2"), "target.source", id="eventbridge-aws-source"),
    pytest.param(target(type="lambda", function="f", url="x"), "target.url", id="lambda-unknown-field"),
    # --- retry
    pytest.param(body_with(retry={"max_attempts": -1}), "retry.max_attempts", id="retry-negative"),
    pytest.param(body_with(retry={"max_attempts": 0}), "retry.max_attempts", id="retry-zero"),
    pytest.param(body_with(retry={"max_attempts": 11}), "retry.max_attempts", id="retry-above-10"),
    pytest.param(body_with(retry={"backoff_seconds": -1}), "retry.backoff_seconds", id="backoff-negative"),
    pytest.param(body_with(retry={"max_attempts": "three"}), "retry.max_attempts", id="retry-wrong-type"),
    pytest.param(body_with(retry={"jitter": True}), "retry.jitter", id="retry-unknown-field"),
    pytest.param(body_with(retry=3), "retry", id="retry-a-number"),
    # --- timeout, name, tags, secret, unknown top-level fields
    pytest.param(body_with(timeout_seconds="soon"), "timeout_seconds", id="timeout-wrong-type"),
    pytest.param(body_with(timeout_seconds=0), "timeout_seconds", id="timeout-zero"),
    pytest.param(body_with(timeout_seconds=901), "timeout_seconds", id="timeout-above-900"),
    # the worker's 900 s must also hold the wait for the second and the outcome's write
    pytest.param(body_with(timeout_seconds=841), "timeout_seconds", id="timeout-above-840"),
    pytest.param(
        http("https://example.com", timeout_seconds=841),
        "target.timeout_seconds",
        id="http-timeout-above-840",
    ),
    pytest.param(body_with(timeout_seconds=1.5), "timeout_seconds", id="timeout-fraction"),
    pytest.param(body_with(name=""), "name", id="name-empty"),
    pytest.param(body_with(name="has spaces"), "name", id="name-spaces"),
    pytest.param(body_with(name="x" * 129), "name", id="name-too-long"),
    pytest.param(body_with(name=42), "name", id="name-wrong-type"),
    pytest.param(body_with(tags={"team": 1}), "tags.team", id="tag-value-not-a-string"),
    pytest.param(body_with(tags=["team"]), "tags", id="tags-a-list"),
    pytest.param(body_with(tags={f"k{i}": "v" for i in range(51)}), "tags", id="tags-too-many"),
    pytest.param(body_with(signing_secret="short"), "signing_secret", id="secret-too-short"),
    pytest.param(body_with(surprise=1), "surprise", id="unknown-top-level-field"),
    # --- the body itself
    pytest.param([], "body", id="body-an-empty-list"),
    pytest.param("job", "body", id="body-a-string"),
]


@pytest.mark.parametrize(("body", "field"), CREATE_CASES)
def test_given_a_bad_create_body_when_posted_then_422_names_the_field_and_no_job_exists(
    call: Call, body: Any, field: str
) -> None:
    status, error = call("POST", "/v1/jobs", body)
    assert_refused(status, error, 422, field)
    assert_no_jobs(call)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8000/hook",
        "http://api.localhost/hook",
        "http://[::1]/hook",
        "http://2130706433/hook",
        "http://0177.0.0.1/hook",
        "http://0x7f.1/hook",
        "http://127.1/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://[::ffff:10.0.0.1]/",
        "http://0.0.0.0/",
    ],
)
def test_given_a_deployment_without_loopback_when_a_target_reaches_a_local_address_then_422_target_url(
    strict_call: Call, url: str
) -> None:
    status, error = strict_call("POST", "/v1/jobs", http(url))
    assert_refused(status, error, 422, "target.url")
    assert_no_jobs(strict_call)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/hook"]
)
def test_given_the_local_stack_policy_when_a_target_is_on_loopback_then_it_is_accepted(
    call: Call, url: str
) -> None:
    status, job = call("POST", "/v1/jobs", http(url))
    assert status == 201, job
    assert job["target"]["url"] == url


@pytest.mark.parametrize(
    ("raw", "expected_status", "field"),
    [
        pytest.param(b'{"schedule": {"cron": "0 * * * *"}', 400, "body", id="truncated-json"),
        pytest.param(b"{'schedule': 1}", 400, "body", id="single-quotes"),
        pytest.param(b"not json at all", 400, "body", id="plain-text"),
        pytest.param(b'{"schedule": {"cron": "0 * * * *"},}', 400, "body", id="trailing-comma"),
        pytest.param(
            json.dumps({**GOOD, "payload": "x" * (64 * 1024)}).encode(), 413, "body", id="payload-over-64-kib"
        ),
        pytest.param(b" " * (64 * 1024 + 1), 413, "body", id="whitespace-over-64-kib"),
    ],
)
def test_given_a_malformed_or_oversized_body_when_posted_then_400_or_413_names_the_body(
    call: Call, raw: bytes, expected_status: int, field: str
) -> None:
    status, error = call("POST", "/v1/jobs", raw)
    assert_refused(status, error, expected_status, field)
    assert_no_jobs(call)


def test_given_an_empty_body_when_posted_then_422_names_the_body(call: Call) -> None:
    status, error = call("POST", "/v1/jobs", b"")
    assert_refused(status, error, 422, "body")
    assert_no_jobs(call)


def test_given_a_body_of_exactly_64_kib_when_posted_then_it_is_not_refused_for_its_size(call: Call) -> None:
    empty = json.dumps({**GOOD, "payload": ""}).encode()
    raw = json.dumps({**GOOD, "payload": "x" * (64 * 1024 - len(empty))}).encode()
    assert len(raw) == 64 * 1024
    status, job = call("POST", "/v1/jobs", raw)
    assert status == 201, job


def test_given_an_idempotency_key_over_128_characters_when_creating_then_422_names_the_header(
    call: Call,
) -> None:
    status, error = call("POST", "/v1/jobs", GOOD, headers={"Idempotency-Key": "k" * 129})
    assert_refused(status, error, 422, "Idempotency-Key")  # spelled as the 409 for a reused key spells it
    assert_no_jobs(call)


def test_given_a_live_job_with_a_name_when_another_takes_the_name_then_409_names_name(call: Call) -> None:
    status, first = call("POST", "/v1/jobs", body_with(name="nightly"))
    assert status == 201, first
    status, error = call("POST", "/v1/jobs", body_with(name="nightly", payload={"other": True}))
    assert_refused(status, error, 409, "name")
    status, page = call("GET", "/v1/jobs")
    assert [job["job_id"] for job in page["items"]] == [first["job_id"]]


def cursor_of(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


QUERY_CASES = [
    pytest.param("/v1/jobs?limit=0", "limit", id="jobs-limit-0"),
    pytest.param("/v1/jobs?limit=101", "limit", id="jobs-limit-101"),
    pytest.param("/v1/jobs?limit=-1", "limit", id="jobs-limit-negative"),
    pytest.param("/v1/jobs?limit=ten", "limit", id="jobs-limit-not-a-number"),
    pytest.param("/v1/jobs?status=RUNNING", "status", id="jobs-status-a-run-status"),
    pytest.param("/v1/jobs?status=active", "status", id="jobs-status-lowercase"),
    pytest.param("/v1/jobs?cursor=not-a-cursor", "cursor", id="jobs-cursor-garbage"),
    pytest.param("/v1/jobs?cursor=" + "A" * 2049, "cursor", id="jobs-cursor-too-long"),
    pytest.param("/v1/jobs?cursor=" + cursor_of([1, 2]), "cursor", id="jobs-cursor-a-list"),
    pytest.param("/v1/jobs?cursor=" + cursor_of({"pk": 1}), "cursor", id="jobs-cursor-wrong-shape"),
    pytest.param("/v1/jobs?name=" + "n" * 129, "name", id="jobs-name-too-long"),
    pytest.param("/v1/jobs/{job}/runs?limit=0", "limit", id="runs-limit-0"),
    pytest.param("/v1/jobs/{job}/runs?limit=1000", "limit", id="runs-limit-1000"),
    pytest.param("/v1/jobs/{job}/runs?status=ACTIVE", "status", id="runs-status-a-job-status"),
    pytest.param("/v1/jobs/{job}/runs?status=done", "status", id="runs-status-unknown"),
    pytest.param("/v1/jobs/{job}/runs?cursor=%%%", "cursor", id="runs-cursor-garbage"),
]


@pytest.mark.parametrize(("path", "field"), QUERY_CASES)
def test_given_a_bad_query_string_when_listing_then_422_names_the_parameter(
    call: Call, path: str, field: str
) -> None:
    if "{job}" in path:
        status, job = call("POST", "/v1/jobs", GOOD)
        assert status == 201, job
        path = path.replace("{job}", job["job_id"])
    status, error = call("GET", path)
    assert_refused(status, error, 422, field)


# A cursor shaped like ours (a DynamoDB key of strings) whose key does not belong to the listing: it
# must be refused before it reaches DynamoDB as ExclusiveStartKey (which would raise, a 500).
@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/v1/jobs?cursor=" + cursor_of({"x": {"S": "y"}}), id="jobs-cursor-unknown-key"),
        pytest.param(
            "/v1/jobs?cursor=" + cursor_of({"pk": {"S": "JOB#job_x"}, "sk": {"S": "JOB"}}),
            id="jobs-cursor-table-key-without-index-key",
        ),
        pytest.param(
            "/v1/jobs/{job}/runs?cursor=" + cursor_of({"x": {"S": "y"}}), id="runs-cursor-unknown-key"
        ),
    ],
)
def test_given_a_well_formed_cursor_this_api_never_returned_when_listing_then_422_names_the_cursor(
    call: Call, path: str
) -> None:
    status, job = call("POST", "/v1/jobs", GOOD)
    assert status == 201, job
    status, error = call("GET", path.replace("{job}", job["job_id"]))
    assert_refused(status, error, 422, "cursor")


def test_given_a_cursor_from_alices_list_when_bob_or_another_listing_uses_it_then_422_names_the_cursor(
    call: Call,
) -> None:
    jobs = [call("POST", "/v1/jobs", GOOD)[1] for _ in range(3)]
    status, page = call("GET", "/v1/jobs?limit=1")
    assert status == 200 and page["next_cursor"]
    cursor = page["next_cursor"]
    status, error = call("GET", f"/v1/jobs?cursor={cursor}", owner="bob")
    assert_refused(status, error, 422, "cursor")
    status, error = call("GET", f"/v1/jobs/{jobs[0]['job_id']}/runs?cursor={cursor}")
    assert_refused(status, error, 422, "cursor")
    status, rest = call("GET", f"/v1/jobs?limit=10&cursor={cursor}")
    assert status == 200 and len(rest["items"]) == 2, "the cursor still works where it came from"


# ------------------------------------------------------------------------- the body as a whole


@pytest.mark.parametrize("body", [[GOOD], [GOOD, GOOD]], ids=["one-element", "two-elements"])
def test_given_a_json_array_of_jobs_when_posted_then_422_names_the_body(call: Call, body: Any) -> None:
    status, error = call("POST", "/v1/jobs", body)
    assert_refused(status, error, 422, "body")
    assert_no_jobs(call)


def test_given_a_body_that_is_not_utf8_when_posted_then_400_names_the_body(call: Call) -> None:
    status, error = call("POST", "/v1/jobs", b"\xff\xfe\x00garbage")
    assert_refused(status, error, 400, "body")
    assert_no_jobs(call)


MARK = "@@surrogate@@"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(body_with(payload=MARK), id="payload"),
        pytest.param(body_with(tags={"team": MARK}), id="tag-value"),
        pytest.param(http("https://example.com/", headers={"X-A": MARK}), id="target-header"),
        pytest.param(http(f"https://example.com/{MARK}"), id="target-url"),
    ],
)
def test_given_an_unpaired_surrogate_in_a_string_when_posted_then_400_names_the_body(
    call: Call, body: dict[str, Any]
) -> None:
    raw = json.dumps(body).replace(MARK, "\\ud800").encode()  # valid JSON syntax, not valid Unicode
    status, error = call("POST", "/v1/jobs", raw)
    assert_refused(status, error, 400, "body")
    assert_no_jobs(call)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_given_a_non_json_number_in_the_payload_when_posted_then_400_names_the_body(
    call: Call, literal: str
) -> None:
    raw = json.dumps(GOOD)[:-1] + f', "payload": {literal}}}'
    status, error = call("POST", "/v1/jobs", raw.encode())
    assert_refused(status, error, 400, "body")
    assert_no_jobs(call)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(body_with(timeout_seconds=True), "timeout_seconds", id="timeout_seconds"),
        pytest.param(body_with(retry={"max_attempts": True}), "retry.max_attempts", id="max_attempts"),
    ],
)
def test_given_a_boolean_for_an_integer_field_when_posted_then_422_names_the_field(
    call: Call, body: dict[str, Any], field: str
) -> None:
    status, error = call("POST", "/v1/jobs", body)
    assert_refused(status, error, 422, field)
    assert_no_jobs(call)


def test_given_a_boolean_for_the_targets_timeout_when_posted_then_422_names_it(call: Call) -> None:
    status, error = call("POST", "/v1/jobs", http("https://example.com/", timeout_seconds=True))
    assert_refused(status, error, 422, "target.timeout_seconds")


def test_given_whole_floats_for_integer_fields_when_posted_or_patched_then_they_are_those_integers(
    call: Call,
) -> None:
    # The OpenAPI document says "integer", and JSON Schema counts 30.0 as one (schemathesis's stateful
    # phase sends such bodies; so does any client whose numbers are all floats). 30.5 stays refused.
    status, job = call(
        "POST",
        "/v1/jobs",
        body_with(
            schedule={"cron": "0 13 * * 1-5", "misfire": "run_all", "catchup_seconds": 3600.0},
            retry={"max_attempts": 2.0},
            timeout_seconds=30.0,
        ),
    )
    assert status == 201, job
    assert job["schedule"]["catchup_seconds"] == 3600 and job["retry"]["max_attempts"] == 2
    assert job["timeout_seconds"] == 30 and isinstance(job["timeout_seconds"], int)
    status, job = call("PATCH", f"/v1/jobs/{job['job_id']}", {"timeout_seconds": 45.0})
    assert status == 200, job
    assert job["timeout_seconds"] == 45 and isinstance(job["timeout_seconds"], int)
    status, error = call("PATCH", f"/v1/jobs/{job['job_id']}", {"timeout_seconds": 45.5})
    assert_refused(status, error, 422, "timeout_seconds")


PATCH_CASES = [
    pytest.param({"schedule": {"cron": "61 * * * *"}}, 422, "schedule.cron", id="cron-out-of-range"),
    pytest.param(
        {"schedule": {"cron": "0 12 * * *", "timezone": "Europe/Nowhere"}},
        422,
        "schedule.timezone",
        id="timezone-unknown",
    ),
    pytest.param({"schedule": {"rate": "5 seconds"}}, 422, "schedule.rate", id="rate-below-minimum"),
    pytest.param({"schedule": {"at": "2027-02-29T00:00:00Z"}}, 422, "schedule.at", id="at-29-february-2027"),
    pytest.param({"schedule": {}}, 422, "schedule", id="no-schedule-form"),
    pytest.param({"schedule": None}, 422, "schedule", id="schedule-null"),
    pytest.param({"schedule": {"cron": "0 * * * *", "when": 1}}, 422, "schedule.when", id="schedule-unknown"),
    pytest.param({"target": None}, 422, "target", id="target-null"),
    pytest.param({"target": {"type": "smtp"}}, 422, "target.type", id="target-type-unknown"),
    pytest.param(
        {"target": {"type": "http", "url": "http://169.254.169.254/"}}, 422, "target.url", id="ssrf-metadata"
    ),
    pytest.param(
        {"target": {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:123456789012:t"}},
        422,
        "target.topic_arn",
        id="sns-not-allowed",
    ),
    pytest.param({"retry": {"max_attempts": -2}}, 422, "retry.max_attempts", id="retry-negative"),
    pytest.param({"retry": {"backoff": 1}}, 422, "retry.backoff", id="retry-unknown-field"),
    pytest.param({"timeout_seconds": 0}, 422, "timeout_seconds", id="timeout-zero"),
    pytest.param({"tags": {"a": ["b"]}}, 422, "tags.a", id="tag-value-a-list"),
    pytest.param({"name": "bad name"}, 422, "name", id="name-bad"),
    pytest.param({"status": "PAUSED"}, 422, "status", id="status-is-not-patchable"),
    pytest.param({"job_id": "job_other"}, 422, "job_id", id="job_id-is-not-patchable"),
    pytest.param(b"{not json", 400, "body", id="malformed-json"),
    pytest.param({"payload": "x" * (64 * 1024)}, 413, "body", id="payload-over-64-kib"),
    pytest.param({"name": "taken"}, 409, "name", id="name-of-another-live-job"),
]


@pytest.mark.parametrize(("changes", "expected_status", "field"), PATCH_CASES)
def test_given_a_bad_patch_when_sent_then_it_is_refused_naming_the_field_and_the_job_is_unchanged(
    call: Call, changes: Any, expected_status: int, field: str
) -> None:
    status, _ = call("POST", "/v1/jobs", body_with(name="taken"))
    assert status == 201
    status, job = call("POST", "/v1/jobs", body_with(name="mine"))
    assert status == 201, job
    status, error = call("PATCH", f"/v1/jobs/{job['job_id']}", changes)
    assert_refused(status, error, expected_status, field)
    status, after = call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200
    assert after == job, "a refused PATCH changed the job"
    status, page = call("GET", "/v1/jobs")
    assert len(page["items"]) == 2, "a refused PATCH created a job"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/jobs/job_missing"),
        ("PATCH", "/v1/jobs/job_missing"),
        ("DELETE", "/v1/jobs/job_missing"),
        ("POST", "/v1/jobs/job_missing/pause"),
        ("POST", "/v1/jobs/job_missing/resume"),
        ("POST", "/v1/jobs/job_missing/run"),
        ("GET", "/v1/jobs/job_missing/runs"),
        ("GET", "/v1/jobs/job_missing/runs/20261122T120000.000Z-00000000"),
        ("POST", "/v1/jobs/job_missing/runs/20261122T120000.000Z-00000000/cancel"),
    ],
)
def test_given_no_such_job_when_any_job_route_is_called_then_404_names_job_id(
    call: Call, method: str, path: str
) -> None:
    status, error = call(method, path, {"tags": {}} if method == "PATCH" else None)
    assert status == 404, error
    assert error["error"] == "not_found" and error["field"] == "job_id" and error["reason"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("GET", "/", id="root"),
        pytest.param("GET", "/v1/nothing-here", id="unknown-path"),
        pytest.param("GET", "/v1/jobs/job_x/runs/r/attempts", id="too-deep"),
        pytest.param("PUT", "/v1/jobs", id="put-jobs"),
        pytest.param("DELETE", "/v1/stats", id="delete-stats"),
        pytest.param("POST", "/v1/health", id="post-health"),
    ],
)
def test_given_a_route_that_does_not_exist_when_called_then_404_names_the_path(
    call: Call, method: str, path: str
) -> None:
    status, error = call(method, path)
    assert status == 404, error
    assert error["error"] == "not_found" and error["field"] == "path" and error["reason"], error


# ---------------------------------------------------------------------- routes and media types


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/octet-stream"])
def test_given_a_body_that_is_not_json_by_content_type_when_posted_then_415(
    call: Call, content_type: str
) -> None:
    status, error = call("POST", "/v1/jobs", GOOD, headers={"Content-Type": content_type})
    assert status == 415, error
    assert error["error"] == "unsupported_media_type" and error["field"] == "Content-Type", error
    assert error["reason"], error
    assert_no_jobs(call)


def test_given_an_upper_case_json_content_type_when_posted_then_the_job_is_created(call: Call) -> None:
    status, job = call("POST", "/v1/jobs", GOOD, headers={"Content-Type": "APPLICATION/JSON"})
    assert status == 201, job


def test_given_json_sent_as_curls_default_form_type_when_posted_then_it_is_read_as_json(call: Call) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    status, job = call("POST", "/v1/jobs", GOOD, headers=headers)
    assert status == 201, job


def test_given_a_json_content_type_with_a_charset_when_posted_then_the_job_is_created(call: Call) -> None:
    headers = {"Content-Type": "application/json; charset=utf-8"}
    status, job = call("POST", "/v1/jobs", GOOD, headers=headers)
    assert status == 201, job


# ---------------------------------------------------------------------- the target's models


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"type": "http", "url": 5}, "target.url", id="http-url-a-number"),
        pytest.param(
            {"type": "http", "url": "https://example.com", "method": 1}, "target.method", id="method"
        ),
        pytest.param(
            {"type": "http", "url": "https://example.com", "headers": {"X-A": 1}},
            "target.headers",
            id="header",
        ),
        pytest.param({"type": "lambda", "function": 5}, "target.function", id="lambda-function-a-number"),
        pytest.param({"type": "lambda"}, "target.function", id="lambda-function-missing"),
        pytest.param({"type": "sqs", "queue_url": ["q"]}, "target.queue_url", id="sqs-queue_url-a-list"),
        pytest.param({"type": "sns", "topic_arn": ""}, "target.topic_arn", id="sns-topic_arn-empty"),
        pytest.param({"type": "eventbridge", "bus": 5}, "target.bus", id="eventbridge-bus-a-number"),
        pytest.param({"type": "sqs", "topic_arn": "x"}, "target.topic_arn", id="field-of-another-type"),
    ],
)
def test_given_a_bad_field_inside_a_target_when_posted_then_422_names_target_dot_field(
    call: Call, spec: dict[str, Any], field: str
) -> None:
    # The target's models pick the model by type; the field itself is named without the type's tag.
    status, error = call("POST", "/v1/jobs", body_with(target=spec))
    assert_refused(status, error, 422, field)
    assert all(".http." not in problem["field"] for problem in error.get("problems", []))
    assert_no_jobs(call)


@pytest.mark.parametrize(
    "spec", [{"type": "smtp"}, {"url": "https://example.com"}, {"type": 1}, {"type": None}]
)
def test_given_an_unknown_or_missing_target_type_when_posted_then_the_reason_lists_the_types(
    call: Call, spec: dict[str, Any]
) -> None:
    status, error = call("POST", "/v1/jobs", body_with(target=spec))
    assert_refused(status, error, 422, "target.type")
    assert error["reason"] == "must be one of http, lambda, sqs, sns, eventbridge"


def test_a_pydantic_location_inside_a_target_drops_the_discriminators_tag() -> None:
    from punctual_functions.api.handler import target_location

    assert target_location(["target", "http", "url"], {}) == ["target", "url"]
    assert target_location(["target", "eventbridge", "bus"], {}) == ["target", "bus"]
    assert target_location(["target"], {"ctx": {"field": "type"}}) == ["target", "type"]
    assert target_location(["target"], {"ctx": {"limit": 1}}) == ["target"]


@pytest.mark.parametrize(
    ("spec", "stored"),
    [
        pytest.param(
            {
                "type": "http",
                "url": "https://example.com/h",
                "method": "put",
                "headers": {"B": "1", "A": "2"},
            },
            {
                "type": "http",
                "url": "https://example.com/h",
                "method": "PUT",
                "headers": {"B": "1", "A": "2"},
            },
            id="http",
        ),
        pytest.param(
            {"url": "https://example.com/h", "type": "http", "timeout_seconds": 2.5, "method": None},
            {
                "type": "http",
                "url": "https://example.com/h",
                "method": "POST",
                "headers": {},
                "timeout_seconds": 2.5,
            },
            id="http-defaults",
        ),
    ],
)
def test_given_a_target_when_created_read_and_patched_then_it_is_the_domains_normalised_dict(
    call: Call, spec: dict[str, Any], stored: dict[str, Any]
) -> None:
    status, job = call("POST", "/v1/jobs", body_with(target=spec))
    assert status == 201, job
    assert json.dumps(job["target"]) == json.dumps(stored)
    status, read = call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200 and json.dumps(read["target"]) == json.dumps(stored), read
    status, patched = call("PATCH", f"/v1/jobs/{job['job_id']}", {"target": spec})
    assert status == 200 and json.dumps(patched["target"]) == json.dumps(stored), patched


def test_given_the_deployments_allow_list_item_when_a_job_targets_a_queue_then_only_its_queues_are_taken(
    call: Call, harness: Harness
) -> None:
    """The deployment's allow-list lives in the table (the CDK stack's custom resource writes it, as
    the local stack's provisioning does): the API reads it there, not from its environment."""
    harness.store.put_allowed_targets(["arn:aws:sqs:us-east-1:123456789012:reports-*"])
    allowed = "https://sqs.us-east-1.amazonaws.com/123456789012/reports-daily"
    status, job = call("POST", "/v1/jobs", target(type="sqs", queue_url=allowed))
    assert status == 201, job
    refused = "https://sqs.us-east-1.amazonaws.com/123456789012/billing"
    status, error = call("POST", "/v1/jobs", target(type="sqs", queue_url=refused))
    assert_refused(status, error, 422, "target.queue_url")

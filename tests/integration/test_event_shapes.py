"""The handlers against the events AWS really sends (tests/fixtures/events): API Gateway REST proxy
requests from an IAM user, an assumed role and an API key, HTTP API requests (payload 2.0) from an
assumed role, an EventBridge scheduled tick and SQS records. A job created through such a request is
dispatched and executed."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from punctual.local.gateway import LambdaContext
from punctual.testing.receiver import Receiver
from punctual_functions.api import handler as api
from punctual_functions.core.model import RunStatus, iso
from punctual_functions.dispatcher import handler as dispatcher
from punctual_functions.worker import handler as worker
from tests.integration.conftest import Harness

EVENTS = Path(__file__).resolve().parent.parent / "fixtures" / "events"
IAM_USER = "apigateway_rest_iam_user.json"
ASSUMED_ROLE = "apigateway_rest_assumed_role.json"
API_KEY = "apigateway_rest_api_key.json"
HTTP_ROLE = "apigateway_http_assumed_role.json"  # the default deployment: an HTTP API with IAM
DOMAIN = "abc123defg.execute-api.eu-west-1.amazonaws.com"


def sample(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


def request(
    name: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    session: str | None = None,
    query: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The sample request with this method, path (REST: under the stage ``prod``; HTTP API: on its
    ``$default`` stage), query and JSON body."""
    event = sample(name)
    if event.get("version") == "2.0":
        event["rawPath"] = event["requestContext"]["http"]["path"] = path
        event["requestContext"]["http"]["method"] = method
        event["pathParameters"] = {"proxy": path.removeprefix("/v1/")}
        event["rawQueryString"] = "&".join(f"{key}={value}" for key, value in (query or {}).items())
        if query:
            event["queryStringParameters"] = dict(query)
        if body is not None:
            event["body"] = json.dumps(body)
        if session is not None:
            iam = event["requestContext"]["authorizer"]["iam"]
            iam["userArn"] = iam["userArn"].rsplit("/", 1)[0] + f"/{session}"
            iam["callerId"] = iam["userId"] = f"AROAEXAMPLEID:{session}"
        return event
    event["queryStringParameters"] = dict(query) if query else None
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in query.items()} if query else None
    event["httpMethod"] = event["requestContext"]["httpMethod"] = method
    event["path"] = path
    event["requestContext"]["path"] = f"/prod{path}"
    event["pathParameters"] = {"proxy": path.removeprefix("/v1/")}
    event["body"] = json.dumps(body) if body is not None else None
    if session is not None:  # another user of the same permission set
        identity = event["requestContext"]["identity"]
        identity["userArn"] = identity["userArn"].rsplit("/", 1)[0] + f"/{session}"
        identity["caller"] = identity["user"] = f"AROAEXAMPLEID:{session}"
    return event


@pytest.fixture
def deployed(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Harness:
    """The handlers wired to the harness, with a deployment's settings (SigV4, owner per role)."""
    settings = harness.settings.replace(api_auth="iam", owner_mode="role")
    monkeypatch.setattr(api, "deps", lambda: harness.service)
    monkeypatch.setattr(api, "get_settings", lambda: settings)
    monkeypatch.setattr(worker, "run_executor", lambda: harness.executor)
    monkeypatch.setattr(dispatcher, "default_dispatcher", lambda: harness.dispatcher)
    monkeypatch.setattr(dispatcher, "get_settings", lambda: harness.settings)
    return harness


def use_settings(monkeypatch: pytest.MonkeyPatch, harness: Harness, **changes: str) -> None:
    settings = harness.settings.replace(**changes)
    monkeypatch.setattr(api, "get_settings", lambda: settings)


def call(event: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    result = api.handler(copy.deepcopy(event), LambdaContext())  # type: ignore[arg-type]
    body = result.get("body") or ""
    # A REST API proxy answer may carry its headers in either form.
    headers = {
        **{key: values[-1] for key, values in (result.get("multiValueHeaders") or {}).items()},
        **(result.get("headers") or {}),
    }
    parsed = json.loads(body) if headers.get("Content-Type", "").startswith("application/json") else body
    return result["statusCode"], parsed, headers


def job_body(receiver: Receiver, harness: Harness, seconds: float = 3) -> dict[str, Any]:
    return {
        "schedule": {"at": iso(harness.clock() + timedelta(seconds=seconds))},
        "target": {"type": "http", "url": receiver.url + "/shaped"},
    }


@pytest.mark.parametrize(
    ("sample_name", "owner"),
    [
        (IAM_USER, "arn:aws:iam::123456789012:user/alice"),
        (ASSUMED_ROLE, "arn:aws:iam::123456789012:role/AWSReservedSSO_Developers_0123456789abcdef"),
        (API_KEY, "k1xmpl2abc"),
        (HTTP_ROLE, "arn:aws:iam::123456789012:role/AWSReservedSSO_Developers_0123456789abcdef"),
    ],
)
def test_given_a_caller_as_api_gateway_authenticates_it_when_it_creates_a_job_then_it_owns_it(
    deployed: Harness, receiver: Receiver, sample_name: str, owner: str
) -> None:
    status, job, _ = call(request(sample_name, "POST", "/v1/jobs", job_body(receiver, deployed)))
    assert status == 201, job
    assert deployed.job(job["job_id"]).owner == owner
    status, seen, _ = call(request(sample_name, "GET", f"/v1/jobs/{job['job_id']}"))
    assert status == 200 and seen["job_id"] == job["job_id"]
    other = IAM_USER if sample_name != IAM_USER else API_KEY
    status, _, _ = call(request(other, "GET", f"/v1/jobs/{job['job_id']}"))
    assert status == 404, "another caller must not see the job"


@pytest.mark.parametrize("role", [ASSUMED_ROLE, HTTP_ROLE])
def test_given_owner_mode_role_when_two_sso_users_share_a_permission_set_then_they_share_jobs(
    deployed: Harness, receiver: Receiver, role: str
) -> None:
    status, job, _ = call(request(role, "POST", "/v1/jobs", job_body(receiver, deployed)))
    assert status == 201
    status, _, _ = call(request(role, "GET", f"/v1/jobs/{job['job_id']}", session="bob@example.com"))
    assert status == 200, "the default owner is the role: every session of it sees the job"


@pytest.mark.parametrize("role", [ASSUMED_ROLE, HTTP_ROLE])
def test_given_owner_mode_session_when_two_sso_users_share_a_permission_set_then_each_owns_their_own(
    deployed: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, role: str
) -> None:
    use_settings(monkeypatch, deployed, api_auth="iam", owner_mode="session")
    status, job, _ = call(request(role, "POST", "/v1/jobs", job_body(receiver, deployed)))
    assert status == 201
    assert deployed.job(job["job_id"]).owner == (
        "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Developers_0123456789abcdef/alice@example.com"
    )
    status, _, _ = call(request(role, "GET", f"/v1/jobs/{job['job_id']}", session="bob@example.com"))
    assert status == 404, "with owner_mode=session another session of the role must not see the job"
    status, _, _ = call(request(role, "GET", f"/v1/jobs/{job['job_id']}"))
    assert status == 200


def test_given_an_http_api_request_without_an_iam_caller_when_it_calls_a_route_then_it_is_refused(
    deployed: Harness, receiver: Receiver
) -> None:
    event = request(HTTP_ROLE, "POST", "/v1/jobs", job_body(receiver, deployed))
    del event["requestContext"]["authorizer"]
    status, body, _ = call(event)
    assert status == 401 and body["error"] == "unauthorized", body


def test_given_an_http_api_request_when_it_lists_with_a_query_then_the_query_and_the_batch_limit_apply(
    deployed: Harness, receiver: Receiver
) -> None:
    for _ in range(3):
        assert call(request(HTTP_ROLE, "POST", "/v1/jobs", job_body(receiver, deployed)))[0] == 201
    status, page, _ = call(request(HTTP_ROLE, "GET", "/v1/jobs", query={"limit": "2"}))
    assert status == 200 and len(page["items"]) == 2 and page["next_cursor"]
    status, body, _ = call(request(HTTP_ROLE, "GET", "/v1/jobs", query={"limit": "0"}))
    assert status == 422 and body["field"] == "limit", body
    big = {"jobs": [job_body(receiver, deployed) | {"payload": {"pad": "x" * 60_000}} for _ in range(20)]}
    status, body, _ = call(request(HTTP_ROLE, "POST", "/v1/jobs/batch", big))
    assert status == 413 and "1 MiB" in body["reason"], body
    status, answer, _ = call(
        request(HTTP_ROLE, "POST", "/v1/jobs/batch", {"jobs": [job_body(receiver, deployed)]})
    )
    assert status == 200 and answer["items"][0]["status"] == 201, answer


def test_given_a_deployed_stage_when_the_openapi_document_is_read_then_it_names_the_stage_and_sigv4(
    deployed: Harness,
) -> None:
    status, document, _ = call(request(IAM_USER, "GET", "/openapi.json"))
    assert status == 200
    assert document["servers"] == [{"url": f"https://{DOMAIN}/prod"}], "clients must call the stage's URL"
    assert document["security"] == [{"sigv4": []}]
    scheme = document["components"]["securitySchemes"]["sigv4"]
    assert scheme["x-amazon-apigateway-authtype"] == "awsSigv4" and scheme["name"] == "Authorization"
    assert document["paths"]["/v1/health"]["get"]["security"] == []


def test_given_an_http_api_when_the_openapi_document_and_docs_are_read_then_they_name_its_root_url(
    deployed: Harness,
) -> None:
    status, document, _ = call(request(HTTP_ROLE, "GET", "/openapi.json"))
    assert status == 200
    assert document["servers"] == [{"url": f"https://{DOMAIN}"}], "the $default stage adds no path"
    assert document["security"] == [{"sigv4": []}]
    status, page, _ = call(request(HTTP_ROLE, "GET", "/docs"))
    assert status == 200 and '"/openapi.json"' in page and '"/docs/swagger-ui-bundle.min.js"' in page


def test_given_api_key_mode_when_the_openapi_document_is_read_then_it_asks_for_x_api_key(
    deployed: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_settings(monkeypatch, deployed, api_auth="api_key")
    _, document, _ = call(request(API_KEY, "GET", "/openapi.json"))
    assert document["security"] == [{"api_key": []}]
    assert document["components"]["securitySchemes"]["api_key"] == {
        "type": "apiKey",
        "name": "x-api-key",
        "in": "header",
        "description": "An API key of the deployment's usage plan; the key's id owns the jobs.",
    }


def test_given_a_deployed_stage_when_docs_are_opened_then_the_page_is_small_and_loads_its_assets_there(
    deployed: Harness,
) -> None:
    status, page, headers = call(request(IAM_USER, "GET", "/docs"))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert len(page.encode()) < 4096, f"the docs page is {len(page.encode())} bytes"
    assert '"/prod/openapi.json"' in page and "/prod/docs/swagger-ui-bundle.min.js" in page
    status, script, headers = call(request(IAM_USER, "GET", "/docs/swagger-ui-bundle.min.js"))
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert "SwaggerUIBundle" in script and "max-age" in headers["Cache-Control"]
    status, _, _ = call(request(IAM_USER, "GET", "/docs/secrets.txt"))
    assert status == 404


@pytest.mark.moto_only("reaches past the ports into boto3")
@pytest.mark.parametrize("caller", [IAM_USER, HTTP_ROLE])
def test_given_a_job_created_through_api_gateway_when_ticked_and_polled_then_it_runs(
    deployed: Harness, receiver: Receiver, caller: str
) -> None:
    # Given a job created by an IAM caller (through a REST API or an HTTP API), due beyond the look-ahead
    body = job_body(receiver, deployed, seconds=deployed.settings.lookahead_seconds + 30)
    status, job, _ = call(request(caller, "POST", "/v1/jobs", body))
    assert status == 201 and deployed.queue.sent == []
    # When EventBridge ticks the dispatcher once its look-ahead reaches the job
    deployed.clock.advance(60)
    summary = dispatcher.handler(sample("eventbridge_scheduled.json"), LambdaContext())  # type: ignore[arg-type]
    assert summary["sent"] == 1
    # And the event source mapping hands the message to the worker as SQS does, before it is due
    deployed.clock.advance(deployed.settings.lookahead_seconds + 30 - 60 - 2)
    (message,) = deployed.queue.client.receive_message(  # type: ignore[attr-defined]
        QueueUrl=deployed.queue.queue_url,  # type: ignore[attr-defined]
        AttributeNames=["All"],
        VisibilityTimeout=30,
    )["Messages"]
    record = sample("sqs_record.json")
    record.update(
        messageId=message["MessageId"], receiptHandle=message["ReceiptHandle"], body=message["Body"]
    )
    record["attributes"]["ApproximateReceiveCount"] = message["Attributes"]["ApproximateReceiveCount"]
    result = worker.handler({"Records": [record]}, LambdaContext())  # type: ignore[arg-type]
    # Then the run succeeded and the target was called once, at its second
    assert result["batchItemFailures"] == []
    (delivery,) = receiver.for_path("/shaped")
    status, runs, _ = call(request(caller, "GET", f"/v1/jobs/{job['job_id']}/runs"))
    assert status == 200 and runs["items"][0]["status"] == RunStatus.SUCCEEDED.value
    assert delivery.headers["Punctual-Run-Id"] == runs["items"][0]["run_id"]


def test_given_an_http_api_when_idempotency_keys_hold_commas_then_each_key_is_its_own(
    deployed: Harness, receiver: Receiver
) -> None:
    """An HTTP API event carries each header as one string, which Powertools splits at its commas
    for list-typed parameters: a key with a comma must still reach the route whole (a key cut at its
    comma would let "k,1" and "j,1" collide)."""
    jobs = []
    for key in ("k,1", "j,1", "k,1"):
        event = request(HTTP_ROLE, "POST", "/v1/jobs", job_body(receiver, deployed))
        event["headers"]["idempotency-key"] = key
        status, job, _ = call(event)
        assert status == 201, job
        jobs.append(job["job_id"])
    assert jobs[0] != jobs[1], "different keys, different jobs"
    assert jobs[0] == jobs[2], "the same key replays"
    event = request(HTTP_ROLE, "POST", "/v1/jobs", job_body(receiver, deployed))
    event["headers"]["idempotency-key"] = "a" * 100 + "," + "b" * 100
    status, body, _ = call(event)
    assert status == 422 and body["field"] == "Idempotency-Key", body


@pytest.mark.parametrize("role", [ASSUMED_ROLE, HTTP_ROLE])
def test_given_two_sso_users_of_one_role_when_they_change_a_job_then_the_trail_names_each_and_the_request(
    deployed: Harness, receiver: Receiver, role: str
) -> None:
    """The owner is the role; the audit trail names the person (the session) and API Gateway's id of
    the request."""
    created_by = request(role, "POST", "/v1/jobs", job_body(receiver, deployed, seconds=3600))
    status, job, _ = call(created_by)
    assert status == 201, job
    paused_by = request(role, "POST", f"/v1/jobs/{job['job_id']}/pause", {"note": "why"}, session="bob@x")
    assert call(paused_by)[0] == 200
    status, page, _ = call(request(role, "GET", f"/v1/jobs/{job['job_id']}/changes"))
    assert status == 200, page
    paused, created = page["items"]
    role_session = "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Developers_0123456789abcdef"
    assert created["by"] == f"{role_session}/alice@example.com"
    assert paused["by"] == f"{role_session}/bob@x" and paused["note"] == "why"
    assert created["request_id"] == created_by["requestContext"]["requestId"]

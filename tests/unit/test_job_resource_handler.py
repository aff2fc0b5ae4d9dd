"""The jobs' custom resource function (``punctual_functions/cfn/handler.py``) as Lambda runs it: the API's URL
and the owner role from its environment, every request signed with SigV4 as the owner role, assumed
through STS (moto in process), and the framework's answer from the API's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

from punctual_functions.cfn import handler as cfn_handler
from punctual_functions.cfn.api import RETRY_FOR_SECONDS, HttpJobsApi
from punctual_functions.cfn.job_resource import Refused
from tests.integration.test_job_resource import JOB, event

OWNER = "arn:aws:iam::123456789012:role/jobs-owner"


class _Api(BaseHTTPRequestHandler):
    """Answers the create's two requests (its stack's jobs: none; the create) and records each."""

    seen: list[dict[str, Any]] = []

    def _answer(self, body: dict[str, Any], status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.seen.append({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        self._answer({"items": [], "next_cursor": None})

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        self.seen.append({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
        job = {
            "job_id": "job_0123",
            "name": body["name"],
            "next_run_at": "2026-11-28T01:00:00Z",
            "status": "ACTIVE",
        }
        self._answer(job, 201)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    _Api.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _key_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].split("Credential=")[1].split("/")[0]


def test_a_create_is_signed_as_the_owner_role_and_answered_with_the_job(
    moto_env: None, api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUNCTUAL_API_URL", api_url)
    monkeypatch.setenv(cfn_handler.OWNER_ROLE_ENV, OWNER)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    answer = cfn_handler.handler(event("Create", JOB, request="req-1"), None)
    assert answer == {
        "PhysicalResourceId": "job_0123",
        "Data": {
            "JobId": "job_0123",
            "Name": "nightly-report",
            "NextRunAt": "2026-11-28T01:00:00Z",
            "Status": "ACTIVE",
        },
    }
    assert [request["method"] for request in _Api.seen] == ["GET", "POST"]  # leftovers, then the create
    callers_key = boto3.session.Session().get_credentials().get_frozen_credentials().access_key  # type: ignore[union-attr]
    keys = {_key_of(request["headers"]) for request in _Api.seen}
    assert len(keys) == 1 and keys != {callers_key} and next(iter(keys)).startswith("ASIA")
    assert all("/eu-west-1/execute-api/aws4_request" in r["headers"]["Authorization"] for r in _Api.seen)
    assert _Api.seen[1]["headers"]["Idempotency-Key"].startswith("cfn-")


def test_without_an_owner_role_the_functions_own_credentials_sign(
    moto_env: None, api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUNCTUAL_API_URL", api_url)
    monkeypatch.delenv(cfn_handler.OWNER_ROLE_ENV, raising=False)
    cfn_handler.handler(event("Create", JOB, request="req-1"), None)
    callers_key = boto3.session.Session().get_credentials().get_frozen_credentials().access_key  # type: ignore[union-attr]
    assert {_key_of(request["headers"]) for request in _Api.seen} == {callers_key}


class _Flaky(BaseHTTPRequestHandler):
    """An API just deployed: its first answers are API Gateway's transient ones (a policy not in force,
    a route not live, throttling, a cold function), then the API's own; records each request."""

    script: list[tuple[int, dict[str, Any], dict[str, str]]] = []
    seen: list[dict[str, Any]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        status, answer, headers = self.script.pop(0) if self.script else (201, _JOB, {})
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *_args: Any) -> None:
        pass


_JOB = {"job_id": "job_0123", "name": "nightly-report", "status": "ACTIVE"}


@pytest.fixture
def flaky_url() -> Iterator[str]:
    _Flaky.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


def _api(url: str, clock: _Clock) -> HttpJobsApi:
    return HttpJobsApi(url, lambda _m, _u, _d, headers: headers, sleep=clock.sleep, monotonic=clock.monotonic)


def test_a_create_sent_while_the_new_api_answers_transiently_is_sent_again_until_it_is_taken(
    flaky_url: str,
) -> None:
    _Flaky.script = [
        (403, {"message": "User is not authorized to access this resource"}, {}),  # IAM propagating
        (404, {"message": "Not Found"}, {}),  # the route not live yet
        (429, {"message": "Too Many Requests"}, {"Retry-After": "2"}),
        (503, {"message": "Service Unavailable"}, {}),
    ]
    clock = _Clock()
    job = _api(flaky_url, clock).create({"name": "nightly-report"}, "cfn-key")
    assert job["job_id"] == "job_0123"
    assert [r["method"] for r in _Flaky.seen] == ["POST"] * 5
    assert {r["headers"]["Idempotency-Key"] for r in _Flaky.seen} == {"cfn-key"}, "one create, sent again"
    assert len(clock.waits) == 4 and clock.waits[2] >= 2, "never sooner than Retry-After"


def test_the_apis_own_refusals_are_answers_and_are_not_sent_again(flaky_url: str) -> None:
    clock = _Clock()
    _Flaky.script = [(404, {"reason": "no such job", "field": "job_id"}, {})]
    with pytest.raises(Refused) as gone:
        _api(flaky_url, clock).cancel("job_0123")
    assert gone.value.status == 404 and len(_Flaky.seen) == 1
    _Flaky.script = [(422, {"reason": "minute value 61 is out of range 0-59", "field": "schedule.cron"}, {})]
    with pytest.raises(Refused) as refused:
        _api(flaky_url, clock).create({"name": "x"}, "cfn-key")
    assert refused.value.field == "schedule.cron" and len(_Flaky.seen) == 2 and clock.waits == []


def test_transient_answers_are_sent_again_only_for_a_while(flaky_url: str) -> None:
    clock = _Clock()
    _Flaky.script = [(503, {"message": "Service Unavailable"}, {})] * 1000
    with pytest.raises(Refused) as refused:
        _api(flaky_url, clock).get("job_0123")
    assert refused.value.status == 503
    assert RETRY_FOR_SECONDS <= clock.now <= RETRY_FOR_SECONDS + 1e-6
    assert 10 < len(_Flaky.seen) < 200


def test_an_owner_role_that_is_not_assumable_yet_is_assumed_again_while_iam_propagates(
    moto_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    real_client: Any = boto3.session.Session.client
    refusals = [2]

    def client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = real_client(self, service, *args, **kwargs)
        if service == "sts":
            assume = made.assume_role

            def assume_role(**call: Any) -> Any:
                if refusals[0]:
                    refusals[0] -= 1
                    raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not yet"}}, "AssumeRole")
                return assume(**call)

            made.assume_role = assume_role
        return made

    monkeypatch.setattr(boto3.session.Session, "client", client)
    clock = _Clock()
    credentials = cfn_handler._credentials(OWNER, sleep=clock.sleep, monotonic=clock.monotonic)
    assert credentials.access_key.startswith("ASIA") and refusals == [0] and len(clock.waits) == 2

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

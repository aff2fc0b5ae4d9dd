"""The local gateway serves the api handler as one Lambda execution environment does."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from punctual.local.gateway import make_handler_class
from punctual.local.httpserver import LocalHTTPServer
from punctual_functions.api import handler as api
from punctual_functions.core.model import iso
from tests.integration.conftest import Harness


def test_given_parallel_requests_when_the_gateway_serves_them_then_each_gets_its_own_answer(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Powertools' resolver keeps the request it serves on the app; requests served at once in one
    # process mixed up their path arguments (a 500 now and then under the benchmark's parallel reads).
    monkeypatch.setattr(api, "deps", lambda: harness.service)
    jobs = [
        harness.create(
            schedule={"at": iso(harness.clock())}, target={"type": "http", "url": "http://127.0.0.1:9/x"}
        )["job_id"]
        for _ in range(6)
    ]
    server = LocalHTTPServer(("127.0.0.1", 0), make_handler_class({"t": harness.owner}, api.handler))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def runs_of(job_id: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{base}/v1/jobs/{job_id}/runs", headers={"Authorization": "Bearer t"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())

    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(runs_of, jobs * 25))
    finally:
        server.shutdown()
        server.server_close()
    assert {status for status, _ in answers} == {200}
    for (_, page), job_id in zip(answers, jobs * 25, strict=True):
        assert [run["job_id"] for run in page["items"]] == [job_id], "an answer was about another job"


def _serve(api_handler: Any, timeout_seconds: float = 29.0) -> tuple[LocalHTTPServer, str]:
    server = LocalHTTPServer(
        ("127.0.0.1", 0), make_handler_class({"t": "alice"}, api_handler, timeout_seconds)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _get(url: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": "Bearer t"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_handler_slower_than_api_gateway_waits_is_answered_504_as_api_gateway_does() -> None:
    release = threading.Event()

    def slow(event: dict[str, Any], context: Any) -> dict[str, Any]:
        assert context.get_remaining_time_in_millis() <= 500  # the api function's timeout, not 900 s
        release.wait(5)
        return {"statusCode": 200, "body": "{}"}

    server, base = _serve(slow, timeout_seconds=0.5)
    try:
        assert _get(f"{base}/v1/jobs") == (504, {"message": "Endpoint request timed out"})
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_an_answer_over_lambdas_6_mb_is_answered_502_as_api_gateway_does() -> None:
    def large(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": json.dumps({"items": ["x" * 1024] * 6200})}

    server, base = _serve(large)
    try:
        status, answer = _get(f"{base}/v1/jobs")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 502 and "6 MB" in answer["reason"]

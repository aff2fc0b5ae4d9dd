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

"""Delivery templates end to end in one process: refused at create and PATCH when they name anything
else, and filled in by the worker for each attempt (URL, headers, payload; the signature covers the
filled-in body)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual.verify import verify
from punctual_functions.core.model import RunStatus, iso
from punctual_functions.worker.context import ReturnLater
from tests.integration.conftest import GOOD_JOB, Harness

SECRET = "a-signing-secret-of-32-characters"


def test_each_attempt_fills_in_the_url_headers_and_payload(harness: Harness) -> None:
    with Receiver(lambda path, _n: (503, b"busy") if "attempt=1" in path else (200, b"ok")) as receiver:
        job = harness.create(
            schedule={"at": iso(harness.clock())},
            target={
                "type": "http",
                "url": receiver.url + "/runs/{{run_id}}?attempt={{attempt}}",
                "headers": {"X-Scheduled-For": "{{scheduled_for}}", "X-Job": "job {{job_id}}"},
            },
            payload={"run": "{{run_id}}", "attempt": "{{attempt}}", "fixed": 7},
            retry={"max_attempts": 2, "backoff_seconds": 1},
            signing_secret=SECRET,
        )
        message, _ = harness.queue.sent[0]
        with pytest.raises(ReturnLater):
            harness.executor.handle(message, None)
        (run,) = harness.store.list_runs(job["job_id"], limit=5)[0]
        assert run.status is RunStatus.RETRYING and run.next_attempt_at is not None
        harness.clock.now = run.next_attempt_at
        harness.executor.handle(message, None)
        first, second = receiver.snapshot()
    assert first.path == f"/runs/{run.run_id}?attempt=1" and second.path == f"/runs/{run.run_id}?attempt=2"
    assert second.headers["X-Scheduled-For"] == iso(run.scheduled_for)
    assert second.headers["X-Job"] == f"job {job['job_id']}"
    assert json.loads(first.body) == {"run": run.run_id, "attempt": "1", "fixed": 7}
    assert json.loads(second.body) == {"run": run.run_id, "attempt": "2", "fixed": 7}
    assert verify(SECRET, second.headers["Punctual-Signature"], second.body), "signed as delivered"


def test_the_job_keeps_its_templates(call) -> None:
    target = {"type": "http", "url": "https://example.com/runs/{{run_id}}"}
    status, job = call(
        "POST", "/v1/jobs", {**GOOD_JOB, "target": target, "payload": {"at": "{{scheduled_for}}"}}
    )
    assert status == 201, job
    assert job["target"]["url"] == target["url"] and job["payload"] == {"at": "{{scheduled_for}}"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"payload": {"when": "{{schedule_for}}"}}, "payload"),
        ({"target": {"type": "http", "url": "https://{{job_id}}.example.com/"}}, "target.url"),
        (
            {"target": {"type": "http", "url": "https://example.com/", "headers": {"X-A": "{{ 1 + 1 }}"}}},
            "target.headers.X-A",
        ),
    ],
)
def test_a_template_naming_anything_else_is_refused_at_create_and_patch(
    call, change: dict[str, Any], field: str
) -> None:
    status, error = call("POST", "/v1/jobs", {**GOOD_JOB, **change})
    assert status == 422 and error["field"] == field, error
    assert "{{run_id}}" in error["reason"] or "host" in error["reason"]
    _, job = call("POST", "/v1/jobs", GOOD_JOB)
    status, error = call("PATCH", f"/v1/jobs/{job['job_id']}", change)
    assert status == 422 and error["field"] == field, error
    assert call("GET", f"/v1/jobs/{job['job_id']}")[1]["target"] == job["target"], "nothing was changed"


def test_a_patch_of_the_target_alone_is_checked_against_the_stored_payload(call) -> None:
    _, job = call("POST", "/v1/jobs", {**GOOD_JOB, "payload": {"run": "{{run_id}}"}})
    status, _ = call(
        "PATCH", f"/v1/jobs/{job['job_id']}", {"target": {"type": "http", "url": "https://a.example/"}}
    )
    assert status == 200

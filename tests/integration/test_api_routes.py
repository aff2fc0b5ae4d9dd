"""The api handler with API Gateway proxy events: routes, owner isolation, errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import GOOD_JOB as GOOD
from tests.integration.conftest import Harness


def test_create_returns_the_job_view_with_upcoming_fire_times(call) -> None:
    status, job = call("POST", "/v1/jobs", {**GOOD, "name": "nightly", "tags": {"team": "data"}})
    assert status == 201
    assert job["status"] == "ACTIVE" and job["name"] == "nightly"
    assert len(job["upcoming"]) == 5 and job["next_run_at"] == job["upcoming"][0]
    assert job["upcoming"][0].endswith("12:00:00.000Z"), "13:00 Berlin in winter is 12:00 UTC"
    assert job["schedule"]["timezone"] == "Europe/Berlin"
    status, again = call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200 and again["job_id"] == job["job_id"]


def test_another_owners_job_is_not_found(call) -> None:
    _, job = call("POST", "/v1/jobs", GOOD)
    for path in (f"/v1/jobs/{job['job_id']}", f"/v1/jobs/{job['job_id']}/runs"):
        status, body = call("GET", path, owner="mallory")
        assert status == 404 and body["error"] == "not_found", path


def test_no_identity_is_unauthorized(call) -> None:
    status, body = call("GET", "/v1/jobs/job_x", owner=None)
    assert status == 401 and body["error"] == "unauthorized"


def test_names_are_unique_per_owner(call) -> None:
    assert call("POST", "/v1/jobs", {**GOOD, "name": "dup"})[0] == 201
    status, body = call("POST", "/v1/jobs", {**GOOD, "name": "dup"})
    assert status == 409 and body["field"] == "name"
    assert call("POST", "/v1/jobs", {**GOOD, "name": "dup"}, owner="bob")[0] == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**GOOD, "schedule": {"cron": "61 * * * *"}}, "schedule.cron"),
        ({**GOOD, "schedule": {"cron": "0 12 * * *", "timezone": "Mars/Olympus"}}, "schedule.timezone"),
        ({**GOOD, "schedule": {"at": "2026-02-30T10:00:00Z"}}, "schedule.at"),
        ({**GOOD, "schedule": {"rate": "1 second"}}, "schedule.rate"),
        ({**GOOD, "schedule": {}}, "schedule"),
        ({**GOOD, "target": {"type": "ftp", "url": "ftp://example.com"}}, "target.type"),
        ({**GOOD, "target": {"type": "http", "url": "http://169.254.169.254/latest"}}, "target.url"),
        ({**GOOD, "surprise": 1}, "surprise"),
        ({**GOOD, "retry": {"max_attempts": -1}}, "retry.max_attempts"),
        ({**GOOD, "timeout_seconds": "soon"}, "timeout_seconds"),
    ],
)
def test_bad_input_is_422_naming_the_field(call, body: dict[str, Any], field: str) -> None:
    status, error = call("POST", "/v1/jobs", body)
    assert status == 422, error
    assert error["field"] == field, error
    assert error["reason"]


def test_a_body_over_64_kib_is_413(call) -> None:
    status, error = call("POST", "/v1/jobs", {**GOOD, "payload": "x" * (65 * 1024)})
    assert status == 413 and error["field"] == "body"


def test_unknown_run_is_404_and_runs_list_is_paginated(call, harness: Harness) -> None:
    _, job = call("POST", "/v1/jobs", {**GOOD, "schedule": {"cron": "*/10 * * * * *"}})
    for _ in range(3):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
    status, page = call("GET", f"/v1/jobs/{job['job_id']}/runs?limit=5")
    assert status == 200 and len(page["items"]) == 5 and page["next_cursor"]
    times = [run["scheduled_for"] for run in page["items"]]
    assert times == sorted(times, reverse=True), "history is newest first"
    status, rest = call("GET", f"/v1/jobs/{job['job_id']}/runs?limit=5&cursor={page['next_cursor']}")
    assert status == 200 and rest["items"][0]["scheduled_for"] < times[-1]
    status, _ = call("GET", f"/v1/jobs/{job['job_id']}/runs/20260101T000000.000Z-00000000")
    assert status == 404


def test_ids_the_api_never_hands_out_are_404_and_never_reach_the_table(call, harness: Harness) -> None:
    # DynamoDB refuses keys over 2 KiB with a ValidationException (moto does not): such ids must be
    # answered before the store is asked.
    asked: list[str] = []
    real_get_job, real_get_run = harness.store.get_job, harness.store.get_run

    def get_job(job_id: str, *, consistent: bool = True) -> Any:
        asked.append(job_id)
        return real_get_job(job_id, consistent=consistent)

    def get_run(job_id: str, run_id: str) -> Any:
        asked.append(run_id)
        return real_get_run(job_id, run_id)

    harness.store.get_job = get_job  # type: ignore[method-assign]
    harness.store.get_run = get_run  # type: ignore[method-assign]
    long_id = "j" * 3000
    for path in (f"/v1/jobs/{long_id}", f"/v1/jobs/{long_id}/runs", "/v1/jobs/job%00x"):
        status, body = call("GET", path)
        assert status == 404, (path, body)
    _, job = call("POST", "/v1/jobs", GOOD)
    status, _ = call("GET", f"/v1/jobs/{job['job_id']}/runs/{'r' * 3000}")
    assert status == 404
    assert all(len(key) <= 100 and "\x00" not in key for key in asked), "an impossible id reached the table"

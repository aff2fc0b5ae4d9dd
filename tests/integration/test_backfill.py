"""``POST /v1/jobs/{job_id}/backfill`` through the api handler, with the worker's chain of a buffered
backfill on the in-memory store and on DynamoDB alike (the trigger and run carry ``backfill_until``)."""

from __future__ import annotations

from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import RunKind, RunStatus
from tests.integration.conftest import Harness, http_target


def backfilled_hourly_job(
    call, harness: Harness, receiver: Receiver
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An hourly job, four hours on, whose three past occurrences a backfill runs again; (job, answer)."""
    status, job = call(
        "POST", "/v1/jobs", {"schedule": {"cron": "0 * * * *"}, "target": http_target(receiver, "/bf")}
    )
    assert status == 201, job
    harness.clock.advance(4 * 3600)
    body = {"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T15:00:00Z"}
    status, answer = call("POST", f"/v1/jobs/{job['job_id']}/backfill", body)
    assert status == 202 and answer["count"] == 3, answer
    return job, answer


def test_a_backfill_runs_each_past_occurrence_once_in_order(
    call, harness: Harness, receiver: Receiver
) -> None:
    job, answer = backfilled_hourly_job(call, harness, receiver)
    for _ in range(6):
        harness.work()
    sent = [d.headers["Punctual-Scheduled-For"] for d in receiver.for_path("/bf")]
    assert sent == answer["occurrences"], "each once, oldest first"
    status, page = call("GET", f"/v1/jobs/{job['job_id']}/runs?limit=20")
    assert status == 200, page
    backfilled = [run for run in page["items"] if run["kind"] == "backfill"]
    assert len(backfilled) == 3 and {run["status"] for run in backfilled} == {"SUCCEEDED"}
    stored = harness.store.list_runs(job["job_id"], limit=20)[0]
    assert {run.kind for run in stored} == {RunKind.BACKFILL} and {run.status for run in stored} == {
        RunStatus.SUCCEEDED
    }


def test_backfill_refusals_name_the_field(call, harness: Harness) -> None:
    _, job = call(
        "POST",
        "/v1/jobs",
        {"schedule": {"cron": "0 * * * *"}, "target": {"type": "http", "url": "https://example.com/h"}},
    )
    harness.clock.advance(3600)
    status, error = call("POST", f"/v1/jobs/{job['job_id']}/backfill", {"from": "2026-11-22T12:00:00Z"})
    assert status == 422 and error["field"] == "to"
    status, error = call(
        "POST",
        f"/v1/jobs/{job['job_id']}/backfill",
        {"from": "2026-11-22T12:00:00Z", "to": "2026-11-22T13:00:00Z", "overlap": "cancel_other"},
    )
    assert status == 422 and error["field"] == "overlap"
    status, error = call(
        "POST",
        "/v1/jobs/job_missing/backfill",
        {"from": "2026-11-22T12:00:00Z", "to": "2026-11-22T13:00:00Z"},
    )
    assert status == 404


def test_a_backfill_whose_job_is_cancelled_during_a_run_stops_without_the_worker_deleting(
    call, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's role may not delete items (punctual/cdk/permissions.py): going on with a buffered
    # backfill, it judged the job from the copy it read before the run, and its dispatch deleted the
    # next trigger of a job cancelled meanwhile: AccessDenied on AWS.
    deletes: list[str] = []
    real_delete = harness.store.delete_trigger

    def cancel_during_the_call(path: str, _n: int) -> tuple[int, bytes]:
        call("DELETE", f"/v1/jobs/{job['job_id']}")
        return 200, b"{}"

    with Receiver(cancel_during_the_call) as receiver:
        job, _answer = backfilled_hourly_job(call, harness, receiver)

        def delete_trigger(trigger: Any) -> None:
            deletes.append(trigger.run_id)
            real_delete(trigger)

        monkeypatch.setattr(harness.store, "delete_trigger", delete_trigger)
        for _ in range(3):
            harness.work()
    assert len(receiver.for_path("/bf")) == 1, "the backfill stopped with its job"
    assert deletes == [], "the worker deleted a trigger"
    runs, _ = harness.store.list_runs(job["job_id"], limit=20)
    assert [run.status for run in runs] == [RunStatus.SUCCEEDED]

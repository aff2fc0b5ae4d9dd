"""The audit trail through the API handler, over the fakes and over DynamoDB on moto: every change of a
job is recorded with who, when, why and what changed; each revision's definition can be read,
compared and restored; the trail is its owner's alone and cannot be changed."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import GOOD_JOB, Call
from tests.integration.test_api_validation import assert_refused


def create(call: Call, **body: Any) -> dict[str, Any]:
    status, job = call("POST", "/v1/jobs", {**GOOD_JOB, "payload": {"report": "daily"}, **body})
    assert status == 201, job
    return dict(job)


def changes(call: Call, job_id: str, owner: str = "alice") -> list[dict[str, Any]]:
    status, page = call("GET", f"/v1/jobs/{job_id}/changes?limit=100", owner=owner)
    assert status == 200, page
    return list(page["items"])


def test_a_create_is_revision_one_recorded_with_its_caller_and_request(call: Call) -> None:
    job = create(call)
    assert job["revision"] == 1
    (created,) = changes(call, job["job_id"])
    assert created["action"] == "created" and created["revision"] == 1
    assert created["by"] == "alice" and created["request_id"]
    assert created["diff"] == {} and created["definition"] is None, "a list leaves the definition out"
    status, version = call("GET", f"/v1/jobs/{job['job_id']}/versions/1")
    assert status == 200 and version["definition"]["payload"] == {"report": "daily"}
    assert version["definition"]["schedule"]["cron"] == GOOD_JOB["schedule"]["cron"]


def test_every_change_is_recorded_newest_first_with_its_note_and_diff(call: Call) -> None:
    job = create(call)
    path = f"/v1/jobs/{job['job_id']}"
    status, patched = call("PATCH", path, {"payload": {"report": "weekly"}, "note": "weekly from now on"})
    assert status == 200 and patched["revision"] == 2, patched
    assert call("POST", f"{path}/pause", {"note": "migration"})[0] == 200
    assert call("POST", f"{path}/resume", {"note": "migration done"})[0] == 200
    status, run = call("POST", f"{path}/run")
    assert status == 202, run
    status, cancelled = call("DELETE", path)
    assert status == 200 and cancelled["revision"] == 5
    trail = changes(call, job["job_id"])
    assert [(c["action"], c["revision"]) for c in trail] == [
        ("cancelled", 5),
        ("run_now", 4),
        ("resumed", 4),
        ("paused", 3),
        ("updated", 2),
        ("created", 1),
    ]
    updated = trail[-2]
    assert updated["note"] == "weekly from now on"
    assert updated["diff"] == {"payload.report": ["daily", "weekly"]}
    assert trail[3]["note"] == "migration" and trail[3]["diff"]["status"] == ["ACTIVE", "PAUSED"]
    assert trail[1]["details"] == {"run_id": run["run_id"]}
    assert trail[0]["diff"]["status"] == ["ACTIVE", "CANCELLED"]


def test_two_revisions_compare_and_an_earlier_one_is_restored_as_a_new_revision(call: Call) -> None:
    job = create(call, tags={"team": "data"})
    path = f"/v1/jobs/{job['job_id']}"
    call("PATCH", path, {"payload": {"report": "weekly"}, "tags": {"team": "ops"}})
    status, compared = call("GET", f"{path}/compare?from=1&to=2")
    assert status == 200, compared
    assert compared["diff"] == {"payload.report": ["daily", "weekly"], "tags.team": ["data", "ops"]}
    status, restored = call("POST", f"{path}/restore", {"revision": 1, "note": "back to daily"})
    assert status == 200, restored
    assert restored["revision"] == 3 and restored["payload"] == {"report": "daily"}
    assert restored["tags"] == {"team": "data"}
    latest = changes(call, job["job_id"])[0]
    assert latest["action"] == "restored" and latest["details"] == {"restored_from": 1}
    assert latest["note"] == "back to daily" and latest["by"] == "alice"
    assert latest["diff"] == {"payload.report": ["weekly", "daily"], "tags.team": ["ops", "data"]}


def test_a_restore_of_a_version_whose_calendar_is_gone_is_refused_naming_it(call: Call) -> None:
    assert call("POST", "/v1/calendars", {"name": "berlin", "timezone": "Europe/Berlin"})[0] == 201
    job = create(call, schedule={"cron": "0 9 * * *", "timezone": "Europe/Berlin", "calendar": "berlin"})
    path = f"/v1/jobs/{job['job_id']}"
    call("PATCH", path, {"schedule": {"cron": "0 10 * * *", "timezone": "Europe/Berlin"}})
    assert call("DELETE", "/v1/calendars/berlin")[0] == 200
    status, error = call("POST", f"{path}/restore", {"revision": 1})
    assert_refused(status, error, 422, "schedule.calendar")
    _, unchanged = call("GET", path)
    assert unchanged["revision"] == 2 and unchanged["schedule"]["cron"] == "0 10 * * *", "nothing written"


def test_the_trail_is_its_owners_alone_and_cannot_be_changed(call: Call) -> None:
    job = create(call)
    path = f"/v1/jobs/{job['job_id']}"
    for method, route, body in (
        ("GET", f"{path}/changes", None),
        ("GET", f"{path}/versions/1", None),
        ("GET", f"{path}/compare?from=1&to=1", None),
        ("POST", f"{path}/restore", {"revision": 1}),
    ):
        status, error = call(method, route, body, owner="bob")
        assert_refused(status, error, 404, "job_id")
    for method in ("PUT", "PATCH", "DELETE"):
        status, _ = call(method, f"{path}/changes")
        assert status == 404
    assert len(changes(call, job["job_id"])) == 1


def test_a_revision_that_is_not_there_or_not_a_number_is_refused(call: Call) -> None:
    job = create(call)
    path = f"/v1/jobs/{job['job_id']}"
    status, error = call("GET", f"{path}/versions/7")
    assert_refused(status, error, 404, "revision")
    status, error = call("GET", f"{path}/versions/first")
    assert_refused(status, error, 422, "revision")
    status, error = call("POST", f"{path}/restore", {"revision": 0})
    assert_refused(status, error, 422, "revision")
    status, error = call("GET", f"{path}/compare?from=1")
    assert_refused(status, error, 422, "to")

"""End to end through the local stack, as docs/api.md's example of the audit trail does it: a job's
create and its change are recorded with the caller, the request and the note, and restoring revision 1
makes its first definition the job's again, as revision 3."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def test_a_change_is_recorded_and_an_earlier_revision_restored(local_stack: Api) -> None:
    status, job = local_stack.call(
        "POST",
        "/v1/jobs",
        {
            "schedule": {"cron": "0 6 * * *"},
            "target": {"type": "http", "url": "https://example.com/hook"},
            "payload": {"report": "daily"},
        },
    )
    assert status == 201, job
    path = f"/v1/jobs/{job['job_id']}"
    status, _ = local_stack.call(
        "PATCH", path, {"payload": {"report": "weekly"}, "note": "weekly from now on"}
    )
    assert status == 200
    status, page = local_stack.call("GET", f"{path}/changes")
    assert status == 200, page
    updated, created = page["items"]
    assert (updated["action"], updated["revision"], created["action"]) == ("updated", 2, "created")
    assert updated["by"] == "local" and updated["note"] == "weekly from now on"
    assert updated["diff"] == {"payload.report": ["daily", "weekly"]}
    assert updated["request_id"] and updated["request_id"] != created["request_id"]
    status, restored = local_stack.call("POST", f"{path}/restore", {"revision": 1, "note": "back to daily"})
    assert status == 200, restored
    assert (restored["revision"], restored["payload"]) == (3, {"report": "daily"})
    assert local_stack.call("DELETE", path)[0] == 200

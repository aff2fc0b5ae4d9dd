"""``POST /v1/jobs/bulk``: pause (with a note), resume or cancel every job carrying some tags, each
answered on its own; on the in-memory store and on DynamoDB (the owner index) alike."""

from __future__ import annotations

from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from tests.integration.conftest import GOOD_JOB, Harness, http_target


def job(call, **tags: str) -> dict[str, Any]:
    status, created = call("POST", "/v1/jobs", {**GOOD_JOB, "tags": tags})
    assert status == 201, created
    return dict(created)


def test_pause_resume_and_cancel_by_tag_answer_each_job(call, harness: Harness) -> None:
    data_a = job(call, team="data", env="prod")
    harness.clock.advance(1)
    data_b = job(call, team="data", env="dev")
    other = job(call, team="web")
    until = iso(harness.clock().replace(year=2027, month=1, day=2))
    status, paused = call(
        "POST",
        "/v1/jobs/bulk",
        {"action": "pause", "tags": {"team": "data"}, "note": "freeze", "until": until},
    )
    assert status == 200, paused
    assert paused["action"] == "pause" and paused["matched"] == 2 and paused["more"] is False
    assert paused["next_cursor"] is None
    assert [item["job_id"] for item in paused["items"]] == [data_b["job_id"], data_a["job_id"]], (
        "newest first, as GET /v1/jobs lists them"
    )
    for item in paused["items"]:
        assert item["status"] == 200 and item["error"] is None
        assert item["job"]["status"] == "PAUSED" and item["job"]["pause"]["note"] == "freeze"
        assert item["job"]["pause"]["until"] == until and item["job"]["pause"]["by"] == "alice"
    assert call("GET", f"/v1/jobs/{other['job_id']}")[1]["status"] == "ACTIVE", "other tags untouched"

    _, narrowed = call("POST", "/v1/jobs/bulk", {"action": "resume", "tags": {"team": "data", "env": "dev"}})
    assert [item["job_id"] for item in narrowed["items"]] == [data_b["job_id"]], "every tag must match"
    assert narrowed["items"][0]["job"]["status"] == "ACTIVE"

    _, cancelled = call("POST", "/v1/jobs/bulk", {"action": "cancel", "tags": {"team": "data"}})
    assert {item["job"]["status"] for item in cancelled["items"]} == {"CANCELLED"} and cancelled[
        "matched"
    ] == 2
    _, again = call("POST", "/v1/jobs/bulk", {"action": "cancel", "tags": {"team": "data"}})
    assert again["matched"] == 0 and again["items"] == [], "ended jobs no longer match"


def test_another_owners_jobs_are_never_touched(call) -> None:
    mine = job(call, team="data")
    status, answer = call(
        "POST", "/v1/jobs/bulk", {"action": "pause", "tags": {"team": "data"}}, owner="mallory"
    )
    assert status == 200 and answer["matched"] == 0
    assert call("GET", f"/v1/jobs/{mine['job_id']}")[1]["status"] == "ACTIVE"


def test_a_job_that_cannot_take_the_action_is_answered_with_its_refusal(
    call, harness: Harness, receiver: Receiver
) -> None:
    done = job(call, team="ops")
    # A one-off whose run succeeded reads COMPLETED, though its item still says ACTIVE (derived).
    status, one_off = call(
        "POST",
        "/v1/jobs",
        {"schedule": {"at": iso(harness.clock())}, "target": http_target(receiver), "tags": {"team": "ops"}},
    )
    assert status == 201
    harness.work()
    _, answer = call("POST", "/v1/jobs/bulk", {"action": "pause", "tags": {"team": "ops"}})
    by_id = {item["job_id"]: item for item in answer["items"]}
    assert by_id[done["job_id"]]["status"] == 200
    refused = by_id[one_off["job_id"]]
    assert refused["status"] == 409 and refused["job"] is None and refused["error"]["field"] == "status"


def test_a_large_action_goes_a_page_at_a_time_with_the_cursor_it_answers(
    call, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An owner with many jobs is never read whole by one request: each reads until MAX_BULK match.
    monkeypatch.setattr("punctual_functions.api.bulk.MAX_BULK", 3)
    ids = []
    for _ in range(7):
        ids.append(job(call, team="big")["job_id"])
        harness.clock.advance(1)
    job(call, team="small")
    acted: list[str] = []
    body: dict[str, Any] = {"action": "pause", "tags": {"team": "big"}}
    pages = []
    while True:
        status, answer = call("POST", "/v1/jobs/bulk", body)
        assert status == 200, answer
        pages.append(len(answer["items"]))
        acted += [item["job_id"] for item in answer["items"] if item["status"] == 200]
        if not answer["more"]:
            break
        body = {**body, "cursor": answer["next_cursor"]}
    assert pages[:3] == [3, 3, 1] and sum(pages) == 7
    assert acted == ids[::-1], "each job once, newest first"
    status, refused = call("POST", "/v1/jobs/bulk", {**body, "cursor": "bm90IGEgY3Vyc29y"})
    assert status == 422 and refused["field"] == "cursor"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "pause", "tags": {}}, "tags"),
        ({"action": "pause"}, "tags"),
        ({"action": "explode", "tags": {"a": "b"}}, "action"),
        ({"action": "resume", "tags": {"a": "b"}, "note": "x"}, "note"),
        ({"action": "cancel", "tags": {"a": "b"}, "until": "2027-01-01T00:00:00Z"}, "until"),
        ({"action": "pause", "tags": {"a": "b"}, "until": "yesterday"}, "until"),
    ],
)
def test_bad_input_is_422_naming_the_field(call, body: dict[str, Any], field: str) -> None:
    job(call, a="b")
    status, error = call("POST", "/v1/jobs/bulk", body)
    if field == "until" and body["action"] == "pause":
        # A bad until is refused per job, as the single pause refuses it.
        assert (
            status == 200
            and error["items"][0]["status"] == 422
            and error["items"][0]["error"]["field"] == "until"
        )
        return
    assert status == 422, error
    assert error["field"] == field, error

"""Owner isolation on every endpoint, and the semantics of the job routes, through the api handler.

API Gateway proxy events through ``punctual_functions.api.handler.handler`` (as in test_api_routes.py); the
owner is the authorizer's principal, so "alice" and "bob" are two authenticated callers.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from punctual.testing.receiver import Receiver
from tests.integration.conftest import GOOD_JOB as GOOD
from tests.integration.conftest import Call, Harness, http_target


def create(call: Call, owner: str = "alice", **body: Any) -> dict[str, Any]:
    status, job = call("POST", "/v1/jobs", {**GOOD, **body}, owner=owner)
    assert status == 201, job
    return job  # type: ignore[no-any-return]


def listed(call: Call, owner: str, query: str = "") -> list[dict[str, Any]]:
    """Every job of the listing, following the cursor."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        path = f"/v1/jobs?limit=100{query}" + (f"&cursor={cursor}" if cursor else "")
        status, page = call("GET", path, owner=owner)
        assert status == 200, page
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            return items


# ------------------------------------------------------------------------------------ isolation


def test_given_alices_job_and_run_when_bob_calls_every_job_endpoint_then_each_is_404_and_nothing_changes(
    call: Call,
) -> None:
    job = create(call, name="alices", tags={"team": "a"})
    job_id = job["job_id"]
    status, run = call("POST", f"/v1/jobs/{job_id}/run")
    assert status == 202, run
    run_id = run["run_id"]
    _, job_before = call("GET", f"/v1/jobs/{job_id}")
    _, run_before = call("GET", f"/v1/jobs/{job_id}/runs/{run_id}")

    attempts = [
        ("GET", f"/v1/jobs/{job_id}", None),
        ("PATCH", f"/v1/jobs/{job_id}", {"tags": {"team": "b"}}),
        ("PATCH", f"/v1/jobs/{job_id}", {"schedule": {"rate": "1 hour"}}),
        ("DELETE", f"/v1/jobs/{job_id}", None),
        ("POST", f"/v1/jobs/{job_id}/pause", None),
        ("POST", f"/v1/jobs/{job_id}/resume", None),
        ("POST", f"/v1/jobs/{job_id}/run", None),
        ("GET", f"/v1/jobs/{job_id}/runs", None),
        ("GET", f"/v1/jobs/{job_id}/runs?status=QUEUED", None),
        ("GET", f"/v1/jobs/{job_id}/runs/{run_id}", None),
        ("POST", f"/v1/jobs/{job_id}/runs/{run_id}/cancel", None),
    ]
    for method, path, body in attempts:
        status, error = call(method, path, body, owner="bob")
        assert status == 404, (method, path, error)
        assert error["error"] == "not_found" and error["field"] == "job_id", (method, path, error)
        assert "alice" not in json.dumps(error), "a 404 must not reveal the owner"

    # Then bob's views never include alice's job
    assert listed(call, "bob") == []
    assert listed(call, "bob", "&name=alices") == []
    status, stats = call("GET", "/v1/stats", owner="bob")
    assert status == 200 and stats["jobs"] == {} and stats["runs"] == {}

    # And alice's job and run are exactly as they were
    status, job_after = call("GET", f"/v1/jobs/{job_id}")
    assert status == 200 and job_after == job_before
    status, run_after = call("GET", f"/v1/jobs/{job_id}/runs/{run_id}")
    assert status == 200 and run_after == run_before
    status, runs = call("GET", f"/v1/jobs/{job_id}/runs")
    assert [r["run_id"] for r in runs["items"]] == [run_id], "bob's run-now must not have added a run"
    assert [j["job_id"] for j in listed(call, "alice")] == [job_id]


def test_given_a_job_missing_for_everyone_when_bob_asks_then_404_is_the_same_as_for_alices_job(
    call: Call,
) -> None:
    job = create(call)
    _, theirs = call("GET", f"/v1/jobs/{job['job_id']}", owner="bob")
    _, missing = call("GET", "/v1/jobs/job_00000000000000000000000", owner="bob")
    assert theirs.keys() == missing.keys()
    assert theirs["error"] == missing["error"] == "not_found"


def test_given_two_owners_with_jobs_when_each_lists_and_counts_then_each_sees_only_their_own(
    call: Call,
) -> None:
    alices = {create(call, "alice")["job_id"] for _ in range(3)}
    bobs = {create(call, "bob")["job_id"] for _ in range(2)}
    call("POST", f"/v1/jobs/{sorted(alices)[0]}/pause")
    assert {j["job_id"] for j in listed(call, "alice")} == alices
    assert {j["job_id"] for j in listed(call, "bob")} == bobs
    assert listed(call, "bob", "&status=PAUSED") == []
    _, alice_stats = call("GET", "/v1/stats")
    _, bob_stats = call("GET", "/v1/stats", owner="bob")
    assert alice_stats["jobs"] == {"ACTIVE": 2, "PAUSED": 1}
    assert bob_stats["jobs"] == {"ACTIVE": 2}


def test_given_tagged_jobs_when_listed_by_a_tag_then_only_the_owners_jobs_carrying_it_are_listed(
    call: Call,
) -> None:
    stack = "arn:aws:cloudformation:eu-west-1:123456789012:stack/reports/1d2e=3f"
    tagged = {create(call, tags={"cfn:stack": stack, "team": "a"})["job_id"] for _ in range(2)}
    create(call, tags={"cfn:stack": stack + "0"})
    create(call, tags={"team": "a"})
    create(call, "bob", tags={"cfn:stack": stack})
    query = "&tag=" + quote(f"cfn:stack={stack}", safe="")
    assert {job["job_id"] for job in listed(call, "alice", query)} == tagged
    assert len(listed(call, "alice", "&tag=team%3Da")) == 3
    assert listed(call, "alice", "&tag=team%3D") == []  # an empty value is a value
    status, error = call("GET", "/v1/jobs?tag=team")
    assert (status, error["field"]) == (422, "tag"), error


def test_given_the_same_name_when_two_owners_use_it_then_both_jobs_exist_independently(call: Call) -> None:
    alices = create(call, "alice", name="report")
    bobs = create(call, "bob", name="report")
    assert alices["job_id"] != bobs["job_id"]
    status, _ = call("DELETE", f"/v1/jobs/{bobs['job_id']}", owner="bob")
    assert status == 200
    status, still = call("GET", f"/v1/jobs/{alices['job_id']}")
    assert status == 200 and still["status"] == "ACTIVE"


# ------------------------------------------------------------------------------- idempotent create


def test_given_an_idempotency_key_when_the_same_create_is_retried_then_the_first_job_is_returned(
    call: Call,
) -> None:
    key = {"Idempotency-Key": "create-nightly-1"}
    status, first = call("POST", "/v1/jobs", {**GOOD, "name": "nightly"}, headers=key)
    assert status == 201, first
    status, second = call("POST", "/v1/jobs", {**GOOD, "name": "nightly"}, headers=key)
    assert status == 201, second
    assert second["job_id"] == first["job_id"]
    assert [j["job_id"] for j in listed(call, "alice")] == [first["job_id"]]


def test_given_an_idempotency_key_when_reused_with_a_different_body_then_409_names_the_header(
    call: Call,
) -> None:
    key = {"Idempotency-Key": "create-2"}
    status, first = call("POST", "/v1/jobs", GOOD, headers=key)
    assert status == 201
    status, error = call("POST", "/v1/jobs", {**GOOD, "payload": {"changed": True}}, headers=key)
    assert status == 409, error
    assert error["error"] == "conflict" and error["field"] == "Idempotency-Key" and error["reason"]
    assert [j["job_id"] for j in listed(call, "alice")] == [first["job_id"]]


def test_given_alices_idempotency_key_when_bob_uses_the_same_key_then_he_gets_his_own_job(
    call: Call,
) -> None:
    key = {"Idempotency-Key": "shared-key"}
    status, alices = call("POST", "/v1/jobs", GOOD, headers=key)
    assert status == 201
    status, bobs = call("POST", "/v1/jobs", GOOD, owner="bob", headers=key)
    assert status == 201, bobs
    assert bobs["job_id"] != alices["job_id"]
    # and a different body from bob under the same key is no conflict with alice's request
    status, other = call("POST", "/v1/jobs", {**GOOD, "name": "x"}, owner="carol", headers=key)
    assert status == 201, other
    assert [j["job_id"] for j in listed(call, "alice")] == [alices["job_id"]]
    assert [j["job_id"] for j in listed(call, "bob")] == [bobs["job_id"]]


def test_given_no_idempotency_key_when_the_same_body_is_posted_twice_then_two_jobs_exist(call: Call) -> None:
    first, second = create(call), create(call)
    assert first["job_id"] != second["job_id"]
    assert len(listed(call, "alice")) == 2


# ---------------------------------------------------------------------------- lists and pagination


def test_given_25_jobs_when_paging_with_limit_10_then_newest_first_without_duplicates_or_gaps(
    call: Call, harness: Harness
) -> None:
    created = []
    for number in range(25):
        created.append(create(call, name=f"job-{number:02d}")["job_id"])
        harness.clock.advance(1)
    pages = []
    cursor = None
    while True:
        status, page = call("GET", "/v1/jobs?limit=10" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        pages.append([job["job_id"] for job in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
    assert [len(page) for page in pages] in ([10, 10, 5], [10, 10, 5, 0])
    seen = [job_id for page in pages for job_id in page]
    assert len(seen) == len(set(seen)) == 25, "a job was listed twice"
    assert seen == list(reversed(created)), "newest first, none missing"


def test_given_jobs_in_several_states_when_filtering_by_status_or_name_then_only_matches_are_listed(
    call: Call, harness: Harness
) -> None:
    active = create(call, name="active-one")
    paused = create(call, name="paused-one")
    cancelled = create(call, name="cancelled-one")
    unnamed = create(call)
    assert call("POST", f"/v1/jobs/{paused['job_id']}/pause")[0] == 200
    assert call("DELETE", f"/v1/jobs/{cancelled['job_id']}")[0] == 200

    def ids(query: str) -> set[str]:
        return {job["job_id"] for job in listed(call, "alice", query)}

    assert ids("&status=ACTIVE") == {active["job_id"], unnamed["job_id"]}
    assert ids("&status=PAUSED") == {paused["job_id"]}
    assert ids("&status=CANCELLED") == {cancelled["job_id"]}
    assert ids("&status=COMPLETED") == set()
    assert ids("&name=paused-one") == {paused["job_id"]}
    assert ids("&name=paused-one&status=ACTIVE") == set()
    assert ids("&name=nobody") == set()
    # a filter with a small limit still pages through everything that matches
    status, page = call("GET", "/v1/jobs?status=ACTIVE&limit=1")
    assert status == 200 and len(page["items"]) == 1
    status, rest = call("GET", f"/v1/jobs?status=ACTIVE&limit=1&cursor={page['next_cursor']}")
    assert status == 200 and len(rest["items"]) == 1
    assert {page["items"][0]["job_id"], rest["items"][0]["job_id"]} == {active["job_id"], unnamed["job_id"]}


# ------------------------------------------------------------------------------- job life cycle


def test_given_an_active_job_when_paused_then_paused_with_nothing_upcoming_and_resume_restores_it(
    call: Call,
) -> None:
    job = create(call)
    assert job["status"] == "ACTIVE" and len(job["upcoming"]) == 5
    status, paused = call("POST", f"/v1/jobs/{job['job_id']}/pause")
    assert status == 200, paused
    assert paused["status"] == "PAUSED" and paused["upcoming"] == [] and paused["next_run_at"] is None
    status, again = call("POST", f"/v1/jobs/{job['job_id']}/pause")
    assert status == 200 and again["status"] == "PAUSED", "pausing twice is harmless"
    status, got = call("GET", f"/v1/jobs/{job['job_id']}")
    assert got["status"] == "PAUSED" and got["upcoming"] == []
    status, resumed = call("POST", f"/v1/jobs/{job['job_id']}/resume")
    assert status == 200, resumed
    assert resumed["status"] == "ACTIVE" and len(resumed["upcoming"]) == 5
    assert resumed["next_run_at"] == resumed["upcoming"][0] == job["next_run_at"]
    assert resumed["version"] > paused["version"] > job["version"]


def test_given_a_job_when_cancelled_then_it_is_cancelled_and_can_no_longer_change(call: Call) -> None:
    job = create(call, name="doomed")
    status, cancelled = call("DELETE", f"/v1/jobs/{job['job_id']}")
    assert status == 200, cancelled
    assert cancelled["status"] == "CANCELLED" and cancelled["next_run_at"] is None
    assert cancelled["upcoming"] == []
    status, again = call("DELETE", f"/v1/jobs/{job['job_id']}")
    assert status == 200 and again["status"] == "CANCELLED", "cancelling twice is harmless"
    for method, path, body in [
        ("PATCH", f"/v1/jobs/{job['job_id']}", {"tags": {"a": "b"}}),
        ("POST", f"/v1/jobs/{job['job_id']}/pause", None),
        ("POST", f"/v1/jobs/{job['job_id']}/resume", None),
        ("POST", f"/v1/jobs/{job['job_id']}/run", None),
    ]:
        status, error = call(method, path, body)
        assert status == 409, (method, path, error)
        assert error["error"] == "conflict" and error["field"] == "status", error
    status, got = call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200 and got["status"] == "CANCELLED" and got["tags"] == {}


def test_given_a_cancelled_job_when_a_new_job_takes_its_name_then_it_is_created(call: Call) -> None:
    old = create(call, name="report")
    status, error = call("POST", "/v1/jobs", {**GOOD, "name": "report"})
    assert status == 409 and error["field"] == "name"
    assert call("DELETE", f"/v1/jobs/{old['job_id']}")[0] == 200
    new = create(call, name="report")
    assert new["job_id"] != old["job_id"] and new["name"] == "report"
    assert {j["job_id"] for j in listed(call, "alice", "&name=report")} == {old["job_id"], new["job_id"]}


def test_given_a_paused_job_when_its_name_is_taken_then_409_because_paused_jobs_are_live(call: Call) -> None:
    job = create(call, name="sleepy")
    assert call("POST", f"/v1/jobs/{job['job_id']}/pause")[0] == 200
    status, error = call("POST", "/v1/jobs", {**GOOD, "name": "sleepy"})
    assert status == 409 and error["field"] == "name"


def test_given_a_job_when_patched_then_the_changes_show_and_the_schedule_moves(call: Call) -> None:
    job = create(call, name="before", tags={"team": "a"})
    changes = {
        "name": "after",
        "schedule": {"rate": "1 hour"},
        "payload": {"v": 2},
        "retry": {"max_attempts": 5},
        "timeout_seconds": 60,
        "tags": {"team": "b"},
    }
    status, patched = call("PATCH", f"/v1/jobs/{job['job_id']}", changes)
    assert status == 200, patched
    assert patched["name"] == "after" and patched["payload"] == {"v": 2}
    assert patched["schedule"]["rate"] == "1 hour"
    assert patched["retry"]["max_attempts"] == 5 and patched["timeout_seconds"] == 60
    assert patched["tags"] == {"team": "b"} and patched["version"] > job["version"]
    assert patched["next_run_at"] == "2026-11-22T13:00:00.000Z", "one hour after the PATCH"
    status, got = call("GET", f"/v1/jobs/{job['job_id']}")
    assert got == patched
    # the old name is free again, the new one is taken
    create(call, name="before")
    status, error = call("POST", "/v1/jobs", {**GOOD, "name": "after"})
    assert status == 409 and error["field"] == "name"


# ------------------------------------------------------------------------------------ runs and stats


def test_given_a_job_when_run_now_then_202_with_a_run_id_that_the_history_shows(call: Call) -> None:
    job = create(call)
    status, run = call("POST", f"/v1/jobs/{job['job_id']}/run")
    assert status == 202, run
    assert run["run_id"] and run["job_id"] == job["job_id"]
    assert run["kind"] == "manual" and run["status"] == "QUEUED"
    assert run["scheduled_for"] == "2026-11-22T12:00:00.000Z"
    status, runs = call("GET", f"/v1/jobs/{job['job_id']}/runs")
    assert status == 200 and [r["run_id"] for r in runs["items"]] == [run["run_id"]]
    status, detail = call("GET", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}")
    assert status == 200 and detail["run_id"] == run["run_id"] and detail["attempts"] == []
    status, queued = call("GET", f"/v1/jobs/{job['job_id']}/runs?status=QUEUED")
    assert [r["run_id"] for r in queued["items"]] == [run["run_id"]]
    status, none = call("GET", f"/v1/jobs/{job['job_id']}/runs?status=SUCCEEDED")
    assert none["items"] == []


def test_given_a_paused_job_when_run_now_then_it_still_runs_once(call: Call) -> None:
    job = create(call)
    call("POST", f"/v1/jobs/{job['job_id']}/pause")
    status, run = call("POST", f"/v1/jobs/{job['job_id']}/run")
    assert status == 202 and run["status"] == "QUEUED", run


def test_given_a_queued_run_when_cancelled_then_it_is_cancelled_and_cannot_be_cancelled_again(
    call: Call, harness: Harness
) -> None:
    job = create(call)
    _, run = call("POST", f"/v1/jobs/{job['job_id']}/run")
    status, cancelled = call("POST", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}/cancel")
    assert status == 200, cancelled
    assert cancelled["status"] == "CANCELLED" and cancelled["finished_at"] is not None
    status, error = call("POST", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}/cancel")
    assert status == 409 and error["field"] == "status", error
    harness.work()  # the queued message is delivered: the worker must not start a cancelled run
    status, detail = call("GET", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}")
    assert detail["status"] == "CANCELLED" and detail["attempts"] == []


def test_given_a_missing_run_of_my_job_when_read_or_cancelled_then_404_names_run_id(call: Call) -> None:
    job = create(call)
    for method, suffix in (("GET", ""), ("POST", "/cancel")):
        status, error = call(method, f"/v1/jobs/{job['job_id']}/runs/20261122T120000.000Z-00000000{suffix}")
        assert status == 404 and error["field"] == "run_id", error


def test_given_runs_that_finished_when_stats_are_read_then_jobs_and_runs_are_counted_by_status(
    call: Call, harness: Harness, receiver: Receiver
) -> None:
    target = http_target(receiver)
    worked = create(call, target=target)
    paused = create(call, target=target)
    cancelled = create(call, target=target)
    create(call, owner="bob", target=target)
    assert call("POST", f"/v1/jobs/{paused['job_id']}/pause")[0] == 200
    assert call("DELETE", f"/v1/jobs/{cancelled['job_id']}")[0] == 200
    status, run = call("POST", f"/v1/jobs/{worked['job_id']}/run")
    assert status == 202
    assert harness.work() == 1
    status, detail = call("GET", f"/v1/jobs/{worked['job_id']}/runs/{run['run_id']}")
    assert detail["status"] == "SUCCEEDED", detail

    status, stats = call("GET", "/v1/stats")
    assert status == 200, stats
    assert stats["jobs"] == {"ACTIVE": 1, "PAUSED": 1, "CANCELLED": 1}
    assert stats["runs"] == {"SUCCEEDED": 1}
    assert set(stats["queue"]) == {"queued", "in_flight", "delayed", "dlq"}
    assert all(isinstance(value, int) and value >= 0 for value in stats["queue"].values())
    assert "dispatcher_lag_seconds" in stats
    status, view = call("GET", f"/v1/jobs/{worked['job_id']}")
    assert view["last_run"]["run_id"] == run["run_id"] and view["last_run"]["status"] == "SUCCEEDED"
    assert view["run_counts"] == {"SUCCEEDED": 1}

"""The ``Job`` custom resource's handler (``punctual_functions/cfn/job_resource.py``) given CloudFormation's
events, against the API handler in process: a job is created once however often its Create is
delivered, changed in place by a PATCH (its id and history kept; never replaced), cancelled by a
Delete (a Delete of a job already gone, or ended, succeeds), left as it is by an Update once it has
ended, and a bad job fails the resource with the API's field and reason."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.cfn.job_resource import REQUEST_TAG, RESOURCE_TAG, STACK_TAG, Refused, on_event
from tests.integration.conftest import Call, Harness, http_target

STACK = "arn:aws:cloudformation:eu-west-1:123456789012:stack/reports/5f1c7a40-0000-4000-8000-000000000000"
JOB: dict[str, Any] = {
    "name": "nightly-report",
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Berlin"},
    "target": {"type": "http", "url": "https://example.com/report"},
    "max_runs": 100,
    "tags": {"team": "finance"},
}


class CalledApi:
    """``JobsApi`` over the API handler, as the handler's role would call it."""

    def __init__(self, call: Call) -> None:
        self.call = call

    def _answer(self, status: int, answer: Any) -> Mapping[str, Any]:
        if status >= 400:
            raise Refused(status, str(answer.get("reason")), answer.get("field"))
        return dict(answer)

    def create(self, body: Mapping[str, Any], idempotency_key: str) -> Mapping[str, Any]:
        return self._answer(
            *self.call("POST", "/v1/jobs", dict(body), headers={"Idempotency-Key": idempotency_key})
        )

    def get(self, job_id: str) -> Mapping[str, Any]:
        return self._answer(*self.call("GET", f"/v1/jobs/{job_id}"))

    def patch(self, job_id: str, changes: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._answer(*self.call("PATCH", f"/v1/jobs/{job_id}", dict(changes)))

    def cancel(self, job_id: str) -> None:
        self._answer(*self.call("DELETE", f"/v1/jobs/{job_id}"))

    def tagged(self, key: str, value: str) -> list[Mapping[str, Any]]:
        page = self._answer(*self.call("GET", "/v1/jobs?limit=100&tag=" + quote(f"{key}={value}", safe="")))
        assert not page["next_cursor"], "one page is enough here"
        return list(page["items"])


class LostAnswers(CalledApi):
    """The API takes each create, and its answer is lost on the way back (a timeout); the first
    ``failing_lookups`` look-ups of tagged jobs fail too (the API unreachable for a moment)."""

    def __init__(self, call: Call, failing_lookups: int = 0) -> None:
        super().__init__(call)
        self.failing_lookups = failing_lookups
        self.lose = True

    def create(self, body: Mapping[str, Any], idempotency_key: str) -> Mapping[str, Any]:
        job = super().create(body, idempotency_key)
        if self.lose:
            raise TimeoutError("read timed out")
        return job

    def tagged(self, key: str, value: str) -> list[Mapping[str, Any]]:
        if self.failing_lookups and key == REQUEST_TAG:
            self.failing_lookups -= 1
            raise ConnectionError("connection reset")
        return super().tagged(key, value)


def event(
    kind: str,
    job: Mapping[str, Any],
    *,
    request: str,
    old: Any = None,
    physical: str | None = None,
    resource: str = "NightlyReport",
) -> dict[str, Any]:
    made: dict[str, Any] = {
        "RequestType": kind,
        "StackId": STACK,
        "LogicalResourceId": resource,
        "RequestId": request,
        "ResourceType": "Custom::PunctualJob",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:f",
            "Job": json.dumps(job),
        },
    }
    if old is not None:
        made["OldResourceProperties"] = {"ServiceToken": "x", "Job": json.dumps(old)}
    if physical is not None:
        made["PhysicalResourceId"] = physical
    return made


@pytest.fixture
def api(call: Call) -> CalledApi:
    return CalledApi(call)


def test_a_create_delivered_twice_makes_one_job_tagged_with_its_stack(api: CalledApi) -> None:
    first = on_event(event("Create", JOB, request="req-1"), api)
    again = on_event(event("Create", JOB, request="req-1"), api)
    assert again == first, "the framework's retry of one request finds its job"
    job = api.get(first["PhysicalResourceId"])
    assert job["name"] == "nightly-report" and job["schedule"]["cron"] == "0 2 * * *"
    assert job["tags"] == {
        "team": "finance",
        STACK_TAG: STACK,
        RESOURCE_TAG: "NightlyReport",
        REQUEST_TAG: "req-1",
    }
    assert first["Data"]["JobId"] == job["job_id"] and first["Data"]["NextRunAt"] == job["next_run_at"]
    other = on_event(event("Create", {**JOB, "name": "other-report"}, request="req-2", resource="Other"), api)
    assert other["PhysicalResourceId"] != first["PhysicalResourceId"], "another request, another job"
    assert api.get(first["PhysicalResourceId"])["status"] == "ACTIVE"


def test_a_create_whose_answer_is_lost_cancels_its_job_before_it_fails(call: Call) -> None:
    lossy = LostAnswers(call)
    with pytest.raises(TimeoutError):
        on_event(event("Create", JOB, request="req-1"), lossy)
    (job,) = lossy.tagged(REQUEST_TAG, "req-1")
    assert job["status"] == "CANCELLED", "CloudFormation sends no Delete after a failed create"


def test_a_failed_create_whose_cleanup_failed_too_is_cancelled_by_the_next_create(call: Call) -> None:
    lossy = LostAnswers(call, failing_lookups=1)
    with pytest.raises(TimeoutError):
        on_event(event("Create", JOB, request="req-1"), lossy)
    (left,) = lossy.tagged(REQUEST_TAG, "req-1")
    assert left["status"] == "ACTIVE", "the cleanup could not reach the API"
    elsewhere = on_event(
        event("Create", {**JOB, "name": "kept"}, request="req-0", resource="Kept"), CalledApi(call)
    )
    lossy.lose = False
    created = on_event(event("Create", {**JOB, "name": "nightly-2"}, request="req-2"), lossy)
    assert lossy.get(left["job_id"])["status"] == "CANCELLED"
    assert lossy.get(created["PhysicalResourceId"])["status"] == "ACTIVE"
    assert lossy.get(elsewhere["PhysicalResourceId"])["status"] == "ACTIVE", "another resource's job stays"


def test_an_update_patches_the_job_in_place_schedule_then_target(api: CalledApi) -> None:
    created = on_event(event("Create", JOB, request="req-1"), api)
    job_id = created["PhysicalResourceId"]
    version = api.get(job_id)["version"]
    new_schedule = {**JOB, "schedule": {"cron": "30 3 * * 1-5", "timezone": "Europe/Berlin"}}
    updated = on_event(event("Update", new_schedule, request="req-2", old=JOB, physical=job_id), api)
    assert updated["PhysicalResourceId"] == job_id, "the same job: its history stays"
    job = api.get(job_id)
    assert job["schedule"]["cron"] == "30 3 * * 1-5" and job["version"] == version + 1
    new_target = {**new_schedule, "target": {"type": "http", "url": "https://example.com/v2/report"}}
    on_event(event("Update", new_target, request="req-3", old=new_schedule, physical=job_id), api)
    job = api.get(job_id)
    assert job["target"]["url"] == "https://example.com/v2/report"
    assert job["tags"][REQUEST_TAG] == "req-1", "the stack's tags from its create stay"
    retagged = {**new_target, "tags": {"team": "ops"}}
    on_event(event("Update", retagged, request="req-4", old=new_target, physical=job_id), api)
    assert api.get(job_id)["tags"] == {
        "team": "ops",
        STACK_TAG: STACK,
        RESOURCE_TAG: "NightlyReport",
        REQUEST_TAG: "req-1",
    }


def test_a_field_left_out_goes_back_to_its_default_in_place(api: CalledApi) -> None:
    with_more = {
        **JOB,
        "alerts": {"target": {"type": "http", "url": "https://example.com/alerts"}, "failed": True},
        "timeout_seconds": 90,
        "max_concurrent": 2,
    }
    job_id = on_event(event("Create", with_more, request="req-1"), api)["PhysicalResourceId"]
    bare = {key: value for key, value in JOB.items() if key not in ("max_runs", "name", "tags")}
    updated = on_event(event("Update", bare, request="req-2", old=with_more, physical=job_id), api)
    assert updated["PhysicalResourceId"] == job_id, "never a replacement: the same job"
    job = api.get(job_id)
    assert (job["alerts"], job["max_runs"], job["max_concurrent"], job["name"], job["timeout_seconds"]) == (
        None,
        None,
        None,
        None,
        30,
    )
    assert job["tags"] == {STACK_TAG: STACK, RESOURCE_TAG: "NightlyReport", REQUEST_TAG: "req-1"}
    unchanged = on_event(event("Update", bare, request="req-3", old=bare, physical=job_id), api)
    assert unchanged["PhysicalResourceId"] == job_id and api.get(job_id)["version"] == job["version"]


def test_a_bad_job_fails_the_resource_with_the_apis_field_and_reason(api: CalledApi) -> None:
    bad = {**JOB, "schedule": {"cron": "0 25 * * *"}}
    with pytest.raises(Refused) as refused:
        on_event(event("Create", bad, request="req-1"), api)
    assert refused.value.status == 422 and refused.value.field is not None
    assert str(refused.value).startswith("schedule"), str(refused.value)


def test_a_delete_cancels_the_job_and_one_already_gone_succeeds(api: CalledApi) -> None:
    job_id = on_event(event("Create", JOB, request="req-1"), api)["PhysicalResourceId"]
    assert on_event(event("Delete", JOB, request="req-2", physical=job_id), api) == {
        "PhysicalResourceId": job_id
    }
    assert api.get(job_id)["status"] == "CANCELLED"
    assert (
        on_event(event("Delete", JOB, request="req-3", physical=job_id), api)["PhysicalResourceId"] == job_id
    )
    gone = "job_00000000000000000000000a"
    assert on_event(event("Delete", JOB, request="req-4", physical=gone), api) == {"PhysicalResourceId": gone}


def _ended_three_ways(api: CalledApi, harness: Harness, receiver: Receiver) -> dict[str, dict[str, Any]]:
    """A stack's jobs, one ended each way a job ends: a one-off job that ran, a recurring job that
    reached its ``max_runs``, and a job cancelled by hand; {way: the job's properties and id}."""
    target = http_target(receiver, "/ended")
    soon = (harness.clock() + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    jobs: dict[str, dict[str, Any]] = {
        "ran once": {"name": "once", "schedule": {"at": soon}, "target": target},
        "max_runs": {"name": "twice", "schedule": {"rate": "1 minute"}, "max_runs": 2, "target": target},
        "cancelled": {**JOB, "name": "by-hand"},
    }
    made: dict[str, dict[str, Any]] = {
        way: {"job": job, "id": on_event(event("Create", job, request=f"req-{way}", resource=way), api)}
        for way, job in jobs.items()
    }
    for _ in range(3):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
        harness.deliver_all()
    api.cancel(made["cancelled"]["id"]["PhysicalResourceId"])
    for way, expected in (("ran once", "COMPLETED"), ("max_runs", "COMPLETED"), ("cancelled", "CANCELLED")):
        made[way]["id"] = made[way]["id"]["PhysicalResourceId"]
        assert api.get(made[way]["id"])["status"] == expected, way
    assert len(receiver.for_path("/ended")) == 3
    return made


def test_a_delete_of_a_job_that_has_ended_succeeds_whichever_way_it_ended(
    api: CalledApi, harness: Harness, receiver: Receiver
) -> None:
    for way, made in _ended_three_ways(api, harness, receiver).items():
        deleted = on_event(event("Delete", made["job"], request=f"del-{way}", physical=made["id"]), api)
        assert deleted == {"PhysicalResourceId": made["id"]}, way


def test_an_update_of_a_job_that_has_ended_changes_nothing_and_answers_the_ended_job(
    api: CalledApi, harness: Harness, receiver: Receiver
) -> None:
    """Neither a PATCH (refused: 409) nor a new job (an ``at`` in the past would run again at once,
    as a rollback's Update would make it): the resource keeps the ended job."""
    for way, made in _ended_three_ways(api, harness, receiver).items():
        before = api.get(made["id"])
        for changed in (
            {**made["job"], "payload": {"v": 2}},
            {**made["job"], "tags": {"team": "ops"}},
            {**made["job"], "schedule": {"cron": "0 4 * * *"}},
        ):
            answer = on_event(
                event("Update", changed, request=f"upd-{way}", old=made["job"], physical=made["id"]), api
            )
            assert answer["PhysicalResourceId"] == made["id"], way
            assert answer["Data"]["Status"] == before["status"], way
        assert api.get(made["id"]) == before, way
    harness.clock.advance(3600)
    harness.dispatcher.sweep()
    harness.deliver_all()
    assert len(receiver.for_path("/ended")) == 3, "nothing ran again"

"""The typed client (``punctual.client.Punctual``) against a scripted HTTP server: answers read into the
API's own models and kept in ``raw``, fields added later ignored at every level, values it cannot know
refused with the answer kept, pagination, the requests it sends (errors and construction:
test_client_typed_setup.py)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.client import ApiError, Job, Page, Punctual, PunctualError, Run, UnexpectedAnswer
from punctual_functions.api.responses import (
    AttemptOut,
    BulkItemOut,
    JobPage,
    RetryOut,
    RunPage,
    RunSummaryOut,
    ScheduleOut,
)
from punctual_functions.api.targets import HttpTargetOut, LambdaTargetOut
from punctual_functions.core.model import JobStatus, RunKind, RunStatus
from tests.support.scripted_api import JOB, RUN, Answer, ScriptedApi, scripted_api


@pytest.fixture
def api() -> Iterator[ScriptedApi]:
    with scripted_api() as running:
        yield running


@pytest.fixture
def client(api: ScriptedApi) -> Punctual:
    return Punctual(api.url, token="t0k")


# ------------------------------------------------------------------------------------ typed answers


def test_a_job_is_read_into_the_apis_own_models_and_keeps_its_json(
    api: ScriptedApi, client: Punctual
) -> None:
    api.on("GET", f"/v1/jobs/{JOB['job_id']}", 200, JOB)
    job = client.get_job(JOB["job_id"])
    assert isinstance(job, Job)
    assert job.status is JobStatus.COMPLETED and job.name == "smoke" and job.tags == {"t": "x"}
    assert isinstance(job.schedule, ScheduleOut) and job.schedule.at == "2026-11-27T01:15:52.808Z"
    assert isinstance(job.target, HttpTargetOut) and job.target.method == "GET"
    assert isinstance(job.retry, RetryOut) and job.retry.max_attempts == 3
    assert isinstance(job.last_run, RunSummaryOut) and job.last_run.status is RunStatus.SUCCEEDED
    assert job.raw == JOB


def test_a_run_is_read_with_its_attempts(api: ScriptedApi, client: Punctual) -> None:
    api.on("GET", f"/v1/jobs/{JOB['job_id']}/runs/{RUN['run_id']}", 200, RUN)
    run = client.get_run(JOB["job_id"], RUN["run_id"])
    assert isinstance(run, Run) and run.kind is RunKind.SCHEDULED and run.lateness_ms == 0
    assert run.attempts is not None and isinstance(run.attempts[0], AttemptOut)
    assert run.attempts[0].status_code == 200
    assert run.raw == RUN


def with_added(answer: dict[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """``answer`` with a field no model declares in the object at each path."""
    changed = copy.deepcopy(answer)
    for path in paths:
        node: Any = changed
        for part in path:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node["added_later"] = {"by": "a newer API"}
    return changed


def test_fields_a_later_api_adds_at_any_level_are_ignored_by_the_types_and_kept_in_raw(
    api: ScriptedApi, client: Punctual
) -> None:
    paused = {
        **JOB,
        "status": "PAUSED",
        "pause": {"at": "2026-11-27T01:15:50.068Z", "by": "local", "note": None, "until": None},
        "target": {"type": "lambda", "function": "report"},
        "alerts": {
            "target": {"type": "http", "url": "https://example.com/alerts", "method": "POST", "headers": {}},
            "failed": True,
            "missed": False,
            "late_seconds": None,
            "running_seconds": None,
        },
    }
    job = with_added(
        paused,
        [
            (),
            ("schedule",),
            ("target",),
            ("retry",),
            ("last_run",),
            ("pause",),
            ("alerts",),
            ("alerts", "target"),
        ],
    )
    run = with_added(RUN, [(), ("attempts", "0")])
    api.on("GET", "/v1/jobs", 200, {"items": [job], "next_cursor": None, "added_later": 1})
    api.on("GET", f"/v1/jobs/{JOB['job_id']}/runs", 200, {"items": [run], "next_cursor": None})
    page = client.list_jobs()
    assert page.items[0].status is JobStatus.PAUSED and isinstance(page.items[0].target, LambdaTargetOut)
    assert page.items[0].raw["added_later"] == page.items[0].raw["schedule"]["added_later"]
    assert page.raw["added_later"] == 1
    assert "added_later" not in page.items[0].schedule.model_dump()
    runs = client.list_runs(JOB["job_id"])
    assert runs.items[0].status is RunStatus.SUCCEEDED and runs.items[0].raw == run


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"status": "ARCHIVED"}, "status"),
        ({"target": {"type": "scheduler", "arn": "arn:aws:scheduler:::x"}}, "target"),
    ],
)
def test_a_value_this_client_cannot_know_raises_unexpected_answer_with_the_answer(
    api: ScriptedApi, client: Punctual, change: dict[str, Any], where: str
) -> None:
    answer = {**JOB, **change}
    api.on("GET", "/v1/jobs/x", 200, answer)
    with pytest.raises(UnexpectedAnswer) as raised:
        client.get_job("x")
    assert raised.value.raw == answer and isinstance(raised.value, PunctualError)
    assert f"as Job: {where}" in str(raised.value) and "pip install -U punctual-aws" in str(raised.value)
    assert not isinstance(raised.value, ApiError), "the API did not refuse anything"


def test_the_page_has_the_fields_of_the_apis_page_models() -> None:
    assert set(Page[Job].model_fields) == set(JobPage.model_fields) == set(RunPage.model_fields)


# ------------------------------------------------------------------------------------- pagination


def test_list_jobs_is_one_page_after_a_cursor_with_the_filters(api: ScriptedApi, client: Punctual) -> None:
    api.on("GET", "/v1/jobs", 200, {"items": [JOB], "next_cursor": "c2"})
    page = client.list_jobs(limit=1, cursor="c1", status="ACTIVE", name_prefix="nightly-", tag="team=data")
    assert (len(page.items), page.next_cursor) == (1, "c2")
    assert api.requests[-1]["query"] == {
        "limit": "1",
        "cursor": "c1",
        "status": "ACTIVE",
        "name_prefix": "nightly-",
        "tag": "team=data",
    }


def test_iter_jobs_reads_page_after_page_as_the_iteration_goes_on(api: ScriptedApi, client: Punctual) -> None:
    pages = {None: ("a", "c1"), "c1": ("b", "c2"), "c2": ("c", None)}

    def page(query: dict[str, str], _body: Any) -> Answer:
        name, after = pages[query.get("cursor")]
        return 200, {"items": [{**JOB, "name": name}], "next_cursor": after}, {}

    api.script[("GET", "/v1/jobs")] = page
    jobs = client.iter_jobs(status="ACTIVE", page_size=1)
    assert api.requests == [], "nothing is read before the first item is asked for"
    assert next(jobs).name == "a" and len(api.requests) == 1
    assert [job.name for job in jobs] == ["b", "c"]
    assert [request["query"].get("cursor") for request in api.requests] == [None, "c1", "c2"]
    assert {request["query"]["status"] for request in api.requests} == {"ACTIVE"}


def test_iter_runs_follows_the_cursors_of_a_jobs_history(api: ScriptedApi, client: Punctual) -> None:
    def page(query: dict[str, str], _body: Any) -> Answer:
        if query.get("cursor"):
            return 200, {"items": [{**RUN, "run_id": "r2"}], "next_cursor": None}, {}
        return 200, {"items": [RUN], "next_cursor": "next"}, {}

    api.script[("GET", f"/v1/jobs/{JOB['job_id']}/runs")] = page
    runs = list(client.iter_runs(JOB["job_id"], reason="paused"))
    assert [run.run_id for run in runs] == [RUN["run_id"], "r2"]
    assert api.requests[-1]["query"] == {"limit": "100", "cursor": "next", "reason": "paused"}


# -------------------------------------------------------------------------------- what is sent


def test_create_job_sends_the_body_the_idempotency_key_and_times_as_iso(
    api: ScriptedApi, client: Punctual
) -> None:
    api.on("POST", "/v1/jobs", 201, JOB)
    at = datetime(2026, 11, 27, 13, 0, 5, tzinfo=UTC)
    client.create_job(
        {"at": at},
        {"type": "http", "url": "https://example.com/hook"},
        name="hello",
        tags={"team": "docs"},
        idempotency_key="key-1",
    )
    sent = api.requests[-1]
    assert sent["body"] == {
        "schedule": {"at": "2026-11-27T13:00:05+00:00"},
        "target": {"type": "http", "url": "https://example.com/hook"},
        "name": "hello",
        "tags": {"team": "docs"},
    }
    assert sent["headers"]["Idempotency-Key"] == "key-1"
    assert sent["headers"]["Authorization"] == "Bearer t0k"


def test_create_jobs_sends_one_batch_and_reads_each_answer(api: ScriptedApi, client: Punctual) -> None:
    error = {"error": "invalid_input", "field": "schedule.cron", "reason": "never"}
    api.on(
        "POST",
        "/v1/jobs/batch",
        200,
        {
            "items": [
                {"index": 0, "status": 201, "job": JOB, "error": None},
                {"index": 1, "status": 422, "job": None, "error": error},
            ]
        },
    )
    created = client.create_jobs([{"schedule": {"cron": "0 3 * * *"}}, {"schedule": {"cron": "0 0 30 2 *"}}])
    assert api.requests[-1]["body"] == {
        "jobs": [{"schedule": {"cron": "0 3 * * *"}}, {"schedule": {"cron": "0 0 30 2 *"}}]
    }
    assert created.items[0].job is not None and created.items[0].job.job_id == JOB["job_id"]
    assert created.items[1].error is not None and created.items[1].error.field == "schedule.cron"
    assert created.raw["items"][1]["error"] == error


def test_each_job_action_is_its_route(api: ScriptedApi, client: Punctual) -> None:
    job_id = JOB["job_id"]
    for method, path in [
        ("PATCH", f"/v1/jobs/{job_id}"),
        ("POST", f"/v1/jobs/{job_id}/pause"),
        ("POST", f"/v1/jobs/{job_id}/resume"),
        ("DELETE", f"/v1/jobs/{job_id}"),
    ]:
        api.on(method, path, 200, JOB)
    api.on("POST", f"/v1/jobs/{job_id}/run", 202, {**RUN, "kind": "manual", "status": "QUEUED"})
    api.on("POST", f"/v1/jobs/{job_id}/runs/r1/cancel", 200, {**RUN, "status": "CANCELLED"})
    client.patch_job(job_id, name=None, tags={"tier": "gold"})
    client.pause_job(job_id)
    client.pause_job(job_id, note="quarter close", until=datetime(2026, 12, 1, tzinfo=UTC))
    client.resume_job(job_id)
    client.cancel_job(job_id)
    run = client.run_now(job_id)
    cancelled = client.cancel_run(job_id, "r1")
    assert [
        (request["method"], request["path"].rsplit("/", 1)[-1], request["body"]) for request in api.requests
    ] == [
        ("PATCH", job_id, {"name": None, "tags": {"tier": "gold"}}),
        ("POST", "pause", None),
        ("POST", "pause", {"note": "quarter close", "until": "2026-12-01T00:00:00+00:00"}),
        ("POST", "resume", None),
        ("DELETE", job_id, None),
        ("POST", "run", None),
        ("POST", "cancel", None),
    ]
    assert (run.kind, run.status, cancelled.status) == (RunKind.MANUAL, RunStatus.QUEUED, RunStatus.CANCELLED)


def test_bulk_all_goes_on_with_the_cursor_until_none_is_left(api: ScriptedApi, client: Punctual) -> None:
    def bulk(_query: dict[str, str], body: Any) -> Answer:
        more = body.get("cursor") is None
        item = {"job_id": f"job_{len(api.requests)}", "status": 200, "job": JOB, "error": None}
        return (
            200,
            {
                "action": "cancel",
                "matched": 1,
                "items": [item],
                "more": more,
                "next_cursor": "c1" if more else None,
            },
            {},
        )

    api.script[("POST", "/v1/jobs/bulk")] = bulk
    items = client.bulk_all("cancel", {"team": "data"})
    assert [item.job_id for item in items] == ["job_1", "job_2"] and isinstance(items[0], BulkItemOut)
    assert [request["body"] for request in api.requests] == [
        {"action": "cancel", "tags": {"team": "data"}},
        {"action": "cancel", "tags": {"team": "data"}, "cursor": "c1"},
    ]
    one = client.bulk("pause", {"team": "data"}, note="migration")
    assert api.requests[-1]["body"] == {"action": "pause", "tags": {"team": "data"}, "note": "migration"}
    assert one.more and one.next_cursor == "c1" and one.raw["matched"] == 1


def test_health_needs_no_model_of_the_api(api: ScriptedApi, client: Punctual) -> None:
    api.on("GET", "/v1/health", 200, {"status": "ok"})
    assert client.health().status == "ok"

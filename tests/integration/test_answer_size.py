"""Answers that list jobs stay within Lambda's 6 MB (every call of ``make_call`` checks it): a page of
jobs with payloads near the 64 KiB a request holds, and a bulk action over them, end early with a
cursor that goes on from the first job left out. Every job is answered once across the pages."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Call

# Quotes count twice in the job's JSON and twice again in the answer's body string: ~60 KB of them
# make a job's view ~120 KB of answer, so 60 of them would be 7 MB.
PAYLOAD = {"text": '"' * 30_000}


def _create(call: Call, count: int) -> set[str]:
    ids = set()
    for index in range(count):
        status, job = call(
            "POST",
            "/v1/jobs",
            {
                "name": f"big-{index}",
                "schedule": {"rate": "1 hour"},
                "target": {"type": "http", "url": "https://example.com/hook"},
                "payload": PAYLOAD,
                "tags": {"team": "reports"},
            },
        )
        assert status == 201, job
        ids.add(job["job_id"])
    return ids


def test_a_page_of_large_jobs_ends_before_lambdas_limit_and_its_cursor_loses_none(call: Call) -> None:
    created = _create(call, 60)
    seen: list[str] = []
    pages: list[int] = []
    cursor = None
    while True:
        status, page = call("GET", "/v1/jobs?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        pages.append(len(page["items"]))
        seen.extend(job["job_id"] for job in page["items"])
        assert all(job["payload"] == PAYLOAD for job in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(created)
    assert len(pages) > 1 and all(pages), pages


def test_a_bulk_action_over_large_jobs_answers_within_lambdas_limit_and_goes_on_from_its_cursor(
    call: Call,
) -> None:
    created = _create(call, 60)
    paused: set[str] = set()
    cursor: Any = None
    rounds = 0
    while True:
        body: dict[str, Any] = {"action": "pause", "tags": {"team": "reports"}}
        if cursor:
            body["cursor"] = cursor
        status, answer = call("POST", "/v1/jobs/bulk", body)
        assert status == 200, answer
        assert all(item["status"] == 200 for item in answer["items"])
        paused |= {item["job_id"] for item in answer["items"]}
        rounds += 1
        if not answer["more"]:
            break
        cursor = answer["next_cursor"]
    assert paused == created
    assert rounds > 1

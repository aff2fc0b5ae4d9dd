"""``/v1/limits`` through the api handler (API Gateway proxy events), on the fake and on moto:
create, list with current use and waiting runs, get, replace by version, delete; bad input is a 422
naming the field; another owner sees none of it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from punctual_functions.core.model import iso
from tests.integration.conftest import Call, Harness

GOOD: dict[str, Any] = {"name": "partner", "match": "https://api.partner.test/v1", "max_concurrent": 10}


def test_a_limit_is_created_listed_replaced_and_deleted(call: Call) -> None:
    status, created = call("POST", "/v1/limits", GOOD)
    assert status == 201, created
    assert (created["name"], created["match"], created["max_concurrent"], created["version"]) == (
        "partner",
        "https://api.partner.test/v1",
        10,
        1,
    )
    assert (created["in_use"], created["running"], created["waiting_count"], created["waiting"]) == (
        0,
        [],
        0,
        [],
    )
    status, again = call("POST", "/v1/limits", GOOD)
    assert status == 409 and again["field"] == "name"
    status, page = call("GET", "/v1/limits")
    assert status == 200 and [item["name"] for item in page["items"]] == ["partner"]
    status, page = call("GET", "/v1/limits", owner="bob")
    assert status == 200 and page["items"] == []
    status, _ = call("GET", "/v1/limits/partner", owner="bob")
    assert status == 404
    body = {"match": "https://API.partner.test", "per_second": 2.5, "burst": 5, "version": 1}
    status, replaced = call("PUT", "/v1/limits/partner", body)
    assert status == 200, replaced
    assert (replaced["match"], replaced["max_concurrent"], replaced["per_second"], replaced["burst"]) == (
        "https://api.partner.test",
        None,
        2.5,
        5,
    )
    assert replaced["version"] == 2 and replaced["tokens"] == 5.0
    status, stale = call("PUT", "/v1/limits/partner", body)
    assert status == 409 and stale["field"] == "version"
    status, deleted = call("DELETE", "/v1/limits/partner")
    assert status == 200 and deleted["name"] == "partner"
    status, _ = call("GET", "/v1/limits/partner")
    assert status == 404
    status, _ = call("DELETE", "/v1/limits/partner")
    assert status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**GOOD, "name": None}, "name"),
        ({**GOOD, "name": "has space"}, "name"),
        ({**GOOD, "name": "job:x"}, "name"),
        ({**GOOD, "match": "ftp://x.test"}, "match"),
        ({**GOOD, "match": "https://x.test/?q=1"}, "match"),
        ({**GOOD, "match": "arn:aws:*:x"}, "match"),
        ({**GOOD, "max_concurrent": 0}, "max_concurrent"),
        ({**GOOD, "max_concurrent": "10"}, "max_concurrent"),
        ({**GOOD, "max_concurrent": 1.5}, "max_concurrent"),
        ({"name": "x", "match": "https://x.test"}, "max_concurrent"),
        ({**GOOD, "per_second": 0}, "per_second"),
        ({**GOOD, "per_second": 5e-324}, "per_second"),
        ({**GOOD, "burst": 3}, "burst"),
        ({**GOOD, "version": 1}, "version"),
        ({**GOOD, "colour": "red"}, "colour"),
    ],
)
def test_a_bad_limit_is_a_422_naming_the_field(call: Call, body: dict[str, Any], field: str) -> None:
    status, error = call("POST", "/v1/limits", body)
    assert status == 422, error
    assert error["field"] == field, error
    status, page = call("GET", "/v1/limits")
    assert page["items"] == []


@pytest.mark.parametrize("name", ["%23", "x" * 65, "a%20b", "%E2%82%AC", "-x"])
def test_a_path_that_names_no_possible_limit_is_a_404(call: Call, name: str) -> None:
    for method, body in (
        ("GET", None),
        ("DELETE", None),
        ("PUT", {"match": "https://x.test", "max_concurrent": 1}),
    ):
        status, error = call(method, f"/v1/limits/{name}", body)
        assert status == 404 and error["field"] == "name", (method, error)


@pytest.mark.parametrize("match", ["http://x.test:99999", "http://[::1", "https://x.test/a b"])
def test_a_match_that_does_not_parse_is_a_422(call: Call, match: str) -> None:
    status, error = call("POST", "/v1/limits", {**GOOD, "match": match})
    assert status == 422 and error["field"] == "match", error


def test_a_put_names_its_limit_by_its_path(call: Call) -> None:
    call("POST", "/v1/limits", GOOD)
    status, error = call("PUT", "/v1/limits/partner", {**GOOD, "name": "other"})
    assert status == 422 and error["field"] == "name"
    status, error = call("PUT", "/v1/limits/nothing", {"match": "https://x.test", "max_concurrent": 1})
    assert status == 404


def test_a_limit_shows_the_runs_holding_its_slots_and_those_waiting(call: Call, harness: Harness) -> None:
    status, _ = call("POST", "/v1/limits", {**GOOD, "max_concurrent": 1, "match": "https://example.com"})
    assert status == 201
    status, job = call(
        "POST",
        "/v1/jobs",
        {
            "schedule": {"at": iso(harness.clock() + timedelta(seconds=5))},
            "target": {"type": "http", "url": "https://example.com/hook"},
        },
    )
    assert status == 201, job
    now = harness.clock()
    harness.store.take_slot(
        "alice",
        "partner",
        1,
        holder="busy-run",
        job_id="job_x",
        now=now,
        lease_until=now + timedelta(minutes=5),
    )
    harness.clock.advance(5)
    harness.deliver_all()
    status, runs = call("GET", f"/v1/jobs/{job['job_id']}/runs")
    (run,) = runs["items"]
    assert (run["status"], run["reason"], run["limited_by"]) == ("QUEUED", "limited", "partner")
    harness.clock.advance(3)
    status, limit = call("GET", "/v1/limits/partner")
    assert status == 200
    assert limit["in_use"] == 1 and [slot["run_id"] for slot in limit["running"]] == ["busy-run"]
    assert limit["waiting_count"] == 1
    assert limit["waiting"][0]["run_id"] == run["run_id"] and limit["waiting"][0]["waited_ms"] == 3000
    status, job_view = call("GET", f"/v1/jobs/{job['job_id']}")
    assert job_view["max_concurrent"] is None


def test_a_job_takes_max_concurrent_and_alerts_limited_seconds(call: Call) -> None:
    body = {
        "schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"},
        "target": {"type": "http", "url": "https://example.com/hook"},
        "max_concurrent": 3,
        "alerts": {"target": {"type": "http", "url": "https://example.com/alerts"}, "limited_seconds": 60},
    }
    status, job = call("POST", "/v1/jobs", body)
    assert status == 201, job
    assert job["max_concurrent"] == 3 and job["alerts"]["limited_seconds"] == 60
    status, patched = call("PATCH", f"/v1/jobs/{job['job_id']}", {"max_concurrent": None})
    assert status == 200 and patched["max_concurrent"] is None
    status, error = call("PATCH", f"/v1/jobs/{job['job_id']}", {"max_concurrent": 0})
    assert status == 422 and error["field"] == "max_concurrent"

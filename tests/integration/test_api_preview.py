"""``POST /v1/schedules/preview`` through the api handler: fire times, DST marks, an outage's replay,
and every refusal naming its field. Nothing is written: the preview needs no table."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Clock

# The preview reads no table, so the in-memory harness is enough.
pytestmark = pytest.mark.parametrize("harness", ["memory"], indirect=True)


def test_the_next_fire_times_in_utc_and_the_schedules_zone(call, clock: Clock) -> None:
    status, body = call(
        "POST", "/v1/schedules/preview", {"schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"}}
    )
    assert status == 200, body
    assert body["timezone"] == "Europe/Berlin"
    assert body["schedule"] == {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"}
    times = body["fire_times"]
    assert len(times) == 10, "ten by default"
    # The clock says Sunday 2026-11-22 12:00 UTC: the first weekday is Monday.
    assert times[0] == {
        "at": "2026-11-23T12:00:00.000Z",
        "local": "2026-11-23T13:00:00+01:00",
        "dst": None,
        "moved_from": [],
    }
    assert body["outage"] is None


def test_dst_gaps_and_repeats_are_marked(call) -> None:
    status, body = call(
        "POST",
        "/v1/schedules/preview",
        {
            "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Berlin"},
            "after": "2026-03-28T12:00:00",
            "count": 2,
        },
    )
    assert status == 200, body
    gap = body["fire_times"][0]
    assert gap["at"] == "2026-03-29T01:00:00.000Z" and gap["local"] == "2026-03-29T03:00:00+02:00"
    assert gap["dst"] == {"kind": "gap", "local": "2026-03-29T02:30:00"}
    _, autumn = call(
        "POST",
        "/v1/schedules/preview",
        {"schedule": {"cron": "30 2 * * *", "timezone": "Europe/Berlin"}, "after": "2026-10-25T00:00:00"},
    )
    assert autumn["fire_times"][0]["dst"] == {"kind": "repeat", "local": "2026-10-25T02:30:00"}
    assert autumn["fire_times"][0]["local"] == "2026-10-25T02:30:00+02:00", "the first pass"


def test_an_outage_is_replayed_by_the_misfire_policy(call) -> None:
    body: dict[str, Any] = {
        "schedule": {"cron": "*/15 * * * *", "misfire": "run_once"},
        "outage": {"from": "2026-11-23T01:00:00Z", "to": "2026-11-23T02:05:00Z"},
    }
    status, answer = call("POST", "/v1/schedules/preview", body)
    assert status == 200, answer
    outage = answer["outage"]
    assert outage["counts"] == {"runs": 1, "skipped": 0, "collapsed": 4}
    assert [o["fate"] for o in outage["occurrences"]] == ["collapsed"] * 4 + ["runs"]
    assert outage["occurrences"][-1]["scheduled_for"] == "2026-11-23T02:00:00.000Z"
    assert outage["occurrences"][-1]["lateness_ms"] == 5 * 60 * 1000
    assert outage["resumes_with"] == "2026-11-23T02:15:00.000Z"
    assert outage["listed_all"] is True and outage["from"] == "2026-11-23T01:00:00.000Z"
    body["schedule"]["misfire"] = "skip"
    assert call("POST", "/v1/schedules/preview", body)[1]["outage"]["counts"]["skipped"] == 5


def test_run_once_collapses_into_an_occurrence_due_as_the_outage_ends(call) -> None:
    body = {
        "schedule": {"cron": "*/15 * * * *"},
        "outage": {"from": "2026-11-23T01:00:00Z", "to": "2026-11-23T02:00:00Z"},
    }
    outage = call("POST", "/v1/schedules/preview", body)[1]["outage"]
    assert outage["counts"] == {"runs": 0, "skipped": 0, "collapsed": 4}
    assert outage["resumes_with"] == "2026-11-23T02:00:00.000Z", "the one they collapse into, on time"


def test_a_naive_outage_is_read_in_the_schedules_zone(call) -> None:
    body = {
        "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Berlin"},
        "outage": {"from": "2026-11-23T01:00:00", "to": "2026-11-23T04:00:00"},
    }
    _, answer = call("POST", "/v1/schedules/preview", body)
    assert answer["outage"]["from"] == "2026-11-23T00:00:00.000Z"
    assert answer["outage"]["occurrences"] == [
        {
            "scheduled_for": "2026-11-23T01:00:00.000Z",
            "local": "2026-11-23T02:00:00+01:00",
            "fate": "runs",
            "lateness_ms": 2 * 3600 * 1000,
        }
    ]


def test_an_at_time_in_the_past_is_explained(call) -> None:
    status, body = call("POST", "/v1/schedules/preview", {"schedule": {"at": "2026-01-01T00:00:00Z"}})
    assert status == 200 and body["fire_times"] == []
    assert "runs at once" in body["notes"][0]


def test_a_preview_creates_no_job(call) -> None:
    call("POST", "/v1/schedules/preview", {"schedule": {"rate": "5 minutes"}})
    assert call("GET", "/v1/jobs")[1]["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"cron": "61 * * * *"}}, "schedule.cron"),
        ({"schedule": {"cron": "0 2 * * *", "timezone": "Mars/Olympus"}}, "schedule.timezone"),
        ({"schedule": {"rate": "1 second"}}, "schedule.rate"),
        ({"schedule": {}}, "schedule"),
        ({"schedule": {"rate": "5 minutes"}, "count": 101}, "count"),
        ({"schedule": {"rate": "5 minutes"}, "count": 0}, "count"),
        ({"schedule": {"rate": "5 minutes"}, "after": "yesterday"}, "after"),
        ({"schedule": {"rate": "5 minutes"}, "outage": {"from": "2026-11-23T01:00:00Z"}}, "outage.to"),
        (
            {
                "schedule": {"rate": "5 minutes"},
                "outage": {"from": "2026-11-23T02:00Z", "to": "2026-11-23T01:00Z"},
            },
            "outage.to",
        ),
        (
            {"schedule": {"rate": "5 minutes"}, "outage": {"from": "soon", "to": "2026-11-23T01:00Z"}},
            "outage.from",
        ),
        (
            {
                "schedule": {"rate": "10 seconds"},
                "outage": {"from": "2026-01-01T00:00Z", "to": "2027-01-01T00:00Z"},
            },
            "outage.to",
        ),
        ({"schedule": {"rate": "5 minutes"}, "surprise": True}, "surprise"),
    ],
)
def test_bad_input_is_422_naming_the_field(call, body: dict[str, Any], field: str) -> None:
    status, error = call("POST", "/v1/schedules/preview", body)
    assert status == 422, error
    assert error["field"] == field, error
    assert error["reason"]


def test_a_preview_needs_credentials(call) -> None:
    status, _ = call("POST", "/v1/schedules/preview", {"schedule": {"rate": "5 minutes"}}, owner=None)
    assert status == 401

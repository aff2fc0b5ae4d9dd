"""End to end through the local stack's HTTP API: a job follows a business calendar. A year of a
cron on German business days is previewed, Bavaria's holidays excluded; a calendar changed under a
running job stops it for the day with a row saying so; a calendar in use cannot be deleted."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import parse_iso
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def test_a_year_of_bavarian_business_days_previewed(local_stack: Api) -> None:
    status, calendar = local_stack.call(
        "POST",
        "/v1/calendars",
        {"name": "de-by-preview", "timezone": "Europe/Berlin", "holidays": ["DE-BY"]},
    )
    assert status == 201, calendar
    start = datetime.now(UTC)
    status, preview = local_stack.call(
        "POST",
        "/v1/schedules/preview",
        {
            "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Berlin", "calendar": "de-by-preview"},
            "until": (start + timedelta(days=365)).isoformat(),
        },
    )
    assert status == 200, preview
    days = [date.fromisoformat(time["local"][:10]) for time in preview["fire_times"]]
    excluded = {date.fromisoformat(day["day"]): day for day in preview["calendar"]["excluded"]}
    assert 240 <= len(days) <= 255  # a year's business days in Bavaria
    assert all(day.isoweekday() <= 5 for day in days) and not set(days) & set(excluded)
    christmas = next(day for day in excluded if (day.month, day.day) == (12, 25))
    if christmas.isoweekday() <= 5:
        assert excluded[christmas]["reason"] == "holiday in DE-BY: Christmas Day"
    assert all(entry["fate"] == "skipped" for entry in excluded.values())
    assert len(days) + len(excluded) in (365, 366)


def test_a_calendar_changed_under_a_running_job_stops_it_for_the_day_with_a_row(local_stack: Api) -> None:
    everyday = {"timezone": "UTC", "weekdays": [1, 2, 3, 4, 5, 6, 7]}
    status, _ = local_stack.call("POST", "/v1/calendars", {"name": "changing", **everyday})
    assert status == 201
    with Receiver() as receiver:
        status, job = local_stack.call(
            "POST",
            "/v1/jobs",
            {
                "schedule": {"cron": "*/10 * * * * *", "calendar": "changing"},
                "target": {"type": "http", "url": receiver.url + "/business"},
            },
        )
        assert status == 201, job
        assert job["schedule"]["calendar"] == "changing" and job["schedule"]["on_excluded"] == "skip"
        receiver.wait_for("/business", 2, timeout=40)
        # The rest of today (and tomorrow, should the test run at midnight) is excluded from now on
        today = datetime.now(UTC).date()
        closed = [today.isoformat(), (today + timedelta(days=1)).isoformat()]
        status, changed = local_stack.call("PUT", "/v1/calendars/changing", {**everyday, "dates": closed})
        assert status == 200 and changed["version"] == 2, changed

        def calendar_rows() -> list[dict[str, object]]:
            _, page = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs?reason=calendar")
            return list(page["items"])

        (row,) = wait_until(calendar_rows, timeout=40)
        assert row["status"] == "SKIPPED" and row["calendar"] == "changing"
        assert f"calendar 'changing' excludes {row['scheduled_for'][:10]}: excluded date" == row["error"]
        # What was dispatched before the change (up to the look-ahead, two minutes) runs as planned;
        # nothing at or after the row's time does.
        excluded_from = parse_iso(str(row["scheduled_for"]))
        wait_until(lambda: datetime.now(UTC) > excluded_from + timedelta(seconds=12), timeout=180)
        ran = [parse_iso(d.headers["Punctual-Scheduled-For"]) for d in receiver.for_path("/business")]
        assert ran and max(ran) < excluded_from
        _, view = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
        assert view["upcoming"][0][:10] not in closed

        # A calendar in use is not deleted; once its job is cancelled, it is
        status, refused = local_stack.call("DELETE", "/v1/calendars/changing")
        assert status == 409 and job["job_id"] in str(refused), refused
        assert local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")[0] == 200
        assert local_stack.call("DELETE", "/v1/calendars/changing")[0] in (200, 204)


def test_a_job_naming_an_unknown_calendar_is_refused_naming_the_field(local_stack: Api) -> None:
    status, body = local_stack.call(
        "POST",
        "/v1/jobs",
        {
            "schedule": {"cron": "0 9 * * *", "calendar": "no-such-calendar"},
            "target": {"type": "http", "url": "https://example.com/hook"},
        },
    )
    assert status == 422 and body["field"] == "schedule.calendar", body

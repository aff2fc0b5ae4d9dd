"""Business calendars end to end: ``/v1/calendars`` through the local stack (``punctual local``) over
HTTP, stored in its table on the emulator: create, list, read, replace, the excluded days, a refused
delete while a job uses the calendar, and the delete once it does not."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from punctual.cli import main
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def job_using(api: Api, calendar: str) -> str:
    """A live job of the caller's that follows ``calendar``, created through the job API."""
    body: dict[str, Any] = {
        "name": f"cal-user-{uuid.uuid4().hex[:8]}",
        "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Berlin", "calendar": calendar},
        "target": {"type": "http", "url": api.base_url + "/v1/health", "method": "GET"},
    }
    status, answer = api.call("POST", "/v1/jobs", body)
    assert status == 201, answer
    return str(answer["job_id"])


def test_a_calendar_is_created_listed_read_replaced_and_deleted_over_http(local_stack: Api) -> None:
    api = local_stack
    name = f"bavaria-{uuid.uuid4().hex[:8]}"
    status, created = api.call(
        "POST",
        "/v1/calendars",
        {"name": name, "timezone": "Europe/Berlin", "holidays": ["DE-BY"], "dates": ["2026-12-23"]},
    )
    assert status == 201, created
    assert created["holidays"] == [{"country": "DE", "subdivision": "BY"}]
    assert created["version"] == 1
    status, again = api.call("POST", "/v1/calendars", {"name": name})
    assert (status, again["field"]) == (409, "name")

    status, page = api.call("GET", "/v1/calendars")
    assert status == 200
    assert created in page["items"]
    assert api.call("GET", f"/v1/calendars/{name}") == (200, created)

    status, days = api.call("GET", f"/v1/calendars/{name}/days?from=2026-12-21&to=2027-01-06")
    assert status == 200, days
    reasons = {day["date"]: day["reason"] for day in days["excluded"]}
    assert reasons["2026-12-23"] == "excluded date"
    assert reasons["2026-12-25"].startswith("holiday in DE-BY")
    assert reasons["2027-01-06"].startswith("holiday in DE-BY")  # Epiphany: Bavaria's
    assert "2026-12-22" not in reasons

    status, replaced = api.call(
        "PUT", f"/v1/calendars/{name}", {"timezone": "America/New_York", "exchanges": ["XNYS"]}
    )
    assert status == 200, replaced
    assert (replaced["version"], replaced["exchanges"], replaced["holidays"]) == (2, ["XNYS"], [])
    assert replaced["expanded_until"] is not None
    status, days = api.call("GET", f"/v1/calendars/{name}/days?from=2026-11-23&to=2026-11-27")
    assert days["excluded"] == [{"date": "2026-11-26", "reason": "XNYS closed"}], days  # Thanksgiving

    status, gone = api.call("DELETE", f"/v1/calendars/{name}")
    assert (status, gone) == (200, replaced)
    assert api.call("GET", f"/v1/calendars/{name}")[0] == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"holidays": ["DE", "XX-YY"]}, "holidays[1]"),
        ({"holidays": [{"country": "ZZ"}]}, "holidays[0]"),
        ({"exchanges": ["NOPE"]}, "exchanges[0]"),
        ({"dates": ["2026-13-01"]}, "dates[0]"),
        ({"timezone": "Nowhere/City"}, "timezone"),
        ({"holiday": ["DE"]}, "holiday"),
    ],
)
def test_bad_input_is_422_naming_the_field(local_stack: Api, body: dict[str, Any], field: str) -> None:
    name = f"bad-{uuid.uuid4().hex[:8]}"
    status, answer = local_stack.call("POST", "/v1/calendars", {"name": name, **body})
    assert (status, answer["field"]) == (422, field), answer
    assert answer["reason"]
    assert local_stack.call("GET", f"/v1/calendars/{name}")[0] == 404, "nothing was written"


def test_a_calendar_a_live_job_uses_cannot_be_deleted_until_the_job_ends(local_stack: Api) -> None:
    api = local_stack
    name = f"ops-{uuid.uuid4().hex[:8]}"
    assert api.call("POST", "/v1/calendars", {"name": name})[0] == 201
    job_id = job_using(api, name)
    status, refused = api.call("DELETE", f"/v1/calendars/{name}")
    assert status == 409, refused
    assert refused["job_count"] == 1
    assert [job["job_id"] for job in refused["jobs"]] == [job_id]
    assert api.call("GET", f"/v1/calendars/{name}")[0] == 200, "still there"
    assert api.call("DELETE", f"/v1/jobs/{job_id}")[0] == 200  # cancelled: no longer live
    assert api.call("DELETE", f"/v1/calendars/{name}")[0] == 200


def test_the_cli_manages_a_calendar_through_the_stack(local_stack: Api, config_file: Any) -> None:
    api = local_stack
    name = f"cli-{uuid.uuid4().hex[:8]}"

    def punctual(*args: str) -> Any:
        return CliRunner().invoke(main, [*args, "--endpoint", api.base_url, "--token", api.token])

    created = punctual(
        "calendars", "create", name, "--timezone", "Europe/Berlin", "--holidays", "DE-BY",
        "--weekdays", "1-4", "--date", "2026-12-24", "--yearly", "12-31", "--exchange", "XNYS",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    assert "Mon Tue Wed Thu" in created.output and "DE-BY" in created.output and "XNYS" in created.output
    shown = punctual("calendars", "get", name, "--json")
    assert shown.exit_code == 0, shown.output
    calendar = json.loads(shown.output)
    assert (calendar["weekdays"], calendar["dates"], calendar["yearly"]) == (
        [1, 2, 3, 4],
        ["2026-12-24"],
        ["12-31"],
    )
    assert name in punctual("calendars", "list").output
    days = punctual("calendars", "days", name, "--from", "2026-12-21", "--to", "2026-12-27")
    assert days.exit_code == 0, days.output
    assert "2026-12-24  excluded date" in days.output and "not a working day (Friday)" in days.output
    updated = punctual("calendars", "update", name, "--holidays", "DE", "--json")
    assert updated.exit_code == 0, updated.output
    assert json.loads(updated.output)["version"] == 2
    bad = punctual("calendars", "update", name, "--holidays", "XX")
    assert bad.exit_code == 1 and "holidays[0]" in bad.output, bad.output
    assert punctual("calendars", "update", name, "--weekdays", "5-1").exit_code == 2  # usage

    job_id = job_using(api, name)
    refused = punctual("calendars", "delete", name)
    assert refused.exit_code == 4, refused.output  # a conflict, naming the job
    assert job_id in refused.output
    api.call("DELETE", f"/v1/jobs/{job_id}")
    deleted = punctual("calendars", "delete", name)
    assert deleted.exit_code == 0 and f"deleted calendar {name}" in deleted.output, deleted.output
    assert punctual("calendars", "get", name).exit_code == 3  # not found

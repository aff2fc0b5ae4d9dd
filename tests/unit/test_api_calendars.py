"""``punctual_functions/api/calendars.py`` on the in-memory fakes: what each route writes and answers, and
every refusal naming its field (through the handler, as API Gateway calls it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from typing import Any

import pytest

from punctual_functions.api import calendars
from punctual_functions.api.errors import Conflict, InvalidInput, NotFound
from punctual_functions.api.requests import CalendarRulesIn, CreateCalendarIn
from punctual_functions.core.calendars import HolidaySource
from punctual_functions.core.model import JobStatus
from tests.conftest import Clock
from tests.contract.conftest import World
from tests.integration.conftest import Call, make_call
from tests.unit.test_engine_on_fakes import SETTINGS, Engine, engine_with


@pytest.fixture
def engine(clock: Clock) -> Iterator[Engine]:
    yield engine_with(SETTINGS, clock)


@pytest.fixture
def call(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Call:
    return make_call(engine.service, monkeypatch)


def create(engine: Engine, **body: Any) -> Any:
    return calendars.create_calendar(engine.service, "alice", CreateCalendarIn.model_validate(body))


def job_using(
    engine: Engine, calendar: str | None, status: JobStatus = JobStatus.ACTIVE, **changes: Any
) -> str:
    """A job of alice's that names ``calendar``, written straight to the table (the job API takes
    ``calendar`` from the other half of issue 29)."""
    at = engine.clock.advance(1)  # oldest first in a refusal
    job = World(engine.store).job(calendar=calendar, status=status, created_at=at, updated_at=at, **changes)
    engine.store.create_job(job, None)
    return job.job_id


def test_a_created_calendar_is_stored_normalized_and_answered_as_stored(engine: Engine) -> None:
    view = create(
        engine,
        name="bavaria",
        timezone="Europe/Berlin",
        holidays=["de-by", {"country": "AT"}, "DE-BY"],
        dates=["2026-12-24"],
        yearly=["12-31", "01-02"],
        weekdays=[5, 1, 2, 3, 4],
    )
    assert view == {
        "name": "bavaria",
        "timezone": "Europe/Berlin",
        "weekdays": [1, 2, 3, 4, 5],
        "holidays": [{"country": "DE", "subdivision": "BY"}, {"country": "AT", "subdivision": None}],
        "exchanges": [],
        "dates": ["2026-12-24"],
        "yearly": ["01-02", "12-31"],
        "expanded_until": None,
        "version": 1,
    }
    stored = engine.store.get_calendar("alice", "bavaria")
    assert stored is not None
    assert stored.holidays == (HolidaySource("DE", "BY"), HolidaySource("AT"))
    assert engine.store.get_calendar("bob", "bavaria") is None
    assert calendars.get_calendar(engine.service, "alice", "bavaria") == view
    assert calendars.list_calendars(engine.service, "alice") == {"items": [view]}
    assert calendars.list_calendars(engine.service, "bob") == {"items": []}


def test_a_second_create_of_the_name_is_409_and_changes_nothing(engine: Engine) -> None:
    first = create(engine, name="ops")
    with pytest.raises(Conflict) as refused:
        create(engine, name="ops", weekdays=[1])
    assert refused.value.field == "name"
    assert calendars.get_calendar(engine.service, "alice", "ops") == first


def test_a_put_creates_then_replaces_moving_the_version_on_only_when_something_changes(
    engine: Engine,
) -> None:
    rules = CalendarRulesIn.model_validate({"weekdays": [1, 2, 3]})
    created = calendars.replace_calendar(engine.service, "alice", "short-week", rules)
    assert (created["version"], created["weekdays"]) == (1, [1, 2, 3])
    same = calendars.replace_calendar(engine.service, "alice", "short-week", rules)
    assert same == created
    changed = calendars.replace_calendar(
        engine.service, "alice", "short-week", CalendarRulesIn.model_validate({"dates": ["2027-01-04"]})
    )
    assert changed["version"] == 2
    assert changed["weekdays"] == [1, 2, 3, 4, 5], "a PUT replaces the rules as a whole: defaults again"
    assert calendars.get_calendar(engine.service, "alice", "short-week") == changed


def test_a_put_that_loses_to_a_concurrent_change_is_409(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(engine, name="ops")
    read = engine.store.get_calendar("alice", "ops")
    assert read is not None
    # Another writer changes it between this PUT's read and its write.
    engine.store.put_calendar("alice", replace(read, weekdays=frozenset({1}), version=2), expected_version=1)
    monkeypatch.setattr(engine.store, "get_calendar", lambda owner, name: read)
    with pytest.raises(Conflict) as refused:
        calendars.replace_calendar(
            engine.service, "alice", "ops", CalendarRulesIn.model_validate({"weekdays": [2]})
        )
    assert refused.value.field == "version"


def test_a_delete_is_refused_while_a_live_job_uses_the_calendar_and_names_the_jobs(engine: Engine) -> None:
    create(engine, name="ops")
    using = [job_using(engine, "ops", name="job-0"), job_using(engine, "ops", JobStatus.PAUSED, name="job-1")]
    job_using(engine, "another-calendar", name="other")
    job_using(engine, "ops", JobStatus.CANCELLED, name="ended")
    job_using(engine, "ops", owner="bob")
    with pytest.raises(Conflict) as refused:
        calendars.delete_calendar(engine.service, "alice", "ops")
    body = refused.value.body()
    assert refused.value.status_code == 409
    assert body["job_count"] == 2
    assert body["jobs"] == [
        {"job_id": using[0], "name": "job-0", "status": "ACTIVE"},
        {"job_id": using[1], "name": "job-1", "status": "PAUSED"},
    ]
    assert engine.store.get_calendar("alice", "ops") is not None
    for job_id in using:  # once they ended, the calendar is free to go
        engine.service.cancel_job("alice", job_id)
    deleted = calendars.delete_calendar(engine.service, "alice", "ops")
    assert deleted["name"] == "ops"
    assert engine.store.get_calendar("alice", "ops") is None
    with pytest.raises(NotFound):
        calendars.delete_calendar(engine.service, "alice", "ops")


def test_a_refused_delete_lists_at_most_twenty_jobs_and_counts_them_all(engine: Engine) -> None:
    create(engine, name="ops")
    for _ in range(23):
        job_using(engine, "ops")
    with pytest.raises(Conflict) as refused:
        calendars.delete_calendar(engine.service, "alice", "ops")
    assert len(refused.value.body()["jobs"]) == 20
    assert refused.value.body()["job_count"] == 23


def test_days_lists_each_excluded_day_of_the_range_with_its_reason(engine: Engine) -> None:
    create(engine, name="bavaria", holidays=["DE-BY"], dates=["2026-12-23"], yearly=["12-31"])
    days = calendars.calendar_days(engine.service, "alice", "bavaria", "2026-12-21", "2027-01-06")
    assert (days["from"], days["to"]) == ("2026-12-21", "2027-01-06")
    excluded = {day["date"]: day["reason"] for day in days["excluded"]}
    assert list(excluded) == sorted(excluded)
    assert excluded["2026-12-23"] == "excluded date"
    assert excluded["2026-12-25"].startswith("holiday in DE-BY")
    assert excluded["2026-12-26"].startswith("not a working day (Saturday)")
    assert excluded["2026-12-31"] == "excluded every year"
    assert excluded["2027-01-06"].startswith("holiday in DE-BY")  # Epiphany: Bavaria's, not all Germany's
    assert "2026-12-22" not in excluded and "2026-12-28" not in excluded
    default = calendars.calendar_days(engine.service, "alice", "bavaria", None, None)
    assert (default["from"], default["to"]) == ("2026-11-22", "2026-12-22")  # the clock's day, a month


def test_an_exchange_is_expanded_when_the_calendar_is_written(engine: Engine) -> None:
    view = create(engine, name="nyse", timezone="America/New_York", exchanges=["xnys"])
    assert view["exchanges"] == ["XNYS"]
    assert view["expanded_until"] == "2029-11-22"  # the clock's day, three years on
    stored = engine.store.get_calendar("alice", "nyse")
    assert stored is not None
    assert date(2026, 11, 26) in stored.exchange_closed  # Thanksgiving
    assert date(2026, 11, 27) not in stored.exchange_closed  # the day after: a short session
    assert date(2026, 11, 28) not in stored.exchange_closed, "weekends are the weekdays rule's, not stored"
    assert min(stored.exchange_closed) >= date(2025, 11, 21)  # a year back
    days = calendars.calendar_days(engine.service, "alice", "nyse", "2026-11-23", "2026-11-27")
    assert days["excluded"] == [{"date": "2026-11-26", "reason": "XNYS closed"}]
    with pytest.raises(InvalidInput) as refused:
        calendars.calendar_days(engine.service, "alice", "nyse", "2029-11-01", "2029-12-31")
    assert refused.value.field == "to"


# ------------------------------------------------------------------------ through the handler


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"name": "x", "holidays": ["DE-BY", "XX"]}, "holidays[1]", "unknown country code"),
        (
            {"name": "x", "holidays": [{"country": "DE", "subdivision": "ZZ"}]},
            "holidays[0]",
            "no subdivision",
        ),
        ({"name": "x", "holidays": ["-BY"]}, "holidays[0]", "not a holiday source"),
        ({"name": "x", "exchanges": ["NOPE"]}, "exchanges[0]", "unknown exchange"),
        ({"name": "x", "dates": ["2026-12-24", "2026-02-30"]}, "dates[1]", "not a date"),
        ({"name": "x", "dates": ["24.12.2026"]}, "dates[0]", "not a date"),
        ({"name": "x", "yearly": ["13-01"]}, "yearly[0]", "MM-DD"),
        ({"name": "x", "weekdays": [1, 8]}, "weekdays[1]", "1 (Monday) to 7"),
        ({"name": "x", "weekdays": []}, "weekdays", "at least 1"),
        ({"name": "x", "timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
        ({"name": "x", "colour": "red"}, "colour", "Extra inputs"),
        ({"name": "bad name"}, "name", "pattern"),
        ({"weekdays": [1]}, "name", "Field required"),
    ],
)
def test_bad_input_is_422_naming_the_field_and_why(
    call: Call, body: dict[str, Any], field: str, says: str
) -> None:
    status, answer = call("POST", "/v1/calendars", body)
    assert status == 422, answer
    assert answer["field"] == field
    assert says in answer["reason"]


def test_the_routes_answer_as_documented(call: Call) -> None:
    status, created = call("POST", "/v1/calendars", {"name": "ops", "holidays": ["DE"]})
    assert status == 201
    assert call("GET", "/v1/calendars") == (200, {"items": [created]})
    assert call("GET", "/v1/calendars/ops") == (200, created)
    assert call("GET", "/v1/calendars/ops", owner="bob")[0] == 404
    status, replaced = call("PUT", "/v1/calendars/ops", {"holidays": ["DE-BE"], "yearly": ["03-10"]})
    assert (status, replaced["version"], replaced["holidays"]) == (
        200,
        2,
        [{"country": "DE", "subdivision": "BE"}],
    )
    assert call("PUT", "/v1/calendars/bad%20name", {})[1]["field"] == "name"
    status, days = call("GET", "/v1/calendars/ops/days?from=2027-03-01&to=2027-03-10")
    assert status == 200
    assert {"date": "2027-03-10", "reason": "excluded every year"} in days["excluded"]
    assert call("GET", "/v1/calendars/ops/days?from=2027-03-10&to=2027-03-01")[1]["field"] == "to"
    assert call("GET", "/v1/calendars/ops/days?from=2027-01-01&to=2028-02-05")[0] == 422  # over 400 days
    assert call("GET", "/v1/calendars/ops/days?from=tomorrow")[1]["field"] == "from"
    assert call("GET", "/v1/calendars/ops/days?from=9999-12-20")[1]["field"] == "from"  # not a 500
    assert call("GET", "/v1/calendars/ops/days?from=2999-12-20&to=2999-12-31")[0] == 200
    assert call("DELETE", "/v1/calendars/ops") == (200, replaced)
    assert call("GET", "/v1/calendars/ops")[0] == 404
    assert call("GET", "/v1/calendars/ops/days")[0] == 404

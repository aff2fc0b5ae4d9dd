"""Jobs that follow a business calendar, on the in-memory engine: a day the calendar excludes is a
row of the history (skip) or its occurrence runs on a business day (moved, once), the API refuses a
calendar it cannot use, and the preview shows what the calendar does."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from punctual.testing.fakes.store import MemoryStore
from punctual_functions.api.backfill import backfill as backfill_job
from punctual_functions.api.errors import InvalidInput
from punctual_functions.api.previews import preview_schedule
from punctual_functions.api.requests import BackfillIn, PreviewIn
from punctual_functions.core.calendars import Calendar, HolidaySource
from punctual_functions.core.model import Reason, Run, RunStatus, iso
from punctual_functions.core.ssrf_guard import NetworkPolicy
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue
from tests.fakes.targets import ScriptedTargets
from tests.harness import Harness
from tests.unit.test_engine_on_fakes import HOOK, SETTINGS

Engine = Harness[MemoryStore, MemoryQueue, ScriptedTargets]
BERLIN = ZoneInfo("Europe/Berlin")
BAVARIA = Calendar("bavaria", timezone="Europe/Berlin", holidays=(HolidaySource("DE", "BY"),))


def berlin(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN).astimezone(UTC)


@pytest.fixture
def engine() -> Iterator[Engine]:
    clock = Clock(berlin("2026-01-09T10:00"))  # a Friday, after its 09:00
    policy = NetworkPolicy(allow_loopback=False, allow_list=("example.com",))
    store = MemoryStore()
    store.put_calendar("alice", BAVARIA, expected_version=None)
    yield Engine(
        SETTINGS, clock, store, MemoryQueue(delays=False), ScriptedTargets(), policy, default_target=HOOK
    )


def live_until(engine: Engine, end: datetime) -> None:
    """Tick and work minute by minute... in steps of an hour: each step sweeps what fell due and
    delivers it (the occurrences here are on the hour)."""
    while engine.clock() < end:
        engine.clock.advance(3600)
        engine.dispatcher.sweep()
        engine.deliver_all()


def history(engine: Engine, job_id: str) -> list[Run]:
    return sorted(engine.store.runs.get(job_id, {}).values(), key=lambda run: run.scheduled_for)


def daily(engine: Engine, on_excluded: str, cron: str = "0 9 * * *") -> dict[str, Any]:
    schedule = {"cron": cron, "timezone": "Europe/Berlin", "calendar": "bavaria", "on_excluded": on_excluded}
    return dict(engine.create(schedule=schedule))


def test_a_weekend_is_a_row_per_day_naming_the_calendar_and_the_day(engine: Engine) -> None:
    job = daily(engine, "skip")
    live_until(engine, berlin("2026-01-13T10:00"))
    rows = [
        (run.scheduled_for, run.status, run.reason, run.calendar) for run in history(engine, job["job_id"])
    ]
    assert rows == [
        (berlin("2026-01-10T09:00"), RunStatus.SKIPPED, Reason.CALENDAR, "bavaria"),
        (berlin("2026-01-11T09:00"), RunStatus.SKIPPED, Reason.CALENDAR, "bavaria"),
        (berlin("2026-01-12T09:00"), RunStatus.SUCCEEDED, None, None),
        (berlin("2026-01-13T09:00"), RunStatus.SUCCEEDED, None, None),
    ]
    saturday = history(engine, job["job_id"])[0]
    assert saturday.covers == 1
    assert saturday.error == "calendar 'bavaria' excludes 2026-01-10: not a working day (Saturday)"
    assert len(engine.targets.deliveries) == 2


def test_moved_occurrences_run_once_on_the_next_business_day_with_their_original_times(
    engine: Engine,
) -> None:
    engine.clock.now = berlin("2026-04-01T10:00")  # Good Friday 04-03, Easter Monday 04-06
    job = daily(engine, "next_business_day")
    live_until(engine, berlin("2026-04-07T10:00"))
    runs = history(engine, job["job_id"])
    assert [(run.scheduled_for, run.status) for run in runs] == [
        (berlin("2026-04-02T09:00"), RunStatus.SUCCEEDED),
        (berlin("2026-04-07T09:00"), RunStatus.SUCCEEDED),
    ]
    assert runs[1].moved_from == tuple(berlin(f"2026-04-0{day}T09:00") for day in (3, 4, 5, 6))
    assert runs[1].calendar == "bavaria" and runs[0].moved_from == ()
    assert len(engine.targets.deliveries) == 2


def test_previous_business_day_runs_before_the_holidays_never_after(engine: Engine) -> None:
    engine.clock.now = berlin("2026-04-01T10:00")
    job = daily(engine, "previous_business_day")
    live_until(engine, berlin("2026-04-07T10:00"))
    runs = history(engine, job["job_id"])
    assert [run.scheduled_for for run in runs] == [berlin("2026-04-02T09:00"), berlin("2026-04-07T09:00")]
    assert runs[0].moved_from == tuple(berlin(f"2026-04-0{day}T09:00") for day in (3, 4, 5, 6))
    assert all(run.lateness_ms == 0 for run in runs)


def test_a_changed_calendar_applies_from_the_next_dispatch(engine: Engine) -> None:
    job = daily(engine, "skip")
    live_until(engine, berlin("2026-01-11T10:00"))  # Monday's trigger is written
    closed = replace(BAVARIA, dates=frozenset({date(2026, 1, 12)}), version=2)
    engine.store.put_calendar("alice", closed, expected_version=1)
    live_until(engine, berlin("2026-01-13T10:00"))
    monday, tuesday = history(engine, job["job_id"])[2:]
    assert (monday.status, monday.reason, monday.error) == (
        RunStatus.SKIPPED,
        Reason.CALENDAR,
        "calendar 'bavaria' excludes 2026-01-12: excluded date",
    )
    assert tuesday.status is RunStatus.SUCCEEDED


def test_a_calendar_that_is_gone_drops_the_occurrence_rather_than_guess(engine: Engine) -> None:
    job = daily(engine, "skip")
    engine.store.delete_calendar("alice", "bavaria")
    live_until(engine, berlin("2026-01-12T10:00"))
    monday = history(engine, job["job_id"])[-1]
    assert (monday.scheduled_for, monday.status, monday.reason) == (
        berlin("2026-01-12T09:00"),
        RunStatus.SKIPPED,
        Reason.CALENDAR,
    )
    assert monday.error == "calendar 'bavaria' does not exist"
    assert engine.targets.deliveries == []


def test_the_api_refuses_a_calendar_it_cannot_use_naming_the_field(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as unknown:
        engine.create(schedule={"cron": "0 9 * * *", "calendar": "nope"})
    assert unknown.value.field == "schedule.calendar" and "no calendar named 'nope'" in str(unknown.value)
    with pytest.raises(InvalidInput) as one_off:
        engine.create(schedule={"at": "2026-12-25T10:00:00", "calendar": "bavaria"})
    assert one_off.value.field == "schedule.calendar"


def test_the_job_view_shows_its_calendar_and_its_next_runs_under_it(engine: Engine) -> None:
    job = daily(engine, "next_business_day")
    assert job["schedule"]["calendar"] == "bavaria"
    assert job["schedule"]["on_excluded"] == "next_business_day"
    assert job["upcoming"][:2] == ["2026-01-12T08:00:00.000Z", "2026-01-13T08:00:00.000Z"]


def test_the_preview_lists_the_excluded_days_and_where_they_go(engine: Engine) -> None:
    request = PreviewIn.model_validate(
        {
            "schedule": {
                "cron": "0 9 * * *",
                "timezone": "Europe/Berlin",
                "calendar": "bavaria",
                "on_excluded": "next_business_day",
            },
            "after": "2026-04-01T10:00:00+02:00",
            "until": "2026-04-08T00:00:00+02:00",
        }
    )
    view = preview_schedule(engine.service, "alice", request)
    assert [time["at"] for time in view["fire_times"]] == [
        "2026-04-02T07:00:00.000Z",
        "2026-04-07T07:00:00.000Z",
    ]
    assert view["fire_times"][1]["moved_from"][0] == "2026-04-03T07:00:00.000Z"
    assert view["calendar"] is not None
    assert [(d["day"], d["fate"]) for d in view["calendar"]["excluded"]] == [
        ("2026-04-03", "moved"),
        ("2026-04-04", "moved"),
        ("2026-04-05", "moved"),
        ("2026-04-06", "moved"),
    ]
    assert view["calendar"]["excluded"][0]["reason"] == "holiday in DE-BY: Good Friday"


def test_a_buffered_backfill_runs_the_calendars_runs_of_the_span_one_after_another(engine: Engine) -> None:
    engine.clock.now = berlin("2026-03-30T10:00")
    job = daily(engine, "next_business_day")
    engine.clock.now = berlin("2026-04-10T10:00")
    span = {"from": "2026-04-01T00:00:00", "to": "2026-04-07T23:00:00"}
    answer = backfill_job(engine.service, "alice", job["job_id"], BackfillIn.model_validate(span))
    expected = ["2026-04-01T07:00:00.000Z", "2026-04-02T07:00:00.000Z", "2026-04-07T07:00:00.000Z"]
    assert answer["occurrences"] == expected
    for _ in range(3):
        engine.deliver_all()  # the worker dispatches the next when one ends, under the calendar too
    delivered = sorted(iso(delivery.scheduled_for) for _spec, delivery, _t in engine.targets.deliveries)
    assert delivered == expected


def test_a_day_excluded_after_its_trigger_was_written_leaves_a_row_not_silence(engine: Engine) -> None:
    job = daily(engine, "skip", cron="0 9,15 * * *")
    live_until(engine, berlin("2026-01-12T10:00"))  # Monday 09:00 ran; 15:00's trigger is written
    closed = replace(BAVARIA, dates=frozenset({date(2026, 1, 12)}), version=2)
    engine.store.put_calendar("alice", closed, expected_version=1)
    live_until(engine, berlin("2026-01-13T10:00"))
    rows = [(run.scheduled_for, run.status, run.reason) for run in history(engine, job["job_id"])][-3:]
    assert rows == [
        (berlin("2026-01-12T09:00"), RunStatus.SUCCEEDED, None),
        (berlin("2026-01-12T15:00"), RunStatus.SKIPPED, Reason.CALENDAR),
        (berlin("2026-01-13T09:00"), RunStatus.SUCCEEDED, None),
    ]
    assert history(engine, job["job_id"])[-2].covers == 1  # 09:00 ran: the row stands for 15:00 alone


def test_a_page_of_jobs_reads_their_calendars_once(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(3):
        daily(engine, "next_business_day")
    reads: list[str] = []
    store = engine.store
    batch = store.get_calendars

    def one(owner: str, name: str) -> Calendar | None:
        reads.append("one")
        return None

    def many(owner: str, names: Any) -> dict[str, Calendar]:
        reads.append("batch")
        return batch(owner, names)

    monkeypatch.setattr(store, "get_calendar", one)
    monkeypatch.setattr(store, "get_calendars", many)
    page = engine.service.list_jobs("alice", limit=10, cursor=None, status=None, name=None)
    assert reads == ["batch"]
    assert {job["upcoming"][0] for job in page["items"]} == {"2026-01-12T08:00:00.000Z"}  # Monday

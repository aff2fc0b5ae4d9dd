"""A schedule under a business calendar (punctual_functions/core/timing.py): its runs, moved and dropped
occurrences, checked on fixed dates and against a brute force that places every occurrence."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual_functions.core.calendars import Calendar, HolidaySource, OnExcluded, place
from punctual_functions.core.schedule import parse_schedule
from punctual_functions.core.timing import CalendarTiming, Occurrence

BAVARIA = Calendar("bavaria", timezone="Europe/Berlin", holidays=(HolidaySource("DE", "BY"),))
CREATED = datetime(2025, 12, 1, tzinfo=UTC)


def berlin(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo("Europe/Berlin")).astimezone(UTC)


def timing(
    cron: str, on_excluded: OnExcluded, calendar: Calendar = BAVARIA, zone: str = "Europe/Berlin"
) -> CalendarTiming:
    return CalendarTiming(parse_schedule(cron=cron, timezone=zone, now=CREATED), calendar, on_excluded)


def brute_force(subject: CalendarTiming, start: datetime, end: datetime) -> list[Occurrence]:
    """Every occurrence from a week before ``start`` placed one by one, merged by instant."""
    runs: dict[datetime, set[datetime]] = {}
    markers: dict[date, Occurrence] = {}
    zone = ZoneInfo(subject.calendar.timezone)
    for raw in subject.schedule.occurrences_between(
        start - timedelta(days=7), end + timedelta(days=7), 100_000
    ):
        placement = place(subject.calendar, raw, subject.on_excluded, subject.schedule.timezone)
        if placement.at is None:
            day = raw.astimezone(zone).date()
            markers.setdefault(day, Occurrence(raw, False, day=day, reason=placement.excluded))
        else:
            runs.setdefault(placement.at, set())
            if placement.moved:
                runs[placement.at].add(raw)
    found = [Occurrence(at, True, tuple(sorted(origins))) for at, origins in runs.items()]
    found += list(markers.values())
    return sorted((event for event in found if start < event.at <= end), key=lambda event: event.at)


@pytest.mark.parametrize("on_excluded", list(OnExcluded))
@pytest.mark.parametrize(
    "cron", ["0 9 * * *", "0 9,23 * * *", "30 6 * * 1", "0 */6 * * *", "0 2 1 * *", "15 0 * * 6,0"]
)
def test_the_runs_are_the_occurrences_placed_one_by_one(cron: str, on_excluded: OnExcluded) -> None:
    subject = timing(cron, on_excluded)
    start, end = berlin("2026-03-20T00:00"), berlin("2026-06-10T00:00")  # Easter, Ascension, Whit Monday
    expected = brute_force(subject, start, end)
    events = subject.events(start, len(expected) + 1)
    assert [(e.at, e.runs, e.moved_from) for e in events if e.at <= end] == [
        (e.at, e.runs, e.moved_from) for e in expected
    ]
    assert [e for e in events if e.at > end][:1] or subject.next_event(end) is None


def test_a_weekend_and_holiday_move_onto_the_next_business_day_and_run_once() -> None:
    subject = timing("0 9 * * *", OnExcluded.NEXT_BUSINESS_DAY)
    # Friday 2026-04-03 is Good Friday, Monday 04-06 Easter Monday: Friday to Monday run on Tuesday.
    tuesday = berlin("2026-04-07T09:00")
    assert subject.next_after(berlin("2026-04-02T09:00")) == tuesday
    event = subject.at(tuesday)
    assert event is not None and event.runs
    assert event.moved_from == tuple(berlin(f"2026-04-0{day}T09:00") for day in (3, 4, 5, 6))
    assert subject.at(berlin("2026-04-04T09:00")) is None  # no trigger stands at a moved-away time


def test_previous_business_day_runs_before_the_day_it_stands_for() -> None:
    subject = timing("0 9 * * *", OnExcluded.PREVIOUS_BUSINESS_DAY)
    thursday = berlin("2026-04-02T09:00")
    assert subject.next_after(berlin("2026-04-01T09:00")) == thursday
    assert subject.next_after(thursday) == berlin("2026-04-07T09:00")
    event = subject.at(thursday)
    assert event is not None
    assert event.moved_from == tuple(berlin(f"2026-04-0{day}T09:00") for day in (3, 4, 5, 6))


def test_a_moved_evening_runs_after_the_mornings_of_the_day_it_moved_to() -> None:
    subject = timing("0 9,23 * * *", OnExcluded.NEXT_BUSINESS_DAY)
    friday_night = berlin("2026-01-09T23:00")
    assert subject.upcoming(friday_night, 3) == [
        berlin("2026-01-12T09:00"),  # Saturday's and Sunday's 09:00 moved here, and Monday's own
        berlin("2026-01-12T23:00"),
        berlin("2026-01-13T09:00"),
    ]
    monday = subject.at(berlin("2026-01-12T09:00"))
    assert monday is not None and monday.moved_from == (
        berlin("2026-01-10T09:00"),
        berlin("2026-01-11T09:00"),
    )


def test_a_skipped_day_is_one_marker_at_its_first_occurrence() -> None:
    subject = timing("0 */6 * * *", OnExcluded.SKIP)
    events = subject.events(berlin("2026-01-09T18:00"), 3)
    assert events[0] == Occurrence(
        berlin("2026-01-10T00:00"), False, day=date(2026, 1, 10), reason="not a working day (Saturday)"
    )
    assert events[1].at == berlin("2026-01-11T00:00") and not events[1].runs
    assert events[2] == Occurrence(berlin("2026-01-12T00:00"), True)
    assert subject.next_after(berlin("2026-01-09T18:00")) == berlin("2026-01-12T00:00")
    assert subject.at(berlin("2026-01-10T06:00")) is None  # the day's later occurrences need no trigger


def test_first_fire_time_of_a_one_off_on_a_holiday_moves_back() -> None:
    at = parse_schedule(at="2026-12-25T10:00:00", timezone="Europe/Berlin", now=CREATED)
    subject = CalendarTiming(at, BAVARIA, OnExcluded.PREVIOUS_BUSINESS_DAY)
    assert subject.first_fire_time() == berlin("2026-12-24T10:00")
    assert CalendarTiming(at, BAVARIA, OnExcluded.SKIP).first_fire_time() is None
    assert CalendarTiming(at, BAVARIA, OnExcluded.NEXT_BUSINESS_DAY).first_fire_time() == berlin(
        "2026-12-28T10:00"
    )


NYSE_DAYS = Calendar(
    "us", timezone="America/New_York", holidays=(HolidaySource("US"),), weekdays=frozenset({1, 2, 3, 4, 5})
)


@pytest.mark.parametrize("on_excluded", list(OnExcluded))
@pytest.mark.parametrize("cron", ["30 2 * * *", "0 23 * * 1-5", "0 */5 * * *"])
def test_a_calendar_in_another_zone_across_dst_matches_the_brute_force(
    cron: str, on_excluded: OnExcluded
) -> None:
    # Berlin's clocks change on 03-29 and 10-25, New York's on 03-08 and 11-01: the calendar judges the
    # day in New York, the moves keep Berlin's wall time (02:30 does not exist in Berlin on 03-29).
    subject = CalendarTiming(
        parse_schedule(cron=cron, timezone="Europe/Berlin", now=CREATED), NYSE_DAYS, on_excluded
    )
    for start, end in (
        (berlin("2026-03-01T00:00"), berlin("2026-04-10T00:00")),
        (berlin("2026-10-20T00:00"), berlin("2026-11-30T00:00")),
    ):
        expected = brute_force(subject, start, end)
        events = subject.events(start, len(expected) + 1)
        assert [(e.at, e.runs, e.moved_from) for e in events if e.at <= end] == [
            (e.at, e.runs, e.moved_from) for e in expected
        ]


def test_a_dropped_days_row_covers_its_fire_times_from_the_dropped_one_on() -> None:
    subject = timing("0 */6 * * *", OnExcluded.SKIP)
    marker = subject.at(berlin("2026-01-10T00:00"))
    assert marker is not None and not marker.runs
    assert subject.covered(marker) == [berlin(f"2026-01-10T{hour:02d}:00") for hour in (0, 6, 12, 18)]
    later = subject.newly_excluded(berlin("2026-01-10T12:00"))
    assert later is not None and subject.covered(later) == [
        berlin("2026-01-10T12:00"),
        berlin("2026-01-10T18:00"),
    ]
    assert subject.newly_excluded(berlin("2026-01-12T12:00")) is None  # a business day
    assert subject.newly_excluded(berlin("2026-01-10T13:00")) is None  # no fire time

"""Business calendars (punctual_functions/core/calendars.py): which days are excluded, and where an occurrence
on one goes. On fixed dates of 2026, checked against a calendar on paper."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from punctual_functions.core.calendars import (
    Calendar,
    CalendarError,
    HolidaySource,
    OnExcluded,
    check_holiday_source,
    place,
)

BAVARIA = Calendar("bavaria", timezone="Europe/Berlin", holidays=(HolidaySource("DE", "BY"),))


def berlin(text: str) -> datetime:
    from zoneinfo import ZoneInfo

    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo("Europe/Berlin")).astimezone(UTC)


def test_weekends_and_the_holidays_of_a_subdivision_are_excluded_and_say_why() -> None:
    assert BAVARIA.excludes(date(2026, 1, 5)) is None  # a Monday
    assert BAVARIA.excludes(date(2026, 1, 6)) == "holiday in DE-BY: Epiphany"  # not a holiday in Berlin
    assert Calendar("berlin", holidays=(HolidaySource("DE", "BE"),)).excludes(date(2026, 1, 6)) is None
    assert BAVARIA.excludes(date(2026, 1, 10)) == "not a working day (Saturday)"


def test_explicit_and_yearly_dates_and_an_exchanges_closed_days_are_excluded() -> None:
    calendar = Calendar(
        "office",
        dates=frozenset({date(2026, 3, 2)}),
        yearly=frozenset({(12, 24)}),
        exchanges=("XNYS",),
        exchange_closed=frozenset({date(2026, 11, 26)}),
        expanded_until=date(2027, 12, 31),
    )
    assert calendar.excludes(date(2026, 3, 2)) == "excluded date"
    assert calendar.excludes(date(2027, 3, 2)) is None
    assert calendar.excludes(date(2027, 12, 24)) == "excluded every year"
    assert calendar.excludes(date(2026, 11, 26)) == "XNYS closed"
    assert calendar.excludes(date(2026, 11, 25)) is None


def test_an_exchanges_day_beyond_what_was_expanded_is_refused_not_guessed_open() -> None:
    calendar = Calendar("nyse", exchanges=("XNYS",), expanded_until=date(2027, 12, 31))
    assert calendar.excludes(date(2027, 12, 31)) is None
    with pytest.raises(CalendarError, match=r"XNYS are not known for 2028-01-03 \(known up to 2027-12-31\)"):
        calendar.excludes(date(2028, 1, 3))
    with pytest.raises(CalendarError, match="never expanded"):
        Calendar("empty", exchanges=("XNYS",)).excludes(date(2026, 11, 25))


def test_an_occurrence_on_an_excluded_day_is_skipped_or_moved_keeping_its_wall_time() -> None:
    christmas = berlin("2026-12-25T09:00")  # Friday; the 26th is a holiday too, then a weekend
    assert place(BAVARIA, christmas, OnExcluded.SKIP, "Europe/Berlin").at is None
    moved = place(BAVARIA, christmas, OnExcluded.NEXT_BUSINESS_DAY, "Europe/Berlin")
    assert moved.at == berlin("2026-12-28T09:00") and moved.moved
    assert moved.excluded == "holiday in DE-BY: Christmas Day"
    earlier = place(BAVARIA, christmas, OnExcluded.PREVIOUS_BUSINESS_DAY, "Europe/Berlin")
    assert earlier.at == berlin("2026-12-24T09:00")
    business = berlin("2026-12-23T09:00")
    assert place(BAVARIA, business, OnExcluded.NEXT_BUSINESS_DAY, "Europe/Berlin").at == business


def test_a_move_across_a_dst_change_keeps_the_wall_time_and_a_missing_one_runs_after_the_gap() -> None:
    # Clocks go forward in Berlin on Sunday 2026-03-29 at 02:00. Friday 09:00 moved to Monday: 09:00 CEST.
    friday = Calendar("fri", timezone="Europe/Berlin", dates=frozenset({date(2026, 3, 27)}))
    moved = place(friday, berlin("2026-03-27T09:00"), OnExcluded.NEXT_BUSINESS_DAY, "Europe/Berlin")
    assert moved.at == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)
    # Every day a working day but Monday the 30th: 02:30 moved back to Sunday, a time that does not
    # exist that day, runs at 03:00 CEST, the first instant after the gap.
    every_day = Calendar(
        "daily",
        timezone="Europe/Berlin",
        weekdays=frozenset(range(1, 8)),
        dates=frozenset({date(2026, 3, 30)}),
    )
    back = place(every_day, berlin("2026-03-30T02:30"), OnExcluded.PREVIOUS_BUSINESS_DAY, "Europe/Berlin")
    assert back.at == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_the_day_is_judged_in_the_calendars_zone() -> None:
    # 23:30 UTC on Monday 2026-01-05 is already Tuesday the 6th (Epiphany) in Bavaria.
    late = datetime(2026, 1, 5, 23, 30, tzinfo=UTC)
    assert place(BAVARIA, late, OnExcluded.SKIP, "UTC").at is None
    assert (
        place(Calendar("utc", holidays=(HolidaySource("DE", "BY"),)), late, OnExcluded.SKIP, "UTC").at == late
    )


def test_a_calendar_without_a_business_day_in_a_year_is_refused_when_moving() -> None:
    never = Calendar("never", weekdays=frozenset())
    with pytest.raises(CalendarError, match="no business day within a year"):
        place(never, datetime(2026, 1, 5, tzinfo=UTC), OnExcluded.NEXT_BUSINESS_DAY, "UTC")


def test_holiday_sources_are_checked_against_what_the_holidays_package_knows() -> None:
    assert check_holiday_source("de", "by", "holidays[0]") == HolidaySource("DE", "BY")
    assert check_holiday_source("GB", "SCT", "holidays[0]").label == "GB-SCT"
    with pytest.raises(CalendarError, match="unknown country code 'XX'") as unknown:
        check_holiday_source("XX", None, "holidays[1]")
    assert unknown.value.field == "holidays[1]"
    with pytest.raises(CalendarError, match="DE has no subdivision 'ZZ'"):
        check_holiday_source("DE", "ZZ", "holidays[0]")

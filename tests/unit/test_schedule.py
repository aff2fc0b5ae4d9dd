"""Examples of every schedule form, the EventBridge documentation table, DST and every refusal."""

from __future__ import annotations

import copy
import pickle
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from punctual_functions.core.schedule import Schedule, ScheduleError, parse_schedule

# A Thursday, so weekday-sensitive examples below have a known shape.
NOW = datetime(2026, 1, 1, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(year: int, month: int, day: int, *clock: int) -> datetime:
    hour, minute, second = (*clock, 0, 0, 0)[:3]
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def fires(schedule: Schedule, after: datetime, count: int = 5) -> list[datetime]:
    return schedule.upcoming(after, count)


def cron(expression: str, **kwargs: object) -> Schedule:
    return parse_schedule(cron=expression, now=NOW, **kwargs)  # type: ignore[arg-type]


def refused(**kwargs: object) -> ScheduleError:
    kwargs.setdefault("now", NOW)
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(**kwargs)  # type: ignore[arg-type]
    return caught.value


# --------------------------------------------------------------------------------------------------
# EventBridge documentation examples (times in UTC, timezone defaults to UTC)
# --------------------------------------------------------------------------------------------------


def test_eventbridge_daily_ten_am_fires_every_day_at_ten_utc() -> None:
    assert fires(cron("cron(0 10 * * ? *)"), NOW, 2) == [utc(2026, 1, 1, 10), utc(2026, 1, 2, 10)]


def test_eventbridge_quarter_past_noon_fires_at_twelve_fifteen_utc() -> None:
    assert fires(cron("cron(15 12 * * ? *)"), NOW, 2) == [utc(2026, 1, 1, 12, 15), utc(2026, 1, 2, 12, 15)]


def test_eventbridge_weekday_evenings_skip_the_weekend() -> None:
    got = fires(cron("cron(0 18 ? * MON-FRI *)"), NOW, 3)
    assert got == [utc(2026, 1, 1, 18), utc(2026, 1, 2, 18), utc(2026, 1, 5, 18)], (
        "Sat 3rd and Sun 4th must not fire"
    )


def test_eventbridge_first_of_month_fires_at_eight_utc() -> None:
    assert fires(cron("cron(0 8 1 * ? *)"), NOW, 3) == [
        utc(2026, 1, 1, 8),
        utc(2026, 2, 1, 8),
        utc(2026, 3, 1, 8),
    ]


def test_eventbridge_every_fifteen_minutes_starts_at_minute_zero() -> None:
    got = fires(cron("cron(0/15 * * * ? *)"), NOW, 4)
    assert got == [utc(2026, 1, 1, 0, 15), utc(2026, 1, 1, 0, 30), utc(2026, 1, 1, 0, 45), utc(2026, 1, 1, 1)]


def test_eventbridge_every_ten_minutes_on_weekdays_resumes_on_monday() -> None:
    schedule = cron("cron(0/10 * ? * MON-FRI *)")
    assert schedule.next_after(utc(2026, 1, 2, 23, 50)) == utc(2026, 1, 5, 0, 0), (
        "Friday night -> Monday 00:00"
    )


def test_eventbridge_every_five_minutes_in_office_hours_ends_the_day_at_17_55() -> None:
    schedule = cron("cron(0/5 8-17 ? * MON-FRI *)")
    assert schedule.next_after(utc(2026, 1, 1, 17, 50)) == utc(2026, 1, 1, 17, 55)
    assert schedule.next_after(utc(2026, 1, 1, 17, 55)) == utc(2026, 1, 2, 8, 0), (
        "17:55 is the last run of a day"
    )


def test_eventbridge_first_monday_fires_at_nine_utc() -> None:
    got = fires(cron("cron(0 9 ? * 2#1 *)"), NOW, 4)
    assert got == [utc(2026, 1, 5, 9), utc(2026, 2, 2, 9), utc(2026, 3, 2, 9), utc(2026, 4, 6, 9)]


def test_eventbridge_day_of_week_one_is_sunday() -> None:
    assert cron("cron(0 0 ? * 1 *)").next_after(NOW) == utc(2026, 1, 4), "EventBridge numbers SUN=1"
    assert cron("cron(0 0 ? * SUN *)").next_after(NOW) == utc(2026, 1, 4)


def test_eventbridge_second_tuesday_uses_eventbridge_numbering() -> None:
    assert cron("cron(0 0 ? * 3#2 *)").next_after(NOW) == utc(2026, 1, 13)


def test_eventbridge_six_l_is_the_last_friday_of_the_month() -> None:
    assert fires(cron("cron(0 0 ? * 6L *)"), NOW, 3) == [utc(2026, 1, 30), utc(2026, 2, 27), utc(2026, 3, 27)]


def test_eventbridge_day_of_week_l_alone_is_saturday() -> None:
    assert fires(cron("cron(0 0 ? * L *)"), NOW, 2) == [utc(2026, 1, 3), utc(2026, 1, 10)]


def test_eventbridge_l_in_day_of_month_is_the_last_day() -> None:
    assert fires(cron("cron(0 0 L * ? *)"), NOW, 3) == [utc(2026, 1, 31), utc(2026, 2, 28), utc(2026, 3, 31)]


def test_eventbridge_lw_is_the_last_weekday_of_the_month() -> None:
    # Jan 31 2026 is a Saturday, Feb 28 a Saturday, May 31 a Sunday.
    got = fires(cron("cron(0 0 LW * ? *)"), NOW, 5)
    assert got == [utc(2026, 1, 30), utc(2026, 2, 27), utc(2026, 3, 31), utc(2026, 4, 30), utc(2026, 5, 29)]


def test_eventbridge_w_picks_the_weekday_nearest_the_day_within_the_month() -> None:
    # Jan 3 2026 is a Saturday (-> Fri 2nd); May 3 a Sunday (-> Mon 4th); Aug 1 a Saturday (-> Mon 3rd).
    schedule = cron("cron(0 0 3W * ? *)")
    assert fires(schedule, NOW, 2) == [utc(2026, 1, 2), utc(2026, 2, 3)]
    assert schedule.next_after(utc(2026, 4, 30)) == utc(2026, 5, 4)
    assert cron("cron(0 0 1W * ? *)").next_after(utc(2026, 7, 15)) == utc(2026, 8, 3), (
        "W never leaves the month"
    )


def test_eventbridge_year_range_with_fixed_date_fires_once_a_year_then_stops() -> None:
    schedule = cron("cron(0 12 1 1 ? 2027-2028)")
    assert fires(schedule, NOW, 5) == [utc(2027, 1, 1, 12), utc(2028, 1, 1, 12)], "nothing after 2028"


def test_eventbridge_year_list_skips_the_years_not_listed() -> None:
    schedule = cron("cron(0 0 29 2 ? 2027,2028,2031-2033)")
    assert fires(schedule, NOW, 5) == [utc(2028, 2, 29), utc(2032, 2, 29)], "only leap years have Feb 29"


def test_eventbridge_names_and_lower_case_are_accepted() -> None:
    assert cron("cron(0 0 ? jan mon#1 *)").next_after(NOW) == utc(2026, 1, 5)


def test_eventbridge_expression_is_kept_as_written() -> None:
    assert cron("  cron(0 10 * * ? *) ").expression == "cron(0 10 * * ? *)"


# --------------------------------------------------------------------------------------------------
# Unix cron
# --------------------------------------------------------------------------------------------------


def test_unix_weekday_cron_skips_the_weekend() -> None:
    got = fires(cron("0 13 * * 1-5"), NOW, 3)
    assert got == [utc(2026, 1, 1, 13), utc(2026, 1, 2, 13), utc(2026, 1, 5, 13)]


def test_unix_sunday_is_both_zero_and_seven() -> None:
    assert cron("0 0 * * 0").next_after(NOW) == utc(2026, 1, 4)
    assert cron("0 0 * * 7").next_after(NOW) == utc(2026, 1, 4)
    assert cron("0 0 * * SUN").next_after(NOW) == utc(2026, 1, 4)


def test_unix_month_and_day_names_are_accepted() -> None:
    assert cron("0 0 * FEB-MAR MON,WED").next_after(NOW) == utc(2026, 2, 2)


def test_unix_steps_ranges_and_lists_combine() -> None:
    got = fires(cron("5,10-20/5,*/30 0 * * *"), NOW, 5)
    assert got == [utc(2026, 1, 1, 0, minute) for minute in (5, 10, 15, 20, 30)]


def test_unix_restricted_day_of_month_and_day_of_week_match_either() -> None:
    # "the 13th, and every Friday"
    got = fires(cron("0 0 13 * 5"), NOW, 4)
    assert got == [utc(2026, 1, 2), utc(2026, 1, 9), utc(2026, 1, 13), utc(2026, 1, 16)]


def test_unix_star_day_of_month_leaves_day_of_week_alone() -> None:
    assert fires(cron("0 0 * * 5"), NOW, 2) == [utc(2026, 1, 2), utc(2026, 1, 9)]


def test_unix_l_means_the_last_friday_or_the_last_day_of_the_month() -> None:
    assert cron("0 0 * * 5L").next_after(NOW) == utc(2026, 1, 30)
    assert cron("0 0 L * *").next_after(NOW) == utc(2026, 1, 31)


def test_six_field_cron_has_a_leading_seconds_field() -> None:
    got = fires(cron("*/10 * * * * *"), NOW, 3)
    assert got == [utc(2026, 1, 1, 0, 0, 10), utc(2026, 1, 1, 0, 0, 20), utc(2026, 1, 1, 0, 0, 30)]
    assert cron("30 0 12 * * *").next_after(NOW) == utc(2026, 1, 1, 12, 0, 30)


def test_cron_in_a_time_zone_matches_local_wall_time() -> None:
    schedule = cron("0 13 * * 1-5", timezone="Europe/Berlin")
    assert schedule.next_after(NOW) == utc(2026, 1, 1, 12), "13:00 CET is 12:00 UTC in winter"
    assert schedule.next_after(utc(2026, 7, 1)) == utc(2026, 7, 1, 11), "13:00 CEST is 11:00 UTC in summer"


def test_next_after_is_strict_and_ignores_sub_second_noise() -> None:
    schedule = cron("0 * * * *")
    assert schedule.next_after(utc(2026, 1, 1, 1)) == utc(2026, 1, 1, 2)
    assert schedule.next_after(utc(2026, 1, 1, 0, 59, 59) + timedelta(microseconds=999_999)) == utc(
        2026, 1, 1, 1
    )


def test_next_after_accepts_non_utc_aware_datetimes_and_returns_utc() -> None:
    got = cron("0 * * * *").next_after(datetime(2026, 1, 1, 1, 30, tzinfo=BERLIN))
    assert got == utc(2026, 1, 1, 1)
    assert got is not None and got.tzinfo is UTC


def test_naive_after_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        cron("0 * * * *").next_after(datetime(2026, 1, 1))


# --------------------------------------------------------------------------------------------------
# DST
# --------------------------------------------------------------------------------------------------


def test_berlin_spring_forward_skipped_time_fires_once_at_the_transition() -> None:
    # 2027-03-28: clocks jump from 02:00 CET to 03:00 CEST (01:00Z); 02:30 does not exist.
    got = fires(cron("30 2 * * *", timezone="Europe/Berlin"), utc(2027, 3, 27), 3)
    assert got == [utc(2027, 3, 27, 1, 30), utc(2027, 3, 28, 1, 0), utc(2027, 3, 29, 0, 30)]


def test_berlin_spring_forward_several_skipped_slots_collapse_into_one_firing() -> None:
    got = fires(cron("*/15 2 * * *", timezone="Europe/Berlin"), utc(2027, 3, 27, 23), 2)
    assert got == [utc(2027, 3, 28, 1, 0), utc(2027, 3, 29, 0, 0)], "02:00-02:45 fire once, at 03:00 CEST"


def test_berlin_spring_forward_slot_at_the_transition_is_still_one_firing() -> None:
    got = fires(cron("0,30 2,3 * * *", timezone="Europe/Berlin"), utc(2027, 3, 27, 23), 3)
    assert got == [utc(2027, 3, 28, 1, 0), utc(2027, 3, 28, 1, 30), utc(2027, 3, 29, 0, 0)]


def test_berlin_fall_back_repeated_time_fires_once_at_its_first_occurrence() -> None:
    # 2026-10-25: 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET).
    got = fires(cron("30 2 * * *", timezone="Europe/Berlin"), utc(2026, 10, 24), 3)
    assert got == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_new_york_spring_forward_skipped_time_fires_at_three_am_edt() -> None:
    # 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
    assert cron("30 2 * * *", timezone="America/New_York").next_after(utc(2026, 3, 8)) == utc(2026, 3, 8, 7)


def test_new_york_fall_back_daily_cron_fires_once_on_the_fall_back_day() -> None:
    # 2026-11-01: 01:30 happens at 05:30Z (EDT) and again at 06:30Z (EST).
    schedule = cron("30 1 * * *", timezone="America/New_York")
    day = schedule.occurrences_between(utc(2026, 11, 1), utc(2026, 11, 2), 10)
    assert day == [utc(2026, 11, 1, 5, 30)], "01:30 must fire once, at its first occurrence"


def test_new_york_quarter_hourly_cron_across_the_repeated_hour_never_repeats_or_goes_back() -> None:
    schedule = cron("*/15 * * * *", timezone="America/New_York")
    got = schedule.occurrences_between(utc(2026, 11, 1, 4), utc(2026, 11, 1, 9), 100)
    assert all(a < b for a, b in pairwise(got)), "fire times must be strictly increasing"
    walls = [t.astimezone(NEW_YORK).replace(tzinfo=None) for t in got]
    assert len(set(walls)) == len(walls), "no local wall time may fire twice"
    assert utc(2026, 11, 1, 5, 45) in got
    assert got[got.index(utc(2026, 11, 1, 5, 45)) + 1] == utc(2026, 11, 1, 7, 0), (
        "the repeated hour is skipped"
    )


def test_after_inside_the_repeated_hour_continues_after_it() -> None:
    schedule = cron("*/15 * * * *", timezone="America/New_York")
    assert schedule.next_after(utc(2026, 11, 1, 6, 20)) == utc(2026, 11, 1, 7, 0)


def test_per_second_cron_inside_the_repeated_hour_jumps_straight_past_it() -> None:
    schedule = cron("* * * * * *", timezone="America/New_York", min_interval_seconds=1)
    assert schedule.next_after(utc(2026, 11, 1, 6, 20)) == utc(2026, 11, 1, 7, 0, 0)


def test_at_in_a_skipped_local_time_fires_at_the_transition() -> None:
    schedule = parse_schedule(at="at(2027-03-28T02:30:00)", timezone="Europe/Berlin", now=NOW)
    assert schedule.first_fire_time() == utc(2027, 3, 28, 1, 0)


def test_at_in_a_repeated_local_time_takes_the_first_occurrence() -> None:
    schedule = parse_schedule(at="2026-11-01T01:30:00", timezone="America/New_York", now=NOW)
    assert schedule.first_fire_time() == utc(2026, 11, 1, 5, 30)


# --------------------------------------------------------------------------------------------------
# at and rate
# --------------------------------------------------------------------------------------------------


def test_at_with_offset_is_normalized_to_utc() -> None:
    schedule = parse_schedule(at="2026-11-22T13:00:05+01:00", now=NOW)
    assert schedule.kind == "at" and not schedule.is_recurring
    assert schedule.expression == "2026-11-22T12:00:05Z"
    assert schedule.first_fire_time() == utc(2026, 11, 22, 12, 0, 5)
    assert schedule.next_after(NOW) == utc(2026, 11, 22, 12, 0, 5)
    assert schedule.next_after(utc(2026, 11, 22, 12, 0, 5)) is None, "a one-off fires once"


def test_at_wrapped_naive_time_is_read_in_the_time_zone() -> None:
    schedule = parse_schedule(at="at(2026-11-22T13:00:05)", timezone="Europe/Berlin", now=NOW)
    assert schedule.first_fire_time() == utc(2026, 11, 22, 12, 0, 5)


def test_at_keeps_milliseconds() -> None:
    schedule = parse_schedule(at="2026-11-22T12:00:05.250Z", now=NOW)
    assert schedule.expression == "2026-11-22T12:00:05.250Z"
    assert schedule.first_fire_time() == utc(2026, 11, 22, 12, 0, 5) + timedelta(milliseconds=250)


def test_at_in_the_past_is_accepted_and_fires_at_once() -> None:
    schedule = parse_schedule(at="2025-06-01T00:00:00Z", now=NOW)
    assert schedule.first_fire_time() == utc(2025, 6, 1)
    assert schedule.next_after(NOW) is None


@pytest.mark.parametrize(
    ("text", "normalized", "seconds"),
    [
        ("5 minutes", "5 minutes", 300),
        ("30 seconds", "30 seconds", 30),
        ("1 hour", "1 hour", 3600),
        ("rate(1 hour)", "1 hour", 3600),
        ("rate(2 days)", "2 days", 172800),
        ("1 minutes", "1 minute", 60),
        ("10 second", "10 seconds", 10),
        ("  3 Hours ", "3 hours", 10800),
    ],
)
def test_rate_forms_are_accepted_and_normalized(text: str, normalized: str, seconds: int) -> None:
    schedule = parse_schedule(rate=text, now=NOW)
    assert schedule.expression == normalized
    first = schedule.first_fire_time()
    assert first == NOW + timedelta(seconds=seconds), (
        "without start_at the first run is one interval after creation"
    )
    assert schedule.next_after(first) == first + timedelta(seconds=seconds)


def test_rate_without_start_fires_one_interval_after_creation_on_whole_seconds() -> None:
    created = utc(2026, 1, 1, 10, 0, 0) + timedelta(milliseconds=700)
    schedule = parse_schedule(rate="5 minutes", now=created)
    assert schedule.anchor == utc(2026, 1, 1, 10)
    assert schedule.upcoming(created, 2) == [utc(2026, 1, 1, 10, 5), utc(2026, 1, 1, 10, 10)]


def test_rate_with_start_fires_first_at_start() -> None:
    schedule = parse_schedule(
        rate="1 hour", start_at="2026-02-01T09:00:00", timezone="Europe/Berlin", now=NOW
    )
    assert schedule.first_fire_time() == utc(2026, 2, 1, 8)
    assert schedule.upcoming(NOW, 2) == [utc(2026, 2, 1, 8), utc(2026, 2, 1, 9)]


def test_rate_start_with_milliseconds_is_rounded_up_so_it_never_fires_before_start() -> None:
    schedule = parse_schedule(rate="1 minute", start_at="2026-02-01T00:00:00.300Z", now=NOW)
    assert schedule.first_fire_time() == utc(2026, 2, 1, 0, 0, 1)


def test_rate_ignores_dst_because_it_is_an_absolute_interval() -> None:
    schedule = parse_schedule(
        rate="1 hour", start_at="2027-03-28T00:00:00Z", timezone="Europe/Berlin", now=NOW
    )
    got = schedule.upcoming(utc(2027, 3, 28), 3)
    assert got == [utc(2027, 3, 28, 1), utc(2027, 3, 28, 2), utc(2027, 3, 28, 3)]


# --------------------------------------------------------------------------------------------------
# start_at and end_at
# --------------------------------------------------------------------------------------------------


def test_cron_first_fire_time_is_at_or_after_start() -> None:
    schedule = cron("0 * * * *", start_at="2026-03-01T10:00:00Z")
    assert schedule.first_fire_time() == utc(2026, 3, 1, 10), "a slot exactly at start_at fires"
    assert schedule.next_after(NOW) == utc(2026, 3, 1, 10)


def test_cron_without_start_first_fires_after_creation() -> None:
    assert cron("0 * * * *").first_fire_time() == utc(2026, 1, 1, 1), "creation at 00:00 itself does not fire"


def test_end_at_is_inclusive_then_the_schedule_is_exhausted() -> None:
    schedule = cron("0 * * * *", end_at="2026-01-01T03:00:00Z")
    assert fires(schedule, NOW, 10) == [utc(2026, 1, 1, 1), utc(2026, 1, 1, 2), utc(2026, 1, 1, 3)]
    assert schedule.next_after(utc(2026, 1, 1, 3)) is None


def test_naive_bounds_are_read_in_the_time_zone() -> None:
    schedule = cron(
        "0 * * * *", timezone="Europe/Berlin", start_at="2026-03-01T10:00:00", end_at="2026-03-02"
    )
    assert schedule.start_at == utc(2026, 3, 1, 9)
    assert schedule.end_at == utc(2026, 3, 1, 23)


def test_occurrences_between_excludes_start_includes_end_and_honours_limit() -> None:
    schedule = cron("0 * * * *")
    assert schedule.occurrences_between(utc(2026, 1, 1, 1), utc(2026, 1, 1, 3), 10) == [
        utc(2026, 1, 1, 2),
        utc(2026, 1, 1, 3),
    ]
    assert schedule.occurrences_between(NOW, utc(2026, 1, 2), 2) == [utc(2026, 1, 1, 1), utc(2026, 1, 1, 2)]


def test_upcoming_returns_the_next_five_by_default() -> None:
    assert len(cron("0 * * * *").upcoming(NOW)) == 5


# --------------------------------------------------------------------------------------------------
# Minimum interval
# --------------------------------------------------------------------------------------------------


def test_every_five_seconds_is_refused_under_the_default_ten_second_minimum() -> None:
    error = refused(cron="*/5 * * * * *")
    assert error.field == "schedule.cron"
    assert "5 seconds" in error.reason and "10 seconds" in error.reason


def test_every_ten_seconds_is_accepted_under_the_default_minimum() -> None:
    assert cron("*/10 * * * * *").is_recurring


@pytest.mark.parametrize(
    "expression",
    [
        "0,5 * * * * *",  # 5 s within a minute
        "0,55 * * * * *",  # 5 s across a minute boundary
        "0,55 0,59 * * * *",  # 5 s across an hour boundary (xx:59:55 -> xx:00:00)
    ],
)
def test_crons_faster_than_the_minimum_anywhere_in_the_day_are_refused(expression: str) -> None:
    assert refused(cron=expression).field == "schedule.cron"


def test_cron_fast_only_across_midnight_is_refused() -> None:
    error = refused(cron="0,55 0,59 0,23 * * *")
    assert "5 seconds" in error.reason, "23:59:55 -> 00:00:00 next day is 5 seconds"


def test_minimum_interval_is_configurable() -> None:
    assert refused(cron="*/30 * * * * *", min_interval_seconds=60).field == "schedule.cron"
    assert cron("* * * * *", min_interval_seconds=60).is_recurring
    assert cron("* * * * * *", min_interval_seconds=1).is_recurring


def test_rate_below_the_minimum_is_refused() -> None:
    error = refused(rate="9 seconds")
    assert error.field == "schedule.rate" and "minimum interval" in error.reason
    assert parse_schedule(rate="10 seconds", now=NOW).is_recurring


# --------------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------------


def test_no_schedule_form_is_refused() -> None:
    error = refused()
    assert error.field == "schedule" and "exactly one" in error.reason
    assert str(error) == f"schedule: {error.reason}"


def test_two_schedule_forms_are_refused() -> None:
    error = refused(cron="* * * * *", rate="5 minutes")
    assert error.field == "schedule" and "cron and rate" in error.reason


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("60 * * * *", ["minute", "60", "0-59"]),
        ("0 24 * * *", ["hour", "24"]),
        ("0 0 0 * *", ["day-of-month", "0", "1-31"]),
        ("0 0 * 13 *", ["month", "13"]),
        ("0 0 * * 8", ["day-of-week", "8", "0-7"]),
        ("0 0 * FOO *", ["FOO", "month"]),
        ("0 0 * * FUNDAY", ["FUNDAY", "day-of-week"]),
        ("x * * * *", ["'x'", "minute"]),
        ("*/0 * * * *", ["step", "at least 1"]),
        ("*/x * * * *", ["step", "whole number"]),
        ("5-1 * * * *", ["backwards"]),
        ("1,,2 * * * *", ["empty"]),
        ("0 ? * * *", ["'?'", "hour"]),
        ("* * * *", ["5 fields", "got 4"]),
        ("* * * * * * *", ["got 7"]),
        ("0 0 1W,2 * *", ["'W'", "single day"]),
        ("0 0 * * 1#6", ["'#'", "1-5"]),
        ("0 0 * * 1#1,3", ["mixes"]),
        ("0 0 * * L", ["EventBridge"]),
        ("0 0 15W * 1", ["'W'"]),
        ("0 0 30 2 *", ["never occurs", "FEB"]),
        ("0 0 31 4,6,9,11 *", ["never occurs"]),
        ("cron(0 9 * * MON *)", ["exactly one", "'?'"]),
        ("cron(0 9 ? * ? *)", ["exactly one"]),
        ("cron(0 9 * * ?)", ["6 fields", "got 5"]),
        ("cron(0 9 ? * 0 *)", ["day-of-week", "0", "1-7"]),
        ("cron(0 9 ? * 8 *)", ["day-of-week", "8"]),
        ("cron(0 9 * * ? 2200)", ["year", "2200", "1970-2199"]),
        ("cron(0 9 * * ? ?)", ["'?'", "year"]),
        ("cron(0 9 1? * ? *)", ["'?'", "stand alone"]),
        ("0 18 ? * MON-FRI *", ["cron(...)"]),
        ("H * * * *", ["'H'"]),
    ],
)
def test_bad_cron_is_refused_with_a_reason_naming_the_problem(expression: str, words: list[str]) -> None:
    error = refused(cron=expression)
    assert error.field == "schedule.cron"
    for word in words:
        assert word in error.reason, f"reason {error.reason!r} should mention {word!r}"


def test_cron_whose_years_are_all_past_is_refused() -> None:
    error = refused(cron="cron(0 0 1 1 ? 2020-2021)")
    assert error.field == "schedule.cron" and "never fires" in error.reason and "2021" in error.reason


def test_cron_whose_only_dates_are_impossible_in_its_years_is_refused() -> None:
    error = refused(cron="cron(0 0 29 2 ? 2027)")
    assert error.field == "schedule.cron" and "never fires" in error.reason


def test_cron_whose_first_fire_is_after_end_at_is_refused_on_end_at() -> None:
    error = refused(cron="cron(0 0 1 1 ? 2030)", end_at="2029-01-01T00:00:00Z")
    assert error.field == "schedule.end_at" and "no fire time" in error.reason


def test_rate_ending_before_its_first_fire_is_refused_on_end_at() -> None:
    assert refused(rate="1 hour", end_at="2026-01-01T00:30:00Z").field == "schedule.end_at"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0 minutes", ["positive"]),
        ("-5 minutes", ["positive"]),
        ("1.5 hours", ["whole number"]),
        ("5 fortnights", ["unit", "fortnights"]),
        ("minutes", ["not a rate"]),
        ("rate()", ["not a rate"]),
        ("99999 days", ["at most"]),
    ],
)
def test_bad_rate_is_refused(text: str, words: list[str]) -> None:
    error = refused(rate=text)
    assert error.field == "schedule.rate"
    for word in words:
        assert word in error.reason, f"reason {error.reason!r} should mention {word!r}"


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "utc", "Europe/Berlin ", "../etc/passwd", ""])
def test_unknown_time_zone_is_refused(zone: str) -> None:
    error = refused(cron="0 * * * *", timezone=zone)
    assert error.field == "schedule.timezone" and "IANA" in error.reason


def test_impossible_at_date_is_refused() -> None:
    error = refused(at="2026-02-30T10:00:00Z")
    assert error.field == "schedule.at" and "day is out of range" in error.reason


@pytest.mark.parametrize("name", ["start_at", "end_at"])
def test_impossible_bound_dates_are_refused(name: str) -> None:
    error = refused(cron="0 * * * *", **{name: "2026-02-30T10:00:00"})
    assert error.field == f"schedule.{name}" and "not a valid ISO 8601" in error.reason


def test_garbage_at_is_refused() -> None:
    error = refused(at="next tuesday")
    assert error.field == "schedule.at" and "ISO 8601" in error.reason


def test_at_outside_supported_years_is_refused() -> None:
    assert "2300" in refused(at="2300-01-01T00:00:00Z").reason


def test_end_before_start_is_refused() -> None:
    error = refused(cron="0 * * * *", start_at="2026-03-01T00:00:00Z", end_at="2026-02-01T00:00:00Z")
    assert error.field == "schedule.end_at" and "after start_at" in error.reason


def test_end_equal_to_start_is_refused() -> None:
    error = refused(rate="1 hour", start_at="2026-03-01T00:00:00Z", end_at="2026-03-01T00:00:00Z")
    assert error.field == "schedule.end_at"


def test_end_in_the_past_is_refused() -> None:
    error = refused(cron="0 * * * *", end_at="2025-12-31T00:00:00Z")
    assert error.field == "schedule.end_at" and "not in the future" in error.reason


@pytest.mark.parametrize("name", ["start_at", "end_at"])
def test_at_with_bounds_is_refused(name: str) -> None:
    error = refused(at="2026-11-22T13:00:05Z", **{name: "2026-11-22T00:00:00Z"})
    assert error.field == f"schedule.{name}" and "one-off" in error.reason


def test_non_string_inputs_are_refused_not_crashed_on() -> None:
    assert refused(rate=5).field == "schedule.rate"
    assert refused(cron=["0", "*", "*", "*", "*"]).field == "schedule.cron"
    assert refused(at=1700000000).field == "schedule.at"
    assert refused(cron="0 * * * *", start_at=17).field == "schedule.start_at"
    assert refused(cron="0 * * * *", timezone=3).field == "schedule.timezone"


# --------------------------------------------------------------------------------------------------
# Stored form
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schedule",
    [
        parse_schedule(at="2026-11-22T13:00:05.125+01:00", now=NOW),
        parse_schedule(cron="cron(0 9 ? * 2#1 2026-2030)", timezone="America/New_York", now=NOW),
        parse_schedule(
            cron="*/10 * * * * *",
            start_at="2026-02-01T00:00:00",
            end_at="2026-03-01",
            timezone="Asia/Kolkata",
            now=NOW,
        ),
        parse_schedule(rate="rate(5 minutes)", now=NOW + timedelta(milliseconds=300)),
        parse_schedule(rate="1 day", start_at="2026-05-01T06:00:00Z", now=NOW),
    ],
    ids=["at", "eventbridge", "bounded-seconds-cron", "rate", "rate-with-start"],
)
def test_to_dict_round_trips_through_from_dict(schedule: Schedule) -> None:
    stored = schedule.to_dict()
    assert all(isinstance(value, str) for value in stored.values()), "the stored form is JSON strings"
    restored = Schedule.from_dict(stored)
    assert restored == schedule
    assert restored.upcoming(NOW, 5) == schedule.upcoming(NOW, 5)
    assert restored.first_fire_time() == schedule.first_fire_time()


def test_a_schedule_is_stored_as_its_form_zone_bounds_and_anchor() -> None:
    schedule = parse_schedule(
        rate="5 minutes", start_at="2026-02-01T00:00:00Z", timezone="Europe/Berlin", now=NOW
    )
    assert schedule.to_dict() == {
        "rate": "5 minutes",
        "timezone": "Europe/Berlin",
        "start_at": "2026-02-01T00:00:00Z",
        "anchor": "2026-02-01T00:00:00Z",
    }
    assert parse_schedule(at="2026-11-22T12:00:05Z", now=NOW).to_dict() == {
        "at": "2026-11-22T12:00:05Z",
        "timezone": "UTC",
        "anchor": "2026-01-01T00:00:00Z",
    }


def test_from_dict_skips_the_minimum_interval_check_for_trusted_data() -> None:
    stored = {"cron": "* * * * * *", "timezone": "UTC", "anchor": "2026-01-01T00:00:00Z"}
    assert Schedule.from_dict(stored).next_after(NOW) == utc(2026, 1, 1, 0, 0, 1)


def test_from_dict_still_refuses_a_broken_record() -> None:
    with pytest.raises(ScheduleError):
        Schedule.from_dict({"cron": "nonsense", "timezone": "UTC", "anchor": "2026-01-01T00:00:00Z"})
    with pytest.raises(ScheduleError):
        Schedule.from_dict({"timezone": "UTC", "anchor": "2026-01-01T00:00:00Z"})
    with pytest.raises(ScheduleError):
        Schedule.from_dict({"rate": "5 minutes"})


def test_schedules_survive_deepcopy_and_pickle() -> None:
    schedule = cron("0 13 * * 1-5", timezone="Europe/Berlin")
    for copied in (copy.deepcopy(schedule), pickle.loads(pickle.dumps(schedule))):
        assert copied == schedule
        assert copied.next_after(NOW) == schedule.next_after(NOW)


def test_schedules_are_immutable_values() -> None:
    schedule = cron("0 * * * *")
    with pytest.raises(AttributeError):
        schedule.expression = "1 * * * *"  # type: ignore[misc]
    assert schedule == cron("0 * * * *")

"""The schedule preview: fire times with DST marks, and the replay of an outage by the misfire policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual_functions.core.model import MisfirePolicy
from punctual_functions.core.preview import MAX_REPLAYED, Fate, OutageTooLong, fire_times, replay_outage
from punctual_functions.core.schedule import Schedule, parse_schedule

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
THRESHOLD = timedelta(seconds=60)


def berlin(year: int, month: int, day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=BERLIN).astimezone(UTC)


def schedule(**kwargs: str) -> Schedule:
    return parse_schedule(now=NOW, **kwargs)  # type: ignore[arg-type]


def test_a_local_time_the_spring_forward_skips_fires_at_the_transition_marked_as_a_gap() -> None:
    # 2026-03-29: Berlin's clocks jump from 02:00 to 03:00 (01:00 UTC); 02:30 does not exist.
    daily = schedule(cron="30 2 * * *", timezone="Europe/Berlin")
    times = fire_times(daily, berlin(2026, 3, 27, 12), 3)
    assert [t.at for t in times] == [
        berlin(2026, 3, 28, 2, 30),
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
        berlin(2026, 3, 30, 2, 30),
    ]
    assert times[0].dst is None and times[2].dst is None
    gap = times[1].dst
    assert gap is not None and gap.kind == "gap"
    assert gap.local == datetime(2026, 3, 29, 2, 30)


def test_a_local_time_the_fall_back_repeats_fires_once_marked_as_a_repeat() -> None:
    # 2026-10-25: Berlin's clocks go back from 03:00 to 02:00 (01:00 UTC); 02:30 happens twice.
    daily = schedule(cron="30 2 * * *", timezone="Europe/Berlin")
    times = fire_times(daily, berlin(2026, 10, 24, 12), 2)
    assert times[0].at == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # the first pass (CEST)
    assert times[0].dst is not None and times[0].dst.kind == "repeat"
    assert times[0].dst.local == datetime(2026, 10, 25, 2, 30)
    assert times[1].dst is None


def test_a_cron_slot_that_exists_on_the_transition_day_is_not_marked() -> None:
    # 03:00 exists on the spring-forward day (it is the first instant after the gap): no skipped slot.
    daily = schedule(cron="0 3 * * *", timezone="Europe/Berlin")
    (time,) = fire_times(daily, berlin(2026, 3, 28, 12), 1)
    assert time.at == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    assert time.dst is None


def test_utc_crons_and_rates_carry_no_dst_marks() -> None:
    assert all(t.dst is None for t in fire_times(schedule(cron="30 2 * * *"), NOW, 100))
    rate = schedule(rate="30 minutes", timezone="Europe/Berlin")
    assert all(t.dst is None for t in fire_times(rate, berlin(2026, 10, 25, 1), 10))


def test_the_nightly_job_missed_by_an_outage_runs_once_afterwards_by_default() -> None:
    nightly = schedule(cron="0 2 * * *", timezone="Europe/Berlin")
    replay = replay_outage(
        nightly, MisfirePolicy.RUN_ONCE, None, berlin(2026, 6, 1, 1), berlin(2026, 6, 1, 4), THRESHOLD
    )
    assert [(m.scheduled_for, m.fate) for m in replay.missed] == [(berlin(2026, 6, 1, 2), Fate.RUNS)]
    assert replay.resumes_with == berlin(2026, 6, 2, 2)


def test_misfire_skip_drops_what_the_outage_missed() -> None:
    nightly = schedule(cron="0 2 * * *", timezone="Europe/Berlin")
    replay = replay_outage(
        nightly, MisfirePolicy.SKIP, None, berlin(2026, 6, 1, 1), berlin(2026, 6, 1, 4), THRESHOLD
    )
    assert [m.fate for m in replay.missed] == [Fate.SKIPPED]


def test_run_once_collapses_a_fast_crons_missed_occurrences_into_the_latest() -> None:
    every_minute = schedule(cron="* * * * *")
    start, end = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC), datetime(2026, 6, 1, 12, 10, 30, tzinfo=UTC)
    replay = replay_outage(every_minute, MisfirePolicy.RUN_ONCE, None, start, end, THRESHOLD)
    assert [m.scheduled_for.minute for m in replay.missed] == list(range(1, 11))
    assert [m.fate for m in replay.missed] == [Fate.COLLAPSED] * 9 + [Fate.RUNS]
    assert replay.resumes_with == datetime(2026, 6, 1, 12, 11, tzinfo=UTC)


def test_run_all_runs_everything_within_the_catchup_window_and_skips_the_rest() -> None:
    every_minute = schedule(cron="* * * * *")
    start, end = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC), datetime(2026, 6, 1, 12, 10, 30, tzinfo=UTC)
    everything = replay_outage(every_minute, MisfirePolicy.RUN_ALL, None, start, end, THRESHOLD)
    assert everything.count(Fate.RUNS) == 10
    recent = replay_outage(every_minute, MisfirePolicy.RUN_ALL, 300, start, end, THRESHOLD)
    assert [m.fate for m in recent.missed] == [Fate.SKIPPED] * 5 + [Fate.RUNS] * 5
    assert recent.missed[5].scheduled_for == end - timedelta(seconds=270)


def test_an_occurrence_missed_by_less_than_the_misfire_threshold_runs_whatever_the_policy() -> None:
    every_minute = schedule(cron="* * * * *")
    start, end = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC), datetime(2026, 6, 1, 12, 1, 20, tzinfo=UTC)
    replay = replay_outage(every_minute, MisfirePolicy.SKIP, None, start, end, THRESHOLD)
    assert [(m.scheduled_for.minute, m.fate) for m in replay.missed] == [(1, Fate.RUNS)]


def test_a_one_off_due_in_the_outage_runs_after_it() -> None:
    once = schedule(at="2026-06-01T12:05:00Z")
    start, end = datetime(2026, 6, 1, 12, tzinfo=UTC), datetime(2026, 6, 1, 13, tzinfo=UTC)
    replay = replay_outage(once, MisfirePolicy.SKIP, None, start, end, THRESHOLD)
    assert [m.fate for m in replay.missed] == [Fate.RUNS]
    assert replay.resumes_with is None


def test_an_outage_with_nothing_due_changes_nothing() -> None:
    nightly = schedule(cron="0 2 * * *")
    start, end = datetime(2026, 6, 1, 3, tzinfo=UTC), datetime(2026, 6, 1, 4, tzinfo=UTC)
    replay = replay_outage(nightly, MisfirePolicy.RUN_ONCE, None, start, end, THRESHOLD)
    assert replay.missed == []
    assert replay.resumes_with == datetime(2026, 6, 2, 2, tzinfo=UTC)


def test_an_outage_too_long_to_replay_is_refused() -> None:
    fast = schedule(cron="*/10 * * * * *")
    start = datetime(2026, 6, 1, tzinfo=UTC)
    with pytest.raises(OutageTooLong):
        replay_outage(
            fast,
            MisfirePolicy.RUN_ONCE,
            None,
            start,
            start + timedelta(seconds=10 * (MAX_REPLAYED + 5)),
            THRESHOLD,
        )

"""The domain rules: run state machine, retry policy, ids, buckets and the misfire policy."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from punctual_functions.core.model import (
    RUN_TRANSITIONS,
    InvalidTransitionError,
    Job,
    MisfirePolicy,
    RetryPolicy,
    Run,
    RunKind,
    RunStatus,
    bucket_of,
    bucket_start,
    check_transition,
    fire_time,
    home_of,
    iso,
    jitter_of,
    make_trigger,
    new_job_id,
    next_bucket,
    parse_iso,
    plan_dispatch,
    run_id_for,
    scheduled_for_of,
    shard_of,
)
from punctual_functions.core.schedule import parse_schedule

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
THRESHOLD = timedelta(seconds=60)


def job_with(schedule_kwargs: dict[str, str], **changes: object) -> Job:
    schedule = parse_schedule(now=NOW - timedelta(hours=1), **schedule_kwargs)  # type: ignore[arg-type]
    return Job(
        job_id="job_1",
        owner="alice",
        schedule=schedule,
        target={"type": "http", "url": "https://example.com"},
        created_at=NOW,
        updated_at=NOW,
        **changes,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------- state machine


def test_terminal_runs_never_change() -> None:
    for status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.SKIPPED):
        assert status.is_terminal
        assert RUN_TRANSITIONS[status] == frozenset()
        with pytest.raises(InvalidTransitionError):
            check_transition(status, RunStatus.RUNNING)


def test_a_queued_run_cannot_succeed_without_running() -> None:
    with pytest.raises(InvalidTransitionError, match="QUEUED run cannot become SUCCEEDED"):
        check_transition(RunStatus.QUEUED, RunStatus.SUCCEEDED)


def test_every_non_terminal_run_can_be_cancelled() -> None:
    for status in RunStatus:
        if not status.is_terminal:
            check_transition(status, RunStatus.CANCELLED)


def test_retrying_goes_back_to_running_and_running_may_be_taken_over() -> None:
    check_transition(RunStatus.RETRYING, RunStatus.RUNNING)
    check_transition(RunStatus.RUNNING, RunStatus.RUNNING)


# -------------------------------------------------------------------------------------- retries


@given(attempt=st.integers(min_value=1, max_value=30), seed=st.integers())
def test_backoff_is_full_jitter_below_the_capped_exponential(attempt: int, seed: int) -> None:
    policy = RetryPolicy(max_attempts=5, backoff_seconds=2, max_backoff_seconds=300)
    delay = policy.delay_after(attempt, random.Random(seed))
    assert 0 <= delay <= min(300, 2 * 2 ** (attempt - 1))


def test_attempts_left_counts_started_attempts() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert [policy.has_attempts_left(n) for n in (1, 2, 3)] == [True, True, False]


# ------------------------------------------------------------------------------- ids and buckets


def test_run_id_is_derived_from_job_and_occurrence_and_sorts_by_time() -> None:
    first = run_id_for("job_1", NOW)
    assert first == run_id_for("job_1", NOW), "duplicates of one occurrence must collapse"
    assert first != run_id_for("job_2", NOW)
    assert first != run_id_for("job_1", NOW, RunKind.MANUAL)
    later = run_id_for("job_1", NOW + timedelta(milliseconds=1))
    assert first < later
    assert scheduled_for_of(first) == NOW


def test_buckets_are_utc_minutes() -> None:
    moment = datetime(2026, 11, 22, 13, 5, 59, 999000, tzinfo=UTC)
    assert bucket_of(moment) == "2026-11-22T13:05"
    assert next_bucket("2026-11-22T23:59") == "2026-11-23T00:00"
    assert bucket_start("2026-11-22T13:05") == datetime(2026, 11, 22, 13, 5, tzinfo=UTC)


def test_triggers_never_land_in_a_passed_bucket() -> None:
    job = job_with({"at": "2026-11-22T11:00:00Z"})
    trigger = make_trigger(job, parse_iso("2026-11-22T11:00:00Z"), now=NOW, shard_count=8)
    assert trigger.bucket == "2026-11-22T12:00"
    assert trigger.fire_at == parse_iso("2026-11-22T11:00:00Z")


def test_a_jobs_triggers_share_one_shard() -> None:
    assert len({shard_of("job_1", 16) for _ in range(3)}) == 1
    assert len({shard_of(f"job_{n}", 16) for n in range(200)}) == 16


def test_iso_is_utc_with_milliseconds() -> None:
    assert iso(datetime(2026, 11, 22, 12, 0, 5, 123456, tzinfo=UTC)) == "2026-11-22T12:00:05.123Z"


# ------------------------------------------------------------------------------------- misfires


def test_on_time_occurrence_runs_and_chains_to_the_next() -> None:
    job = job_with({"cron": "* * * * *"})
    plan = plan_dispatch(job, NOW, NOW - timedelta(seconds=30), THRESHOLD)
    assert plan.run_scheduled_for == NOW
    assert plan.next_occurrence == NOW + timedelta(minutes=1)


def test_one_off_runs_however_late() -> None:
    job = job_with({"at": "2026-11-22T10:00:00Z"})
    plan = plan_dispatch(job, parse_iso("2026-11-22T10:00:00Z"), NOW, THRESHOLD)
    assert plan.run_scheduled_for == parse_iso("2026-11-22T10:00:00Z")
    assert plan.next_occurrence is None


def test_run_once_runs_only_the_latest_missed_occurrence() -> None:
    job = job_with({"cron": "* * * * *"}, misfire=MisfirePolicy.RUN_ONCE)
    plan = plan_dispatch(job, NOW - timedelta(minutes=10), NOW + timedelta(seconds=5), THRESHOLD)
    assert plan.run_scheduled_for == NOW
    assert plan.next_occurrence == NOW + timedelta(minutes=1)


def test_skip_runs_nothing_and_resumes_in_the_future() -> None:
    job = job_with({"cron": "* * * * *"}, misfire=MisfirePolicy.SKIP)
    plan = plan_dispatch(job, NOW - timedelta(minutes=10), NOW + timedelta(seconds=5), THRESHOLD)
    assert plan.run_scheduled_for is None and plan.skipped == NOW - timedelta(minutes=10)
    assert plan.next_occurrence == NOW + timedelta(minutes=1)


def test_run_all_runs_each_missed_occurrence_in_turn() -> None:
    job = job_with({"cron": "* * * * *"}, misfire=MisfirePolicy.RUN_ALL)
    plan = plan_dispatch(job, NOW - timedelta(minutes=10), NOW, THRESHOLD)
    assert plan.run_scheduled_for == NOW - timedelta(minutes=10)
    assert plan.next_occurrence == NOW - timedelta(minutes=9)


def test_run_all_respects_the_catch_up_window() -> None:
    job = job_with({"cron": "* * * * *"}, misfire=MisfirePolicy.RUN_ALL, catchup_seconds=180)
    plan = plan_dispatch(job, NOW - timedelta(minutes=10), NOW, THRESHOLD)
    assert plan.run_scheduled_for is None
    assert plan.next_occurrence == NOW - timedelta(minutes=3)


def test_run_once_outside_the_catch_up_window_skips() -> None:
    job = job_with({"cron": "0 * * * *"}, misfire=MisfirePolicy.RUN_ONCE, catchup_seconds=60)
    plan = plan_dispatch(job, NOW - timedelta(hours=3), NOW + timedelta(minutes=30), THRESHOLD)
    assert plan.run_scheduled_for is None
    assert plan.next_occurrence == NOW + timedelta(hours=1)


# ------------------------------------------------------------------------------------------ jitter


def test_jitter_is_fixed_per_occurrence_and_spread_over_the_window() -> None:
    job = job_with({"cron": "0 * * * *"}, jitter_seconds=60)
    occurrences = [NOW + timedelta(hours=hour) for hour in range(400)]
    delays = [jitter_of(job, moment) for moment in occurrences]
    assert delays == [jitter_of(job, moment) for moment in occurrences], "the same delay whoever asks"
    assert all(0 <= delay <= 60_000 for delay in delays)
    assert len(set(delays)) > 350, "a delay per occurrence, not one per job"
    assert 25_000 < sum(delays) / len(delays) < 35_000, "even over the window"
    other = replace(job, job_id="job_2")
    assert [jitter_of(other, moment) for moment in occurrences] != delays, "jobs are spread apart too"


def test_no_jitter_for_a_job_without_it_or_for_a_manual_run() -> None:
    assert jitter_of(job_with({"cron": "0 * * * *"}), NOW) == 0
    jittered = job_with({"cron": "0 * * * *"}, jitter_seconds=600)
    assert jitter_of(jittered, NOW, RunKind.MANUAL) == 0
    assert fire_time(jittered, NOW, RunKind.MANUAL) == NOW


def test_a_jittered_trigger_is_due_at_its_occurrences_delay() -> None:
    job = job_with({"cron": "0 * * * *"}, jitter_seconds=600)
    trigger = make_trigger(job, NOW, now=NOW - timedelta(hours=1), shard_count=4)
    assert trigger.scheduled_for == NOW
    assert trigger.fire_at == NOW + timedelta(milliseconds=jitter_of(job, NOW)) == fire_time(job, NOW)
    assert trigger.bucket == bucket_of(trigger.fire_at)


def test_a_jittered_occurrence_is_missed_only_a_threshold_after_its_own_due_time() -> None:
    job = job_with({"cron": "0 * * * *"}, jitter_seconds=3000, misfire=MisfirePolicy.SKIP)
    occurrence = next(
        NOW + timedelta(hours=h) for h in range(100) if jitter_of(job, NOW + timedelta(hours=h)) > 600_000
    )
    due = fire_time(job, occurrence)
    assert (
        plan_dispatch(job, occurrence, due + timedelta(seconds=30), THRESHOLD).run_scheduled_for == occurrence
    )
    missed = plan_dispatch(job, occurrence, due + timedelta(seconds=61), THRESHOLD)
    assert missed.run_scheduled_for is None and missed.skipped == occurrence


def test_a_message_carries_its_runs_jitter_so_a_start_that_overtakes_the_run_put_keeps_it() -> None:
    from punctual_functions.core.queue import WorkMessage

    run = Run(
        job_id="job_1",
        run_id=run_id_for("job_1", NOW),
        owner="alice",
        scheduled_for=NOW,
        status=RunStatus.QUEUED,
        queued_at=NOW,
        next_attempt_at=NOW + timedelta(milliseconds=90_500),
        jitter_ms=90_500,
    )
    queued = WorkMessage.from_json(WorkMessage("job_1", run.run_id, queued=run).to_json()).queued
    assert queued is not None and queued.jitter_ms == 90_500
    assert queued.next_attempt_at == queued.due_at == NOW + timedelta(milliseconds=90_500)
    plain = WorkMessage.from_json(
        WorkMessage("job_1", run.run_id, queued=replace(run, jitter_ms=0)).to_json()
    )
    assert plain.queued is not None and plain.queued.jitter_ms == 0 and "jitter" not in plain.to_json()


@given(
    minute=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
    shards=st.integers(min_value=1, max_value=1000),
)
def test_a_one_off_job_id_names_its_home_whatever_the_shard_count_becomes(
    minute: datetime, shards: int
) -> None:
    bucket = bucket_of(minute.replace(tzinfo=UTC))
    job_id = new_job_id(bucket, shards)
    home = home_of(job_id)
    assert home is not None and home[0] == bucket and 0 <= home[1] < shards
    assert shard_of(job_id, shards) == shard_of(job_id, shards * 2 + 7) == home[1], "the shard it names"
    assert home_of(new_job_id()) is None and home_of("job_x") is None and home_of("job_a_b_c") is None

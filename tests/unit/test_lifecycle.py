"""The run lifecycle's decisions (punctual_functions/core/lifecycle.py): pure, so each rule in
microseconds."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from punctual_functions.core import lifecycle
from punctual_functions.core.model import (
    Alerts,
    Job,
    JobStatus,
    OverlapPolicy,
    Reason,
    RetryPolicy,
    Run,
    RunKind,
    RunStatus,
)
from punctual_functions.core.schedule import parse_schedule

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def job(*, recurring: bool = True, **changes: object) -> Job:
    schedule = (
        parse_schedule(cron="*/5 * * * *", now=NOW)
        if recurring
        else parse_schedule(at=(NOW + timedelta(minutes=1)).isoformat(), now=NOW)
    )
    base = Job(
        job_id="j", owner="o", schedule=schedule, target={"type": "http"}, created_at=NOW, updated_at=NOW
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def run(status: RunStatus = RunStatus.QUEUED, **changes: object) -> Run:
    base = Run(job_id="j", run_id="r", owner="o", scheduled_for=NOW, status=status, attempt=1)
    return replace(base, **changes)  # type: ignore[arg-type]


def after(
    j: Job, r: Run, *, succeeded: bool = False, retriable: bool = False, error: str | None = None
) -> lifecycle.Finish | lifecycle.RetryAt:
    return lifecycle.after_attempt(
        j, r, succeeded=succeeded, retriable=retriable, error=error, finished_at=NOW, rng=random.Random(1)
    )


def test_a_message_for_a_missing_or_finished_run_is_ignored_and_a_cancelled_job_cancels_it() -> None:
    assert lifecycle.on_arrival(None, job()) == lifecycle.Ignore()
    assert lifecycle.on_arrival(run(RunStatus.SUCCEEDED), job()) == lifecycle.Ignore()
    assert lifecycle.on_arrival(run(), None) == lifecycle.Cancel("job cancelled")
    assert lifecycle.on_arrival(run(), job(status=JobStatus.CANCELLED)) == lifecycle.Cancel("job cancelled")
    assert lifecycle.on_arrival(run(), job()) == lifecycle.Proceed()


def test_a_message_that_came_before_its_runs_write_stands_for_the_run_it_carries_unless_too_old() -> None:
    retention = timedelta(days=30)
    stored, carried = run(run_id="stored"), run(run_id="carried", queued_at=NOW)
    assert lifecycle.run_of_message(stored, carried, NOW, retention) is stored
    assert lifecycle.run_of_message(None, carried, NOW + timedelta(days=29), retention) is carried
    # Older than the runs' retention: its run may have expired, and must not run again.
    assert lifecycle.run_of_message(None, carried, NOW + timedelta(days=30), retention) is None
    # Its age counts from its dispatch, not from the (possibly long past) occurrence.
    backfill = run(scheduled_for=NOW - timedelta(days=365), queued_at=NOW)
    assert lifecycle.run_of_message(None, backfill, NOW + timedelta(days=1), retention) is backfill
    assert lifecycle.run_of_message(None, None, NOW, retention) is None


def test_another_workers_lease_holds_the_attempt_until_it_lapses() -> None:
    held = run(RunStatus.RUNNING, lease_until=NOW + timedelta(seconds=3))
    assert lifecycle.lease_left(held, NOW) == 3.0
    assert lifecycle.lease_left(held, NOW + timedelta(seconds=3)) is None
    assert lifecycle.lease_left(run(RunStatus.QUEUED, lease_until=NOW + timedelta(seconds=3)), NOW) is None
    assert lifecycle.lease_left(run(RunStatus.RUNNING), NOW) is None


def test_an_invocation_too_short_for_the_wait_the_timeout_and_the_outcome_gives_the_attempt_away() -> None:
    due_in_2 = run(scheduled_for=NOW + timedelta(seconds=2))
    short = job(timeout_seconds=30)

    def left(seconds: float, r: Run = due_in_2) -> float | None:
        deadline = NOW + timedelta(seconds=seconds)
        return lifecycle.short_of_time(r, short, NOW, deadline, max_early_wait=5, margin=10)

    # 2 s wait + 30 s timeout + 10 s margin = 42 s needed.
    assert left(41.9) == 41.9
    assert left(42) is None
    assert left(600) is None
    # Not due within the early wait: its message goes back to the queue anyway.
    assert left(1, run(scheduled_for=NOW + timedelta(seconds=6))) is None


def test_the_late_alert_tells_of_a_first_start_later_than_the_job_allows() -> None:
    wants = job(alerts=Alerts(target={"type": "sns"}, late_seconds=2))
    assert lifecycle.late_by(run(lateness_ms=2000), wants) is None
    assert lifecycle.late_by(run(lateness_ms=2100), wants) == "started 2.1 s after its due time"
    assert lifecycle.late_by(run(lateness_ms=9000), job()) is None


def test_a_queued_occurrence_of_a_paused_or_changed_job_is_skipped_but_run_now_is_not() -> None:
    assert lifecycle.superseded(run(), job(status=JobStatus.PAUSED)) == lifecycle.Skip(
        "job paused", Reason.PAUSED
    )
    assert lifecycle.superseded(run(job_version=1), job(version=2)) == lifecycle.Skip(
        "superseded by a change to the job", Reason.SUPERSEDED
    )
    assert lifecycle.superseded(run(kind=RunKind.MANUAL), job(status=JobStatus.PAUSED)) is None
    assert lifecycle.superseded(run(RunStatus.RETRYING), job(status=JobStatus.PAUSED)) is None
    assert lifecycle.superseded(run(), job()) is None


def overlap(policy: OverlapPolicy, *earlier: Run, stored: Run | None = None) -> object:
    """The decision for a queued occurrence ``new`` of a job with ``policy`` (``stored``: what a
    skipped row's pointer reads)."""
    j = job(overlap=policy)
    blocker = lifecycle.overlap_blocker(j, list(earlier), lambda run_id: stored)
    return lifecycle.overlap_decision(run(run_id="new", attempt=0), j, blocker)


def test_skip_skips_while_an_earlier_run_is_under_way_and_says_which() -> None:
    for busy in (RunStatus.RUNNING, RunStatus.RETRYING):
        assert overlap(OverlapPolicy.SKIP, run(busy, run_id="a")) == lifecycle.Skip(
            "run a still under way", Reason.OVERLAP, "a"
        )
    assert overlap(OverlapPolicy.SKIP, run(RunStatus.SUCCEEDED)) == lifecycle.Proceed()
    assert overlap(OverlapPolicy.ALLOW, run(RunStatus.RUNNING)) == lifecycle.Proceed()
    # a queued earlier occurrence meets the policy itself: skip looks past it to the one running
    assert overlap(OverlapPolicy.SKIP, run(run_id="q", attempt=0), run(RunStatus.RUNNING, run_id="a")) == (
        lifecycle.Skip("run a still under way", Reason.OVERLAP, "a")
    )
    j = job(overlap=OverlapPolicy.SKIP)
    assert not lifecycle.overlap_applies(run(RunStatus.RETRYING), j), "only a queued occurrence"
    assert not lifecycle.overlap_applies(run(kind=RunKind.BACKFILL), j), "a backfill has its own policy"


def test_a_skipped_rows_pointer_finds_the_run_under_way_however_far_back() -> None:
    skipped = run(RunStatus.SKIPPED, run_id="s", attempt=0, reason=Reason.OVERLAP, overlap_with="a")
    running = run(RunStatus.RUNNING, run_id="a")
    assert overlap(OverlapPolicy.SKIP, skipped, stored=running) == lifecycle.Skip(
        "run a still under way", Reason.OVERLAP, "a"
    )
    assert overlap(OverlapPolicy.SKIP, skipped, stored=run(RunStatus.SUCCEEDED, run_id="a")) == (
        lifecycle.Proceed()
    )
    assert overlap(OverlapPolicy.SKIP, skipped, stored=None) == lifecycle.Proceed(), "expired"


def test_rows_that_did_not_run_for_another_reason_are_passed_over_and_a_run_that_ended_stops() -> None:
    paused = run(RunStatus.SKIPPED, run_id="p", attempt=0, reason=Reason.PAUSED)
    misfire = run(RunStatus.SKIPPED, run_id="m", attempt=0, reason=Reason.MISFIRE_SKIPPED, covers=9)
    running = run(RunStatus.RUNNING, run_id="a")
    assert overlap(OverlapPolicy.BUFFER_ALL, paused, misfire, running) == lifecycle.Wait(running)
    assert overlap(OverlapPolicy.BUFFER_ALL, run(RunStatus.FAILED), running) == lifecycle.Proceed()


def test_buffer_one_waits_behind_the_run_under_way_unless_one_already_waits() -> None:
    running = run(RunStatus.RUNNING, run_id="a")
    assert overlap(OverlapPolicy.BUFFER_ONE, running) == lifecycle.Wait(running)
    waiting = run(run_id="b", attempt=0, overlap_with="a")
    assert overlap(OverlapPolicy.BUFFER_ONE, waiting, running) == lifecycle.Skip(
        "run b already waits for the one under way", Reason.OVERLAP, "b"
    )
    # the rows skipped since point at the waiting one: a later occurrence finds it through them
    skipped = run(RunStatus.SKIPPED, run_id="c", attempt=0, reason=Reason.OVERLAP, overlap_with="b")
    assert overlap(OverlapPolicy.BUFFER_ONE, skipped, stored=waiting) == lifecycle.Skip(
        "run b already waits for the one under way", Reason.OVERLAP, "b"
    )
    # once it started, the next one waits behind it
    started = replace(waiting, status=RunStatus.RUNNING, attempt=1)
    assert overlap(OverlapPolicy.BUFFER_ONE, skipped, stored=started) == lifecycle.Wait(started)
    # an earlier occurrence about to start (not waiting): this one waits behind it
    about_to_start = run(run_id="b", attempt=0)
    assert overlap(OverlapPolicy.BUFFER_ONE, about_to_start) == lifecycle.Wait(about_to_start)


def test_buffer_all_waits_behind_the_one_just_before_it() -> None:
    running = run(RunStatus.RUNNING, run_id="a")
    waiting = run(run_id="b", attempt=0, overlap_with="a")
    assert overlap(OverlapPolicy.BUFFER_ALL, waiting, running) == lifecycle.Wait(waiting)
    assert overlap(OverlapPolicy.BUFFER_ALL, run(RunStatus.RETRYING, run_id="a")) == lifecycle.Wait(
        run(RunStatus.RETRYING, run_id="a")
    )
    assert overlap(OverlapPolicy.BUFFER_ALL, run(RunStatus.SUCCEEDED)) == lifecycle.Proceed()


def test_cancel_other_cancels_whatever_has_not_ended() -> None:
    for status in (RunStatus.RUNNING, RunStatus.RETRYING, RunStatus.QUEUED):
        other = run(status, run_id="a", attempt=0 if status is RunStatus.QUEUED else 1)
        assert overlap(OverlapPolicy.CANCEL_OTHER, other) == lifecycle.CancelOther(other)
    assert overlap(OverlapPolicy.CANCEL_OTHER, run(RunStatus.CANCELLED, reason=Reason.OVERLAP)) == (
        lifecycle.Proceed()
    )


def test_a_waiting_runs_message_stays_away_until_the_run_ahead_could_end_at_the_latest() -> None:
    j = job(timeout_seconds=60)
    running = run(
        RunStatus.RUNNING, started_at=NOW - timedelta(seconds=20), lease_until=NOW + timedelta(seconds=3)
    )
    assert lifecycle.wait_limit(running, j, NOW, 5) == 45
    retrying = run(RunStatus.RETRYING, next_attempt_at=NOW + timedelta(seconds=100))
    assert lifecycle.wait_limit(retrying, j, NOW, 5) == 165
    assert lifecycle.wait_limit(run(attempt=0), j, NOW, 5) == 65
    late = run(RunStatus.RUNNING, started_at=NOW - timedelta(hours=1), lease_until=NOW - timedelta(seconds=1))
    assert lifecycle.wait_limit(late, j, NOW, 5) == 1, "never less than a second"


def test_a_success_finishes_the_run() -> None:
    assert after(job(), run(), succeeded=True) == lifecycle.Finish(RunStatus.SUCCEEDED, "SUCCEEDED")
    assert after(job(recurring=False), run(), succeeded=True) == lifecycle.Finish(
        RunStatus.SUCCEEDED, "SUCCEEDED"
    ), "a one-off job follows its run when read (test_job_history.py)"


def test_a_retriable_failure_retries_with_backoff_until_attempts_run_out() -> None:
    j = job(retry=RetryPolicy(max_attempts=3, backoff_seconds=10))
    first = after(j, run(attempt=1), retriable=True, error="503")
    assert isinstance(first, lifecycle.RetryAt) and first.at == NOW + timedelta(seconds=first.delay_seconds)
    assert 0 <= first.delay_seconds <= 10
    assert after(j, run(attempt=3), retriable=True, error="503") == lifecycle.Finish(
        RunStatus.FAILED, "FAILED"
    )
    assert after(j, run(attempt=1), retriable=False, error="404") == lifecycle.Finish(
        RunStatus.FAILED, "FAILED"
    )
    assert after(job(recurring=False), run(attempt=3), error="404") == lifecycle.Finish(
        RunStatus.FAILED, "FAILED"
    )


@pytest.mark.parametrize("retriable", [True, False])
def test_an_attempt_aborted_for_a_cancel_ends_cancelled_and_is_never_retried(retriable: bool) -> None:
    decision = after(job(recurring=False), run(), retriable=retriable, error=lifecycle.CANCELLED_ERROR)
    assert decision == lifecycle.Finish(RunStatus.CANCELLED, "CANCELLED")

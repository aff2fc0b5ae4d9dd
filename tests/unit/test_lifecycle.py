"""The run lifecycle's decisions (functions/core/lifecycle.py): pure, so each rule in microseconds."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from functions.core import lifecycle
from functions.core.model import Job, JobStatus, OverlapPolicy, Reason, RetryPolicy, Run, RunKind, RunStatus
from functions.core.schedule import parse_schedule

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


def test_the_skip_overlap_policy_skips_while_an_earlier_run_is_under_way() -> None:
    skipping = job(overlap=OverlapPolicy.SKIP)
    for busy in (RunStatus.RUNNING, RunStatus.RETRYING):
        assert lifecycle.overlap_blocks(run(), skipping, [run(busy)]) == lifecycle.Skip(
            "previous run still running", Reason.OVERLAP
        )
    assert lifecycle.overlap_blocks(run(), skipping, [run(RunStatus.SUCCEEDED)]) is None
    assert lifecycle.overlap_blocks(run(), job(), [run(RunStatus.RUNNING)]) is None, "allow"
    assert lifecycle.overlap_blocks(run(RunStatus.RETRYING), skipping, [run(RunStatus.RUNNING)]) is None


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

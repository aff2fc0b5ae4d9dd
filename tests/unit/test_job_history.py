"""What a job's view derives from its runs (``model.job_history``): its last run, its counts, and a
one-off job's end. The worker writes an outcome on the run alone, so these rules are the only place a
one-off job becomes COMPLETED or FAILED."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from punctual_functions.core.model import Job, JobStatus, Run, RunKind, RunStatus, job_history, run_id_for
from punctual_functions.core.schedule import parse_schedule

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
AT = NOW + timedelta(minutes=1)


def job(*, recurring: bool = False, **changes: object) -> Job:
    schedule = (
        parse_schedule(cron="*/5 * * * *", now=NOW)
        if recurring
        else parse_schedule(at=AT.isoformat(), now=NOW)
    )
    base = Job(
        job_id="j", owner="o", schedule=schedule, target={"type": "http"}, created_at=NOW, updated_at=NOW
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def run(
    status: RunStatus, at: datetime = AT, kind: RunKind = RunKind.SCHEDULED, error: str | None = None
) -> Run:
    return Run(
        job_id="j",
        run_id=run_id_for("j", at, kind),
        owner="o",
        scheduled_for=at,
        status=status,
        kind=kind,
        error=error,
    )


def test_a_one_off_job_completes_or_fails_with_the_run_of_its_time() -> None:
    assert job_history(job(), []).status is JobStatus.ACTIVE
    assert job_history(job(), [run(RunStatus.RUNNING)]).status is JobStatus.ACTIVE
    assert job_history(job(), [run(RunStatus.RETRYING)]).status is JobStatus.ACTIVE
    assert job_history(job(), [run(RunStatus.SUCCEEDED)]).status is JobStatus.COMPLETED
    assert job_history(job(), [run(RunStatus.FAILED)]).status is JobStatus.FAILED
    # Its one run cancelled by request: nothing is left to run (it stayed ACTIVE, its next run in the
    # past, until the console's tests showed it)
    assert job_history(job(), [run(RunStatus.CANCELLED)]).status is JobStatus.CANCELLED


def test_a_run_now_or_an_earlier_time_does_not_end_a_one_off_job() -> None:
    manual = run(RunStatus.SUCCEEDED, NOW, RunKind.MANUAL)
    assert job_history(job(), [manual]).status is JobStatus.ACTIVE, "run now leaves the job as it is"
    before_a_patch = run(RunStatus.SUCCEEDED, AT - timedelta(seconds=30))
    assert job_history(job(), [before_a_patch]).status is JobStatus.ACTIVE


def test_a_paused_or_cancelled_one_off_keeps_its_status_and_a_recurring_job_never_follows_a_run() -> None:
    done = [run(RunStatus.SUCCEEDED)]
    assert job_history(job(status=JobStatus.CANCELLED), done).status is JobStatus.CANCELLED
    assert job_history(job(status=JobStatus.PAUSED), done).status is JobStatus.PAUSED
    assert job_history(job(recurring=True), done).status is JobStatus.ACTIVE


def test_the_last_run_is_the_newest_finished_one_and_counts_cover_finished_runs() -> None:
    runs = [
        run(RunStatus.RUNNING, NOW + timedelta(minutes=3)),
        run(RunStatus.FAILED, NOW + timedelta(minutes=2), error="boom"),
        run(RunStatus.SUCCEEDED, NOW + timedelta(minutes=1)),
        run(RunStatus.SKIPPED, NOW),
    ]
    history = job_history(job(recurring=True), runs)
    assert history.last_run is runs[1]
    assert history.run_counts == {"FAILED": 1, "SUCCEEDED": 1, "SKIPPED": 1}
    only_running = job_history(job(recurring=True), runs[:1])
    assert only_running.last_run is None and only_running.run_counts == {}


def test_a_pause_span_is_neither_the_last_run_nor_counted() -> None:
    span = run(RunStatus.SKIPPED, NOW + timedelta(minutes=2), RunKind.PAUSE)
    ran = run(RunStatus.SUCCEEDED, NOW + timedelta(minutes=1))
    history = job_history(job(recurring=True), [span, ran])
    assert history.last_run is ran and history.run_counts == {"SUCCEEDED": 1}

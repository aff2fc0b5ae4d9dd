"""The contract of ``RunStore``: an attempt starts once, its lease, its outcome, the history."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.model import (
    RUN_COUNT_WINDOW,
    InvalidTransitionError,
    JobStatus,
    Reason,
    RunKind,
    RunStatus,
    TriggerState,
    bucket_of,
    job_history,
    new_job_id,
    not_run_row,
)
from punctual_functions.core.ports import RunNotOurs, Tables
from punctual_functions.core.store.items import as_stored_attempt
from tests.contract.conftest import NOW, SHARDS, World, attempt


def test_an_attempt_starts_once_and_a_lapsed_one_is_taken_over_once(world: World, tables: Tables) -> None:
    job, queued = world.dispatched_run()
    at = queued.scheduled_for + timedelta(milliseconds=40)
    started = tables.start_attempt(queued, token="a", now=at, lease_until=at + timedelta(seconds=20))
    assert (started.status, started.attempt, started.executions, started.lateness_ms) == (
        RunStatus.RUNNING,
        1,
        1,
        40,
    )
    with pytest.raises(RunNotOurs):
        tables.start_attempt(queued, token="b", now=at, lease_until=at + timedelta(seconds=20))
    stored = tables.get_run(job.job_id, queued.run_id)
    assert stored is not None and stored.lease_token == "a" and stored.lease_until is not None
    with pytest.raises(RunNotOurs):  # a takeover must pin the lease it saw lapse
        tables.start_attempt(
            replace(stored, lease_until=stored.lease_until + timedelta(seconds=1)),
            token="c",
            now=at,
            lease_until=at,
        )
    later = at + timedelta(seconds=30)
    taken = tables.start_attempt(stored, token="d", now=later, lease_until=later + timedelta(seconds=20))
    assert (taken.attempt, taken.executions, taken.lateness_ms) == (1, 2, 40), "same attempt, first lateness"
    current = tables.get_run(job.job_id, queued.run_id)
    assert current is not None and (current.lease_token, current.executions) == ("d", 2)


def test_only_the_lease_holder_renews_and_records(world: World, tables: Tables) -> None:
    job, run = world.running()
    assert tables.renew_lease(run, NOW + timedelta(minutes=1))
    assert not tables.renew_lease(replace(run, lease_token="other"), NOW + timedelta(minutes=1))
    with pytest.raises(RunNotOurs):
        tables.finish_attempt(
            replace(run, lease_token="other"), attempt(), status=RunStatus.SUCCEEDED, now=NOW
        )
    tables.finish_attempt(run, attempt(), status=RunStatus.SUCCEEDED, now=NOW)
    tables.finish_attempt(run, attempt(), status=RunStatus.SUCCEEDED, now=NOW)  # a retried write: ours
    assert not tables.renew_lease(run, NOW + timedelta(minutes=2)), "a finished run has no lease"
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None
    assert (stored.status, stored.lease_token, stored.lease_until) == (RunStatus.SUCCEEDED, None, None)
    assert stored.attempts == (as_stored_attempt(attempt()),) and stored.finished_at is not None


def test_an_outcome_can_correct_a_start_that_called_its_target_late(world: World, tables: Tables) -> None:
    """The start is written ahead of the second and records the second; when the write itself took
    longer, the outcome records when the target was really called."""
    job, run = world.running()
    assert run.started_at is not None
    called = run.scheduled_for + timedelta(milliseconds=730)
    tables.finish_attempt(run, attempt(), status=RunStatus.SUCCEEDED, now=NOW, started_late=called)
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.status is RunStatus.SUCCEEDED
    assert (stored.started_at, stored.lateness_ms) == (called, 730)


def test_a_jittered_runs_delay_is_kept_and_its_lateness_counts_from_its_due_time(
    world: World, tables: Tables
) -> None:
    job, trigger = world.created()
    queued = replace(world.run(job, trigger.scheduled_for), jitter_ms=4321)
    assert tables.put_run(queued)
    stored = tables.get_run(job.job_id, queued.run_id)
    assert stored is not None and stored.jitter_ms == 4321
    assert stored.due_at == stored.scheduled_for + timedelta(milliseconds=4321)
    called = stored.due_at + timedelta(milliseconds=15)
    assert tables.start_attempt(stored, token="t", now=called, lease_until=called + timedelta(seconds=4))
    started = tables.get_run(job.job_id, queued.run_id)
    assert started is not None and started.lateness_ms == 15 and started.jitter_ms == 4321


def test_a_non_run_keeps_its_reason_and_the_history_filters_by_it(world: World, tables: Tables) -> None:
    job, trigger = world.created()
    queued = world.run(job, trigger.scheduled_for)
    assert tables.put_run(queued)
    assert tables.mark_run(queued, RunStatus.SKIPPED, now=NOW, error="job paused", reason=Reason.PAUSED)
    later = world.run(job, trigger.scheduled_for + timedelta(seconds=10))
    assert tables.put_run(later)
    stored = tables.get_run(job.job_id, queued.run_id)
    assert stored is not None and stored.reason is Reason.PAUSED and stored.error == "job paused"
    paused, _ = tables.list_runs(job.job_id, limit=10, reason=Reason.PAUSED)
    assert [run.run_id for run in paused] == [queued.run_id]
    assert tables.list_runs(job.job_id, limit=10, reason=Reason.OVERLAP)[0] == []
    both, _ = tables.list_runs(job.job_id, limit=10, status=RunStatus.SKIPPED, reason=Reason.PAUSED)
    assert [run.run_id for run in both] == [queued.run_id]


def test_a_row_standing_for_several_occurrences_reads_back_whole(world: World, tables: Tables) -> None:
    job, _ = world.created(pause_note="freeze", paused_by="bob")
    start = NOW.replace(microsecond=0)
    row = not_run_row(
        job, start, [start + timedelta(minutes=i) for i in range(1, 4)], Reason.PAUSED, start,
        kind=RunKind.PAUSE, error="not run while paused", note="freeze", by="bob",
    )  # fmt: skip
    assert tables.put_run(row)
    stored = tables.get_run(job.job_id, row.run_id)
    assert stored is not None
    assert (stored.kind, stored.covers, stored.covers_until, stored.note, stored.by) == (
        RunKind.PAUSE,
        3,
        start + timedelta(minutes=3),
        "freeze",
        "bob",
    )


def test_a_one_off_follows_its_runs_outcome_as_read_back(world: World, tables: Tables) -> None:
    job, run = world.running(name="once", cron=False)
    tables.finish_attempt(run, attempt("FAILED", "boom"), status=RunStatus.FAILED, now=NOW)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.status is JobStatus.ACTIVE, "the job item is not written"
    history = job_history(stored, tables.recent_runs(job.job_id, limit=RUN_COUNT_WINDOW))
    assert history.status is JobStatus.FAILED and history.run_counts == {"FAILED": 1}
    assert history.last_run is not None and history.last_run.error == "boom"


def test_a_one_off_cancelled_meanwhile_stays_cancelled_when_its_run_finishes(
    world: World, tables: Tables
) -> None:
    job, run = world.running(cron=False)
    current = tables.get_job(job.job_id)
    assert current is not None
    tables.update_job(current, replace(current, status=JobStatus.CANCELLED, version=current.version + 1))
    tables.finish_attempt(run, attempt(), status=RunStatus.SUCCEEDED, now=NOW)
    stored = tables.get_job(job.job_id)
    assert stored is not None
    assert job_history(stored, tables.recent_runs(job.job_id, limit=5)).status is JobStatus.CANCELLED


def test_a_retry_keeps_the_run_open_and_can_leave_a_trigger_to_wake_it(world: World, tables: Tables) -> None:
    job, run = world.running()
    wake = replace(world.trigger(job, NOW + timedelta(minutes=30)), run_id=run.run_id, is_retry=True)
    next_at = NOW + timedelta(minutes=30)
    tables.finish_attempt(
        run,
        attempt("RETRIABLE", "503"),
        status=RunStatus.RETRYING,
        now=NOW,
        next_attempt_at=next_at,
        retry_trigger=wake,
    )
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.status is RunStatus.RETRYING and stored.error == "503"
    assert stored.next_attempt_at == next_at.replace(microsecond=123000) and stored.finished_at is None
    assert any(
        t.is_retry and t.state is TriggerState.PENDING for t in tables.query_bucket(wake.bucket, wake.shard)
    )
    job_now = tables.get_job(job.job_id)
    assert job_now is not None
    assert job_history(job_now, tables.recent_runs(job.job_id, limit=5)).run_counts == {}, (
        "only a finished run counts"
    )
    again = tables.start_attempt(stored, token="2", now=next_at, lease_until=next_at + timedelta(seconds=20))
    assert again.attempt == 2


def test_a_run_without_a_running_attempt_is_ended_by_the_status_and_version_read(
    world: World, tables: Tables
) -> None:
    job, run = world.dispatched_run()
    assert not tables.mark_run(replace(run, job_version=7), RunStatus.SKIPPED, now=NOW, error="x")
    assert tables.mark_run(run, RunStatus.SKIPPED, now=NOW, error="job paused")
    assert not tables.mark_run(run, RunStatus.CANCELLED, now=NOW, error="late"), "it is SKIPPED now"
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and (stored.status, stored.error) == (RunStatus.SKIPPED, "job paused")
    with pytest.raises(InvalidTransitionError):
        tables.mark_run(stored, RunStatus.SUCCEEDED, now=NOW, error=None)


def test_the_history_lists_newest_first_and_runs_before_one(world: World, tables: Tables) -> None:
    job, _ = world.created()
    runs = [world.run(job, NOW + timedelta(minutes=m)) for m in range(4)]
    for index, run in enumerate(runs):
        status = RunStatus.SKIPPED if index == 1 else RunStatus.QUEUED
        assert tables.put_run(replace(run, status=status))
    ids = [run.run_id for run in runs]
    page, cursor = tables.list_runs(job.job_id, limit=3)
    assert [r.run_id for r in page] == ids[::-1][:3] and cursor is not None
    rest, end = tables.list_runs(job.job_id, limit=3, cursor=cursor)
    assert [r.run_id for r in rest] == [ids[0]] and end is None
    skipped, _ = tables.list_runs(job.job_id, limit=5, status=RunStatus.SKIPPED)
    assert [r.run_id for r in skipped] == [ids[1]]
    assert [r.run_id for r in tables.runs_before(job.job_id, ids[3], limit=2)] == [ids[2], ids[1]]
    assert tables.runs_before(job.job_id, ids[0], limit=2) == []
    assert [r.run_id for r in tables.runs_after(job.job_id, ids[0], limit=2)] == [ids[1], ids[2]]
    assert tables.runs_after(job.job_id, ids[3], limit=2) == []
    read_run, read_job = tables.get_run_and_job(job.job_id, ids[2])
    assert (
        read_run is not None
        and read_run.run_id == ids[2]
        and read_job is not None
        and read_job.job_id == job.job_id
    )
    assert tables.get_run_and_job(job.job_id, "nope") == (None, read_job)


def test_a_queued_run_records_what_it_waits_behind_and_an_end_what_it_was_for(
    world: World, tables: Tables
) -> None:
    job, _ = world.created()
    first, second, third = (world.run(job, NOW + timedelta(minutes=m)) for m in range(3))
    for run in (first, second, third):
        assert tables.put_run(run)
    assert tables.mark_waiting(second, first.run_id)
    waiting = tables.get_run(job.job_id, second.run_id)
    assert waiting is not None and waiting.overlap_with == first.run_id and waiting.status is RunStatus.QUEUED
    # Only a QUEUED run of the version read waits: a newer version's run or an ended one does not.
    assert not tables.mark_waiting(replace(third, job_version=third.job_version + 1), first.run_id)
    assert tables.mark_run(
        third, RunStatus.SKIPPED, now=NOW, error="x", reason=Reason.OVERLAP, overlap_with=second.run_id
    )
    skipped = tables.get_run(job.job_id, third.run_id)
    assert skipped is not None and skipped.overlap_with == second.run_id and skipped.reason is Reason.OVERLAP
    assert not tables.mark_waiting(third, first.run_id)
    unchanged = tables.get_run(job.job_id, third.run_id)
    assert unchanged is not None and unchanged.status is RunStatus.SKIPPED


def test_an_alert_is_claimed_once_per_run_and_kind(world: World, tables: Tables) -> None:
    job, _ = world.created()
    run = world.run(job, NOW)
    assert not tables.claim_alert(run, "failed"), "no run, no alert"
    assert tables.put_run(run)
    assert tables.claim_alert(run, "late")
    assert not tables.claim_alert(run, "late"), "once"
    assert tables.claim_alert(run, "failed"), "each kind once"
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.alerts_sent == {"late", "failed"}


def test_a_batchs_runs_and_jobs_are_read_together_with_what_is_missing_left_out(
    world: World, tables: Tables
) -> None:
    at = NOW + timedelta(minutes=5)  # a one-off job at its home: its item is in its trigger's partition
    one_off = world.job(cron=False, job_id=new_job_id(bucket_of(at), SHARDS))
    tables.create_job(one_off, world.trigger(one_off, at))
    recurring, _ = world.created()
    runs = [world.run(one_off, at), *(world.run(recurring, NOW + timedelta(minutes=m)) for m in range(2))]
    for run in runs:
        assert tables.put_run(run)
    wanted = [(run.job_id, run.run_id) for run in runs]
    found_runs, found_jobs = tables.get_runs_and_jobs([*wanted, (recurring.job_id, "nope"), ("gone", "r")])
    assert sorted(found_runs) == sorted(wanted)
    assert all(found_runs[key].run_id == key[1] for key in wanted)
    assert sorted(found_jobs) == sorted([one_off.job_id, recurring.job_id])
    assert found_jobs[one_off.job_id].schedule == one_off.schedule
    assert tables.get_runs_and_jobs([]) == ({}, {})

"""The contract of ``TriggerStore``: buckets, claims and what a lost claim means, cursors."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from functions.core.model import JobStatus, RunKind, RunStatus, TriggerState
from functions.core.ports import ClaimResult, Tables
from tests.contract.conftest import NOW, World


def test_a_bucket_lists_its_triggers_by_fire_time_and_deletes_them(world: World, tables: Tables) -> None:
    job = world.job()
    tables.create_job(job, None)
    late, early = (
        world.trigger(job, NOW + timedelta(seconds=40)),
        world.trigger(job, NOW + timedelta(seconds=20)),
    )
    tables.put_trigger(late)
    tables.put_trigger(early)
    listed = tables.query_bucket(early.bucket, early.shard)
    assert [t.run_id for t in listed] == [early.run_id, late.run_id]
    tables.delete_triggers(listed[:1])
    tables.delete_trigger(listed[1])
    tables.delete_trigger(listed[1])  # deleting what is gone is harmless
    assert tables.query_bucket(early.bucket, early.shard) == []


def test_a_claim_is_won_once_and_writes_the_run_and_the_next_occurrence(world: World, tables: Tables) -> None:
    job, trigger = world.created(name="chained")
    run = world.run(job, trigger.scheduled_for)
    following = world.trigger(job, trigger.scheduled_for + timedelta(seconds=10))
    result = tables.claim(trigger, job, token="mine", now=NOW, run=run, next_trigger=following)
    assert result is ClaimResult.CLAIMED
    # our own claim, its answer lost and retried: still ours; anyone else's: lost
    assert tables.claim(trigger, job, token="mine", now=NOW, run=run, next_trigger=following).claimed
    assert (
        tables.claim(trigger, job, token="theirs", now=NOW, run=run, next_trigger=following)
        is ClaimResult.LOST
    )
    stored_run = tables.get_run(job.job_id, run.run_id)
    assert stored_run is not None and stored_run.status is RunStatus.QUEUED
    stored_job = tables.get_job(job.job_id)
    assert stored_job is not None and stored_job.next_trigger_at == following.scheduled_for.replace(
        microsecond=123000
    )
    bucket = tables.query_bucket(trigger.bucket, trigger.shard)
    claimed = next(t for t in bucket if t.run_id == trigger.run_id)
    assert (claimed.state, claimed.claim_token) == (TriggerState.CLAIMED, "mine")
    assert any(t.run_id == following.run_id and t.state is TriggerState.PENDING for t in bucket)


def test_a_claim_for_a_changed_paused_or_missing_job_is_stale_and_writes_nothing(
    world: World, tables: Tables
) -> None:
    job, trigger = world.created()
    run = world.run(job, trigger.scheduled_for)
    for changed in (replace(job, version=2), replace(job, version=2, status=JobStatus.PAUSED)):
        tables.update_job(tables.get_job(job.job_id) or job, changed)
        result = tables.claim(trigger, job, token="t", now=NOW, run=run, next_trigger=None)
        assert result is ClaimResult.STALE
        job = changed
    assert tables.get_run(job.job_id, run.run_id) is None
    (pending,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert pending.state is TriggerState.PENDING
    orphan = world.job()
    orphan_trigger = world.trigger(orphan, NOW + timedelta(seconds=5))
    tables.put_trigger(orphan_trigger)
    stale = tables.claim(
        orphan_trigger, orphan, token="t", now=NOW, run=world.run(orphan, NOW), next_trigger=None
    )
    assert stale is ClaimResult.STALE


def test_an_occurrence_runs_once_unless_its_run_is_of_an_older_version_and_never_started(
    world: World, tables: Tables
) -> None:
    job, run = world.claimed_run()
    again = world.trigger(job, run.scheduled_for)
    tables.put_trigger(again)
    assert tables.claim(again, job, token="t2", now=NOW, run=run, next_trigger=None) is ClaimResult.STALE
    # a resume (a new version) onto the same occurrence replaces the QUEUED run of the old version
    resumed = replace(job, version=2)
    tables.update_job(job, resumed)
    newer = world.trigger(resumed, run.scheduled_for)
    tables.put_trigger(newer)
    newer_run = world.run(resumed, run.scheduled_for)
    assert tables.claim(newer, resumed, token="t3", now=NOW, run=newer_run, next_trigger=None).claimed
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.job_version == 2


def test_run_now_claims_on_a_paused_job_but_not_on_a_cancelled_one(world: World, tables: Tables) -> None:
    job, _ = world.created()
    paused = replace(job, status=JobStatus.PAUSED, version=2)
    tables.update_job(job, paused)
    manual = world.trigger(paused, NOW, kind=RunKind.MANUAL)
    tables.put_trigger(manual)
    run = replace(world.run(paused, NOW), run_id=manual.run_id, kind=RunKind.MANUAL)
    assert tables.claim(manual, paused, token="t", now=NOW, run=run, next_trigger=None).claimed
    cancelled = replace(paused, status=JobStatus.CANCELLED, version=3)
    tables.update_job(paused, cancelled)
    later = world.trigger(cancelled, NOW + timedelta(seconds=1), kind=RunKind.MANUAL)
    tables.put_trigger(later)
    late_run = replace(world.run(cancelled, later.scheduled_for), run_id=later.run_id, kind=RunKind.MANUAL)
    assert tables.claim(later, cancelled, token="t", now=NOW, run=late_run, next_trigger=None).stale


def test_the_last_claim_of_a_recurring_job_completes_it_and_frees_its_name(
    world: World, tables: Tables
) -> None:
    job, trigger = world.created(name="last")
    run = world.run(job, trigger.scheduled_for)
    result = tables.claim(
        trigger, job, token="t", now=NOW, run=run, next_trigger=None, job_status=JobStatus.COMPLETED
    )
    assert result.claimed
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.status is JobStatus.COMPLETED and stored.next_trigger_at is None
    world.created(name="last")


def test_a_trigger_whose_run_exists_is_claimed_by_the_state_and_token_seen(
    world: World, tables: Tables
) -> None:
    job, trigger = world.created()
    assert tables.claim(
        trigger, job, token="first", now=NOW, run=world.run(job, trigger.scheduled_for), next_trigger=None
    ).claimed
    (claimed,) = tables.query_bucket(trigger.bucket, trigger.shard)
    later = NOW + timedelta(minutes=1)
    assert not tables.claim_trigger_only(replace(claimed, claim_token="someone"), token="x", now=later)
    assert tables.claim_trigger_only(claimed, token="second", now=later)
    assert not tables.claim_trigger_only(claimed, token="third", now=later), "the token moved on"
    assert not tables.claim_trigger_only(world.trigger(job, NOW + timedelta(hours=1)), token="x", now=later)
    retry = replace(world.trigger(job, NOW + timedelta(seconds=30)), is_retry=True)
    tables.put_trigger(retry)
    assert tables.claim_trigger_only(retry, token="wake", now=later)


def test_a_cursor_only_moves_forward(tables: Tables) -> None:
    assert tables.get_cursor(0) is None and tables.oldest_cursor([0, 1]) is None
    assert tables.advance_cursor(0, None, "2026-11-22T12:01")
    assert not tables.advance_cursor(0, None, "2026-11-22T12:01"), "moved as far already"
    assert not tables.advance_cursor(0, "2026-11-22T12:01", "2026-11-22T12:00")
    assert tables.advance_cursor(0, "2026-11-22T12:01", "2026-11-22T12:03")
    assert tables.advance_cursor(1, None, "2026-11-22T12:02")
    assert tables.get_cursor(0) == "2026-11-22T12:03"
    assert tables.oldest_cursor([0, 1, 2]) == "2026-11-22T12:02"

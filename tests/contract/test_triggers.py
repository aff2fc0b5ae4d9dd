"""The contract of ``TriggerStore`` and of the dispatch: buckets, runs written once, retry claims,
cursors."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.frontier import Frontier
from punctual_functions.core.model import (
    JobStatus,
    OnComplete,
    RunKind,
    RunStatus,
    TriggerState,
    bucket_of,
    home_of,
    new_job_id,
    to_ms,
)
from punctual_functions.core.ports import RunNotOurs, Tables
from tests.contract.conftest import NOW, SHARDS, World


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
    tables.delete_trigger(listed[0])
    tables.delete_trigger(listed[1])
    tables.delete_trigger(listed[1])  # deleting what is gone is harmless
    assert tables.query_bucket(early.bucket, early.shard) == []


def test_a_run_is_written_once_and_read_back_in_a_batch(world: World, tables: Tables) -> None:
    job, trigger = world.created()
    run = world.run(job, trigger.scheduled_for)
    assert tables.get_runs([(job.job_id, run.run_id)]) == {}
    assert tables.put_run(run)
    assert not tables.put_run(run), "an occurrence is dispatched once"
    found = tables.get_runs([(job.job_id, run.run_id), (job.job_id, "20261122T000000.000Z-00000000")])
    assert (
        list(found) == [(job.job_id, run.run_id)]
        and found[(job.job_id, run.run_id)].status is RunStatus.QUEUED
    )


def test_an_occurrence_runs_once_unless_its_run_is_of_an_older_version_and_never_started(
    world: World, tables: Tables
) -> None:
    job, run = world.dispatched_run()
    # a resume (a new version) onto the same occurrence replaces the QUEUED run of the old version
    resumed = replace(job, version=2)
    tables.update_job(job, resumed)
    assert tables.put_run(world.run(resumed, run.scheduled_for))
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.job_version == 2
    started = tables.start_attempt(stored, token="l", now=NOW, lease_until=NOW + timedelta(seconds=20))
    assert not tables.put_run(world.run(replace(resumed, version=3), run.scheduled_for)), "it started"
    after = tables.get_run(job.job_id, run.run_id)
    assert after is not None and (after.status, after.lease_token) == (RunStatus.RUNNING, started.lease_token)


def test_a_message_that_overtakes_the_run_write_starts_or_ends_the_run_itself(
    world: World, tables: Tables
) -> None:
    job, trigger = world.created()
    run = world.run(job, trigger.scheduled_for)
    with pytest.raises(RunNotOurs):  # a start that read the run never creates it
        tables.start_attempt(run, token="l", now=NOW, lease_until=NOW + timedelta(seconds=20))
    assert not tables.mark_run(run, RunStatus.SKIPPED, now=NOW, error="x")
    assert tables.get_run(job.job_id, run.run_id) is None
    started = tables.start_attempt(
        run, token="l", now=NOW, lease_until=NOW + timedelta(seconds=20), create=True
    )
    stored = tables.get_run(job.job_id, run.run_id)
    assert stored is not None and stored.status is RunStatus.RUNNING and stored.attempt == 1
    assert (stored.owner, to_ms(stored.scheduled_for), stored.job_version) == (
        job.owner,
        to_ms(run.scheduled_for),
        job.version,
    )
    assert started.lease_token == stored.lease_token
    assert not tables.put_run(run), "the dispatcher's write comes second and changes nothing"
    later = world.run(job, trigger.scheduled_for + timedelta(minutes=1))
    assert tables.mark_run(later, RunStatus.SKIPPED, now=NOW, error="job paused", create=True)
    skipped = tables.get_run(job.job_id, later.run_id)
    assert skipped is not None and skipped.status is RunStatus.SKIPPED and skipped.error == "job paused"
    assert not tables.put_run(later)


def test_the_last_occurrence_of_a_recurring_job_completes_it_and_frees_its_name(
    world: World, tables: Tables
) -> None:
    job, _trigger = world.created(name="last")
    assert not tables.complete_job(replace(job, version=job.version + 1)), "a changed job is not ended"
    assert tables.complete_job(job)
    assert tables.complete_job(job), "completing twice is harmless"
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.status is JobStatus.COMPLETED and stored.next_trigger_at is None
    world.created(name="last")


def test_a_retry_wake_up_is_claimed_by_the_state_and_token_seen(world: World, tables: Tables) -> None:
    job, _ = world.created()
    retry = replace(world.trigger(job, NOW + timedelta(seconds=30)), is_retry=True)
    tables.put_trigger(retry)
    later = NOW + timedelta(minutes=1)
    assert tables.claim_trigger_only(retry, token="first", now=later)
    assert not tables.claim_trigger_only(retry, token="again", now=later), "it is claimed"
    (claimed,) = [t for t in tables.query_bucket(retry.bucket, retry.shard) if t.is_retry]
    assert claimed.state is TriggerState.CLAIMED and claimed.claim_token == "first"
    assert not tables.claim_trigger_only(replace(claimed, claim_token="someone"), token="x", now=later)
    assert tables.claim_trigger_only(claimed, token="second", now=later), "a dead dispatcher's claim"
    assert not tables.claim_trigger_only(claimed, token="third", now=later), "the token moved on"
    assert not tables.claim_trigger_only(world.trigger(job, NOW + timedelta(hours=1)), token="x", now=later)


def test_a_cursor_only_moves_forward(tables: Tables) -> None:
    assert tables.get_cursor(0) is None and tables.oldest_cursor([0, 1]) is None
    assert tables.advance_cursor(0, None, "2026-11-22T12:01")
    assert not tables.advance_cursor(0, None, "2026-11-22T12:01"), "moved as far already"
    assert not tables.advance_cursor(0, "2026-11-22T12:01", "2026-11-22T12:00")
    assert tables.advance_cursor(0, "2026-11-22T12:01", "2026-11-22T12:03")
    assert tables.advance_cursor(1, None, "2026-11-22T12:02")
    assert tables.get_cursor(0) == "2026-11-22T12:03"
    assert tables.oldest_cursor([0, 1, 2]) == "2026-11-22T12:02"


def test_a_completion_with_on_complete_delete_sets_when_the_job_is_gone(world: World, tables: Tables) -> None:
    job, _trigger = world.created(max_runs=3, on_complete=OnComplete.DELETE, delete_after_days=2)
    assert (job.max_runs, job.on_complete, job.delete_after_days, job.expires_at) == (
        3,
        OnComplete.DELETE,
        2,
        None,
    )
    ends = NOW + timedelta(days=2, milliseconds=250)
    assert tables.complete_job(job, ends)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.expires_at == ends.replace(microsecond=0), "a TTL: whole seconds"
    assert stored.gone(ends) and not stored.gone(ends - timedelta(seconds=1))
    one_off, _ = world.created(cron=False, on_complete=OnComplete.DELETE)
    tables.expire_job(one_off.job_id, ends)
    expired = tables.get_job(one_off.job_id)
    assert expired is not None and expired.expires_at == ends.replace(microsecond=0)
    tables.expire_job("job_gone000000000000000000", ends)  # an item already gone stays gone
    assert tables.get_job("job_gone000000000000000000") is None


def test_a_trigger_carries_the_runs_set_off_before_it(world: World, tables: Tables) -> None:
    job, _ = world.created()
    trigger = replace(world.trigger(job, NOW + timedelta(minutes=3)), runs_before=41)
    tables.put_trigger(trigger)
    (stored,) = [t for t in tables.query_bucket(trigger.bucket, trigger.shard) if t.run_id == trigger.run_id]
    assert stored.runs_before == 41


def test_a_one_off_job_at_its_home_is_listed_as_its_own_trigger_until_that_is_removed(
    world: World, tables: Tables
) -> None:
    at = NOW + timedelta(minutes=5)
    job = world.job(cron=False, job_id=new_job_id(bucket_of(at), SHARDS))
    trigger = world.trigger(job, at)
    assert home_of(job.job_id) == (trigger.bucket, trigger.shard), "the id names the trigger's place"
    tables.create_job(job, trigger)
    (listed,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert (listed.job_id, listed.run_id, listed.scheduled_for, listed.fire_at) == (
        job.job_id,
        trigger.run_id,
        trigger.scheduled_for.replace(microsecond=trigger.scheduled_for.microsecond // 1000 * 1000),
        trigger.fire_at.replace(microsecond=trigger.fire_at.microsecond // 1000 * 1000),
    )
    assert (listed.job_version, listed.state, listed.kind) == (1, TriggerState.PENDING, RunKind.SCHEDULED)
    # A change of the job leaves its trigger as it was (the sweep finds it stale: another version).
    changed = replace(job, status=JobStatus.PAUSED, version=2)
    tables.update_job(job, changed)
    (still,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert still.job_version == 1
    tables.delete_trigger(still)
    tables.delete_trigger(still)  # removing what is gone is harmless
    assert tables.query_bucket(trigger.bucket, trigger.shard) == []
    stored = tables.get_job(job.job_id)
    assert stored is not None and (stored.status, stored.version) == (JobStatus.PAUSED, 2), "the job stays"


def test_a_shard_is_held_by_one_sweep_until_it_releases_it_or_its_hold_ends(tables: Tables) -> None:
    later = NOW + timedelta(seconds=50)
    assert tables.hold_shard(0, token="first", now=NOW, until=later) == (True, None, None, False)
    assert tables.get_cursor(0) is None and tables.oldest_cursor([0, 1]) is None, "held, with no cursor yet"
    assert not tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=10), until=later).held
    assert tables.hold_shard(0, token="first", now=NOW + timedelta(seconds=30), until=later), "renewed"
    assert tables.advance_cursor(0, None, "2026-11-22T12:01")
    assert tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=40), until=later)[0] is False, (
        "moving the cursor keeps the hold"
    )
    tables.release_shard(0, token="second")  # not its hold: nothing happens
    assert tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=40), until=later)[0] is False
    tables.release_shard(0, token="first")
    assert tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=40), until=later) == (
        True,
        "2026-11-22T12:01",
        None,
        False,
    ), "released, with the cursor read in the same request"
    assert tables.hold_shard(0, token="third", now=later, until=later + timedelta(seconds=50))[0], (
        "a hold that ended (its sweeper died) is taken"
    )
    assert tables.get_cursor(0) == "2026-11-22T12:01"


def test_a_one_off_jobs_trigger_read_from_its_bucket_carries_the_job_as_stored(
    world: World, tables: Tables
) -> None:
    """The dispatcher reads no job of its own for it: the Query read the job's item. A trigger item
    of its own (a recurring job's) carries none."""
    at = NOW + timedelta(minutes=5)
    job = world.job(cron=False, job_id=new_job_id(bucket_of(at), SHARDS))
    trigger = world.trigger(job, at)
    tables.create_job(job, trigger)
    (listed,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert listed.embedded and listed.job is not None and listed.job == tables.get_job(job.job_id)
    tables.update_job(job, replace(job, status=JobStatus.PAUSED, version=2))
    (again,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert again.job is not None and (again.job.status, again.job.version) == (JobStatus.PAUSED, 2)
    recurring, chain = world.created()
    listed_chain = [t for t in tables.query_bucket(chain.bucket, chain.shard) if t.job_id == recurring.job_id]
    assert [t.job for t in listed_chain] == [None]


def test_a_sweep_releasing_its_shard_leaves_its_frontier_for_the_next_and_says_if_it_was_the_last(
    tables: Tables,
) -> None:
    later = NOW + timedelta(seconds=20)
    at = NOW.replace(microsecond=123000)  # kept to the millisecond (a horizon rounded up to it)
    frontier = Frontier(until=at + timedelta(seconds=100), read_at=at, horizon=at + timedelta(seconds=120))
    assert tables.hold_shard(0, token="first", now=NOW, until=later).frontier is None
    tables.release_shard(0, token="first", frontier=frontier)
    state = tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=60), until=later)
    assert (state.held, state.frontier, state.clean) == (True, frontier, True), (
        "the sweep that left the frontier was the last to take the shard"
    )
    assert not tables.hold_shard(0, token="second", now=NOW + timedelta(seconds=61), until=later).clean, (
        "a renewal is no new take"
    )
    tables.release_shard(0, token="second")  # a sweep that failed: no frontier of its own
    state = tables.hold_shard(0, token="third", now=NOW + timedelta(seconds=70), until=later)
    assert state.frontier == frontier and not state.clean, "the last sweep to take it left no frontier"
    # The third dies holding it; the fourth takes it once its hold ends.
    state = tables.hold_shard(0, token="fourth", now=later + timedelta(seconds=60), until=later)
    assert state.held and not state.clean
    tables.release_shard(0, token="third", frontier=frontier)  # too late: no longer its hold
    assert not tables.hold_shard(0, token="fifth", now=later + timedelta(seconds=200), until=later).clean

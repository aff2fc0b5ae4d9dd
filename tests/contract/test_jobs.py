"""The contract of ``JobStore``: creates, API changes, names, idempotency, listings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import Job, JobStatus, RunStatus, bucket_of, new_job_id
from punctual_functions.core.ports import (
    BadCursorError,
    IdempotencyKeyTaken,
    NameTaken,
    PageFull,
    Tables,
    VersionChanged,
)
from punctual_functions.core.store.items import embeds
from tests.contract.conftest import NOW, SHARDS, World, WriteFault, attempt


def test_a_created_job_reads_back_as_written_to_the_millisecond(world: World, tables: Tables) -> None:
    job, trigger = world.created(name="nightly")
    assert job.created_at == NOW.replace(microsecond=123000)
    assert replace(job, created_at=NOW, updated_at=NOW) == replace(
        world.job(), job_id=job.job_id, name="nightly"
    )
    (stored,) = tables.query_bucket(trigger.bucket, trigger.shard)
    assert stored == replace(
        trigger, scheduled_for=stored.scheduled_for, fire_at=stored.fire_at, written_at=stored.written_at
    )
    assert stored.written_at == NOW.replace(microsecond=123000)
    assert stored.fire_at == trigger.fire_at.replace(microsecond=123000)


def test_a_second_live_job_with_the_name_is_refused_and_nothing_of_it_is_written(
    world: World, tables: Tables
) -> None:
    world.created(name="nightly")
    second = world.job(name="nightly")
    trigger = world.trigger(second, NOW + timedelta(seconds=20))
    with pytest.raises(NameTaken):
        tables.create_job(second, trigger)
    assert tables.get_job(second.job_id) is None
    assert trigger not in tables.query_bucket(trigger.bucket, trigger.shard)
    world.created(name="nightly", owner="bob")  # names are per owner


def test_an_idempotency_key_is_answered_until_it_expires(world: World, tables: Tables) -> None:
    first = world.job()
    tables.create_job(first, None, ("key-1", "fingerprint"))
    assert tables.get_idempotent_create("alice", "key-1", NOW) == (first.job_id, "fingerprint")
    assert tables.get_idempotent_create("bob", "key-1", NOW) is None
    with pytest.raises(IdempotencyKeyTaken):
        tables.create_job(world.job(), None, ("key-1", "other"))
    later = NOW + timedelta(hours=25)
    assert tables.get_idempotent_create("alice", "key-1", later) is None
    tables.create_job(world.job(created_at=later, updated_at=later), None, ("key-1", "again"))


@pytest.mark.parametrize("writes", [1, 2, 3])
def test_a_create_cut_short_leaves_the_writes_before_the_cut_but_never_a_job_and_its_retry_completes(
    world: World, tables: Tables, cut_after: Callable[[int], None], writes: int
) -> None:
    """The writes are ordered, the job last (``JobStore.create_job``): a process dying between two
    leaves what came before it, which a reader finds without a job, and the same create retried
    takes it over."""
    job = world.job(name="nightly")
    trigger = world.trigger(job, NOW + timedelta(minutes=2))  # away from the job's home: its own item
    assert not embeds(job, trigger)
    cut_after(writes)  # the idempotency record, then the name, then the trigger, then the job
    with pytest.raises(WriteFault):
        tables.create_job(job, trigger, ("key-1", "fingerprint"))
    assert tables.get_job(job.job_id) is None
    assert tables.get_idempotent_create("alice", "key-1", NOW) == (job.job_id, "fingerprint")
    holder = tables.name_holder("alice", "nightly")
    assert (holder[0] if holder else None) == (job.job_id if writes >= 2 else None)
    orphans = [t.run_id for t in tables.query_bucket(trigger.bucket, trigger.shard)]
    assert orphans == ([trigger.run_id] if writes >= 3 else [])
    cut_after(99)
    tables.create_job(job, trigger, ("key-1", "fingerprint"))  # the client's retry, the same job id
    assert tables.get_job(job.job_id) is not None
    assert tables.name_holder("alice", "nightly") is not None


def test_a_create_cut_short_before_its_job_leaves_no_trigger_that_the_job_item_was_to_hold(
    world: World, tables: Tables, cut_after: Callable[[int], None]
) -> None:
    """A first occurrence at the job's home is written inside the job's item: with the job write
    lost, a reader of the bucket finds no trigger (only the name)."""
    at = NOW + timedelta(minutes=5)  # world.job's one-off time
    job = world.job(name="nightly", cron=False, job_id=new_job_id(bucket_of(at), SHARDS))
    trigger = world.trigger(job, at)
    assert embeds(job, trigger)
    cut_after(1)  # the name only
    with pytest.raises(WriteFault):
        tables.create_job(job, trigger)
    assert tables.get_job(job.job_id) is None
    assert tables.query_bucket(trigger.bucket, trigger.shard) == []
    holder = tables.name_holder("alice", "nightly")
    assert holder is not None and holder[0] == job.job_id


def test_writing_the_same_create_again_is_harmless(world: World, tables: Tables) -> None:
    job = world.job(name="retried")
    tables.create_job(job, None)
    tables.create_job(job, None)  # the SDK's retry of a write whose answer was lost
    assert tables.get_job(job.job_id) is not None


def test_an_update_is_guarded_by_the_version_read(world: World, tables: Tables) -> None:
    job, _ = world.created()
    changed = replace(job, payload={"n": 2}, version=2, updated_at=NOW + timedelta(seconds=1))
    tables.update_job(job, changed)
    with pytest.raises(VersionChanged):
        tables.update_job(job, replace(job, payload={"n": 3}, version=2))
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.payload == {"n": 2} and stored.version == 2


def test_a_jobs_jitter_is_created_and_changed_with_it(world: World, tables: Tables) -> None:
    job, _ = world.created(jitter_seconds=120)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.jitter_seconds == 120
    tables.update_job(stored, replace(stored, jitter_seconds=30, version=stored.version + 1))
    changed = tables.get_job(job.job_id)
    assert changed is not None and changed.jitter_seconds == 30


def test_a_jobs_calendar_and_on_excluded_are_changed_and_removed_with_it(
    world: World, tables: Tables
) -> None:
    # The console's edit of a job's calendar policy was answered but not stored: the update wrote
    # neither field.
    job, _ = world.created(calendar="bavaria", on_excluded=OnExcluded.NEXT_BUSINESS_DAY)
    stored = tables.get_job(job.job_id)
    assert stored is not None and (stored.calendar, stored.on_excluded) == (
        "bavaria",
        OnExcluded.NEXT_BUSINESS_DAY,
    )
    moved = replace(stored, calendar="berlin", on_excluded=OnExcluded.PREVIOUS_BUSINESS_DAY, version=2)
    tables.update_job(stored, moved)
    changed = tables.get_job(job.job_id)
    assert changed is not None
    assert (changed.calendar, changed.on_excluded) == ("berlin", OnExcluded.PREVIOUS_BUSINESS_DAY)
    tables.update_job(changed, replace(changed, calendar=None, on_excluded=OnExcluded.SKIP, version=3))
    gone = tables.get_job(job.job_id)
    assert gone is not None and (gone.calendar, gone.on_excluded) == (None, OnExcluded.SKIP)


def test_a_pause_with_its_note_and_until_and_the_dispatchers_resume_at_the_same_version(
    world: World, tables: Tables
) -> None:
    job, _ = world.created(pause_on_failures=3)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.pause_on_failures == 3
    at = NOW.replace(microsecond=0)  # the table keeps milliseconds
    until = at + timedelta(hours=2)
    paused = stored.paused(at, by="alice", note="migration", until=until)
    tables.update_job(stored, paused)
    read = tables.get_job(job.job_id)
    assert read is not None and read.status is JobStatus.PAUSED
    assert (read.paused_at, read.paused_by, read.pause_note, read.pause_until) == (
        paused.paused_at,
        "alice",
        "migration",
        until,
    )
    resumed = read.resumed(until, until, new_version=False)
    tables.update_job(read, resumed)
    back = tables.get_job(job.job_id)
    assert back is not None and back.status is JobStatus.ACTIVE and back.version == read.version
    assert (back.paused_at, back.paused_by, back.pause_note, back.pause_until) == (None, None, None, None)
    repaused = back.paused(until, by="bob", note=None, until=None)
    tables.update_job(back, repaused)
    with pytest.raises(VersionChanged):
        tables.update_job(read, resumed)  # a late resume of the old pause: the new one stands


def test_an_update_keeps_what_the_dispatcher_maintains(world: World, tables: Tables) -> None:
    job, _ = world.created(next_trigger_at=NOW + timedelta(seconds=10))
    before = tables.get_job(job.job_id)
    assert before is not None and before.next_trigger_at is not None
    tables.update_job(before, replace(before, tags={"team": "a"}, next_trigger_at=None))  # a tag change
    after = tables.get_job(job.job_id)
    assert after is not None and after.tags == {"team": "a"}
    assert after.next_trigger_at == before.next_trigger_at


def test_an_outcome_writes_the_run_and_leaves_the_job_item_alone(world: World, tables: Tables) -> None:
    job, run = world.running()
    before = tables.get_job(job.job_id)
    tables.finish_attempt(run, attempt(), status=RunStatus.SUCCEEDED, now=NOW)
    assert tables.get_job(job.job_id) == before
    assert [r.status for r in tables.recent_runs(job.job_id, limit=5)] == [RunStatus.SUCCEEDED]


def test_an_ended_jobs_name_is_taken_over_only_from_that_job(world: World, tables: Tables) -> None:
    first, _ = world.created(name="nightly")
    assert (tables.name_holder("alice", "nightly") or ("",))[0] == first.job_id
    with pytest.raises(NameTaken):
        world.created(name="nightly")
    with pytest.raises(NameTaken):
        tables.create_job(world.job(name="nightly"), None, replacing_name_of="job_someone_else")
    second = world.job(name="nightly")
    tables.create_job(second, None, replacing_name_of=first.job_id)
    assert (tables.name_holder("alice", "nightly") or ("",))[0] == second.job_id
    other, _ = world.created(name="weekly")
    with pytest.raises(NameTaken):
        tables.update_job(other, replace(other, name="nightly", version=2), replacing_name_of=first.job_id)
    tables.update_job(other, replace(other, name="nightly", version=2), replacing_name_of=second.job_id)
    assert (tables.name_holder("alice", "nightly") or ("",))[0] == other.job_id


def test_a_rename_moves_the_reservation_and_an_ended_job_frees_it(world: World, tables: Tables) -> None:
    job, _ = world.created(name="a")
    other, _ = world.created(name="b")
    with pytest.raises(NameTaken):
        tables.update_job(job, replace(job, name="b", version=2))
    renamed = replace(job, name="c", version=2)
    tables.update_job(job, renamed)
    world.created(name="a")  # "a" is free again
    tables.update_job(other, replace(other, status=JobStatus.CANCELLED, version=2))
    world.created(name="b")  # a cancelled job holds no name


def test_jobs_are_listed_newest_first_a_page_at_a_time(world: World, tables: Tables) -> None:
    ids = []
    for minute in range(5):
        moment = NOW + timedelta(minutes=minute)
        job = world.job(
            created_at=moment, updated_at=moment, status=JobStatus.PAUSED if minute % 2 else JobStatus.ACTIVE
        )
        tables.create_job(job, None)
        ids.append(job.job_id)
    tables.create_job(world.job(owner="bob"), None)
    first, cursor = tables.list_jobs("alice", limit=2, cursor=None, statuses=None, name=None)
    assert [j.job_id for j in first] == ids[::-1][:2] and cursor is not None
    rest, end = tables.list_jobs("alice", limit=10, cursor=cursor, statuses=None, name=None)
    assert [j.job_id for j in rest] == ids[::-1][2:] and end is None
    paused, _ = tables.list_jobs(
        "alice", limit=10, cursor=None, statuses=frozenset({JobStatus.PAUSED}), name=None
    )
    assert [j.job_id for j in paused] == [ids[3], ids[1]]
    with pytest.raises(BadCursorError):
        tables.list_jobs("bob", limit=2, cursor=cursor, statuses=None, name=None)
    with pytest.raises(BadCursorError):
        tables.list_jobs("alice", limit=2, cursor="not-a-cursor", statuses=None, name=None)


def test_a_full_page_has_a_cursor_even_when_nothing_follows(world: World, tables: Tables) -> None:
    tables.create_job(world.job(), None)
    page, cursor = tables.list_jobs("alice", limit=1, cursor=None, statuses=None, name=None)
    assert len(page) == 1 and cursor is not None
    assert tables.list_jobs("alice", limit=1, cursor=cursor, statuses=None, name=None) == ([], None)


def test_a_page_ended_by_keep_goes_on_from_the_job_it_left_out(world: World, tables: Tables) -> None:
    """``keep`` raising ``PageFull`` (the answer would be too large) ends the page before that job;
    the cursor starts the next page with it, and a first job is kept whatever ``keep`` says."""
    ids = []
    for minute in range(7):
        moment = NOW + timedelta(minutes=minute)
        job = world.job(created_at=moment, updated_at=moment)
        tables.create_job(job, None)
        ids.append(job.job_id)
    newest_first = ids[::-1]

    def three_a_page() -> Callable[[Job], bool]:
        kept: list[str] = []

        def keep(job: Job) -> bool:
            if len(kept) == 3:
                raise PageFull
            kept.append(job.job_id)
            return True

        return keep

    seen: list[str] = []
    cursor = None
    for _ in range(3):
        page, cursor = tables.list_jobs(
            "alice", limit=100, cursor=cursor, statuses=None, name=None, keep=three_a_page()
        )
        seen.extend(job.job_id for job in page)
    assert seen == newest_first and cursor is None

    def never() -> Callable[[Job], bool]:
        def keep(job: Job) -> bool:
            raise PageFull

        return keep

    first, cursor = tables.list_jobs("alice", limit=100, cursor=None, statuses=None, name=None, keep=never())
    assert [job.job_id for job in first] == newest_first[:1] and cursor is not None


def test_an_owners_jobs_are_listed_whole_and_can_be_filtered_after_reading(
    world: World, tables: Tables
) -> None:
    kept, _ = world.created(tags={"keep": "yes"})
    dropped, _ = world.created()
    assert {job.job_id for job in tables.owner_jobs("alice")} == {kept.job_id, dropped.job_id}
    assert tables.owner_jobs("bob") == []
    page, _ = tables.list_jobs(
        "alice", limit=10, cursor=None, statuses=None, name=None, keep=lambda job: bool(job.tags)
    )
    assert [job.job_id for job in page] == [kept.job_id]
    both = frozenset({JobStatus.ACTIVE, JobStatus.COMPLETED})
    page, _ = tables.list_jobs("alice", limit=10, cursor=None, statuses=both, name=None)
    assert len(page) == 2


def test_writing_the_same_update_again_is_harmless(world: World, tables: Tables) -> None:
    job, _ = world.created(name="before")
    changed = replace(
        job, name="after", version=2, updated_at=NOW + timedelta(seconds=1, microseconds=654321)
    )
    tables.update_job(job, changed)
    tables.update_job(job, changed)  # the SDK's retry of a write whose answer was lost: ours, not a conflict
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.name == "after"


def test_jobs_are_found_by_the_start_of_their_name(world: World, tables: Tables) -> None:
    for name in ("report-daily", "report-weekly", "backup", None):
        tables.create_job(world.job(name=name), None)
    found, _ = tables.list_jobs(
        "alice", limit=10, cursor=None, statuses=None, name=None, name_prefix="report-"
    )
    assert sorted(job.name or "" for job in found) == ["report-daily", "report-weekly"]
    exact, _ = tables.list_jobs(
        "alice", limit=10, cursor=None, statuses=None, name="report", name_prefix=None
    )
    assert exact == [], "name stays an exact match"

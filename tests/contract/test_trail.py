"""The contract of ``TrailStore`` (and the trail's part of ``JobStore``): a job's changes read back newest
first, a page at a time; a revision's version is found by its number; a change written with its job's
update lands with it or not at all; one revision is taken once."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.ports import BadCursorError, Tables, VersionChanged
from punctual_functions.core.trail import Change, ChangeAction
from tests.contract.conftest import NOW, World


def change(job_id: str, revision: int, action: ChangeAction, seconds: int = 0, **fields: object) -> Change:
    values: dict[str, object] = {
        "job_id": job_id,
        "revision": revision,
        "at": NOW.replace(microsecond=0) + timedelta(seconds=seconds),  # the table keeps milliseconds
        "action": action,
        "by": "arn:aws:sts::123456789012:assumed-role/dev/alice",
        "request_id": f"req-{revision}-{seconds}",
        **fields,
    }
    return Change(**values)  # type: ignore[arg-type]


def test_a_create_and_its_updates_read_back_newest_first_and_each_revision_with_the_next(
    world: World, tables: Tables
) -> None:
    job = replace(world.job(), revision=1)
    created = change(job.job_id, 1, ChangeAction.CREATED)
    tables.create_job(job, None, change=created)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.revision == 1
    updated = change(
        job.job_id, 2, ChangeAction.UPDATED, 5, before={"payload": 1}, diff={"payload": [1, 2]}, note="why"
    )
    tables.update_job(stored, replace(stored, payload=2), change=updated)
    after = tables.get_job(job.job_id)
    assert after is not None and after.revision == 2 and after.payload == 2
    tables.put_change(change(job.job_id, 2, ChangeAction.RUN_NOW, 9, details={"run_id": "r"}))
    page, cursor = tables.list_changes(job.job_id, 2, None)
    assert [(c.action, c.revision) for c in page] == [(ChangeAction.RUN_NOW, 2), (ChangeAction.UPDATED, 2)]
    assert page[1] == updated and page[0].details == {"run_id": "r"}
    rest, end = tables.list_changes(job.job_id, 2, cursor)
    assert rest == [created] and end is None
    assert tables.revision_changes(job.job_id, 1) == [created, updated], "revision 1's definition: in 2's"
    assert tables.revision_changes(job.job_id, 2) == [updated], "not the action at it"
    assert tables.revision_changes(job.job_id, 3) == []


def test_an_update_refused_for_its_revision_writes_no_change(world: World, tables: Tables) -> None:
    job = replace(world.job(), revision=1)
    tables.create_job(job, None)
    stored = tables.get_job(job.job_id)
    assert stored is not None
    tables.update_job(
        stored, replace(stored, payload="first"), change=change(job.job_id, 2, ChangeAction.UPDATED)
    )
    with pytest.raises(VersionChanged):  # a second change from the same read: revision 2 is taken
        tables.update_job(
            stored, replace(stored, payload="second"), change=change(job.job_id, 2, ChangeAction.PAUSED, 1)
        )
    page, _ = tables.list_changes(job.job_id, 10, None)
    assert [c.action for c in page] == [ChangeAction.UPDATED]
    current = tables.get_job(job.job_id)
    assert current is not None and current.payload == "first"


def test_a_job_made_before_the_trail_takes_its_first_revision_at_its_first_change(
    world: World, tables: Tables
) -> None:
    job = world.job()
    assert job.revision == 0
    tables.create_job(job, None)
    stored = tables.get_job(job.job_id)
    assert stored is not None and stored.revision == 0
    tables.update_job(
        stored, replace(stored, payload="x"), change=change(job.job_id, 1, ChangeAction.UPDATED)
    )
    after = tables.get_job(job.job_id)
    assert after is not None and after.revision == 1


def test_a_cursor_of_another_jobs_trail_is_refused(world: World, tables: Tables) -> None:
    first, second = (replace(world.job(), revision=1) for _ in range(2))
    for job in (first, second):
        for seconds in range(3):
            tables.put_change(change(job.job_id, 1, ChangeAction.RUN_NOW, seconds))
    _, cursor = tables.list_changes(first.job_id, 1, None)
    with pytest.raises(BadCursorError):
        tables.list_changes(second.job_id, 1, cursor)

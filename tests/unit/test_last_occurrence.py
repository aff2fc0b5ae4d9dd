"""A recurring job's last occurrence completes the job when it is dispatched. The simulator found
it lost when the dispatch failed after the completion (a throttled write whose answer was an error,
or a dispatcher dying before the send): the next sweep took the trigger of a completed job for a
stale one and deleted it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from punctual_functions.core.factories import build_dispatcher
from punctual_functions.core.model import JobStatus, RunStatus
from tests.conftest import Clock
from tests.unit.test_engine_on_fakes import SETTINGS, Crash, crash_at, engine_with


@pytest.mark.parametrize("limit", ["end_at", "max_runs"])
def test_the_last_occurrence_is_sent_by_the_next_sweep_after_a_dispatcher_died_having_completed_the_job(
    clock: Clock, limit: str
) -> None:
    engine = engine_with(SETTINGS, clock)
    start = clock() + timedelta(seconds=200)
    schedule = {"rate": "1 minute", "start_at": start.isoformat()}
    extra = {}
    if limit == "end_at":
        schedule["end_at"] = (start + timedelta(seconds=30)).isoformat()  # one occurrence
    else:
        extra["max_runs"] = 1
    created = engine.create(schedule=schedule, **extra)
    clock.advance(100)  # the occurrence is within the look-ahead now
    dying = build_dispatcher(
        SETTINGS,
        store=engine.store,
        queue=engine.queue,
        clock=clock,
        crash_point=crash_at("after_plan_before_send"),
    )
    with pytest.raises(Crash):
        dying.sweep()
    assert engine.store.jobs[created["job_id"]].status is JobStatus.COMPLETED
    assert engine.queue.sent == []
    assert engine.dispatcher.sweep().dispatch.sent == 1, "a fresh sweep sends it"
    clock.now = start
    engine.deliver_all()
    (run,) = engine.store.runs[created["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and run.scheduled_for == start


def test_a_completed_jobs_trigger_beyond_its_max_runs_stays_stale(clock: Clock) -> None:
    """What ``max_runs`` ended (a trigger left by a dispatcher that completed the job for it and died
    before deleting it) never fires."""
    engine = engine_with(SETTINGS, clock)
    start = clock() + timedelta(seconds=200)  # beyond the look-ahead: one trigger, not sent yet
    created = engine.create(schedule={"rate": "1 minute", "start_at": start.isoformat()}, max_runs=2)
    job = engine.store.jobs[created["job_id"]]
    (trigger,) = engine.store.triggers.values()
    engine.store.put_trigger(replace(trigger, runs_before=2))
    engine.store.complete_job(job)
    clock.advance(120)
    assert engine.dispatcher.sweep().dispatch.sent == 0

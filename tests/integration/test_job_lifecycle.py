"""Changing a job while it is scheduled: PATCH, pause, resume, run now, cancel job, cancel run."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

from punctual.testing.receiver import Receiver
from punctual_functions.api.requests import PatchJobIn
from punctual_functions.core.factories import build_run_executor
from punctual_functions.core.model import JobStatus, Reason, RunKind, RunStatus, iso
from tests.integration.conftest import Harness


def runs_of(h: Harness, job_id: str) -> list[Any]:
    runs, _ = h.store.list_runs(job_id, limit=100)
    return runs


def tick(h: Harness, minutes: int = 1) -> None:
    for _ in range(minutes):
        h.clock.advance(60)
        h.dispatcher.sweep()


def test_patching_the_schedule_retires_old_triggers_and_follows_the_new_one(
    harness: Harness, receiver: Receiver
) -> None:
    # Given an hourly job
    job = harness.create(schedule={"cron": "0 * * * *"}, target={"type": "http", "url": receiver.url + "/p"})
    assert job["next_run_at"] == "2026-11-22T13:00:00.000Z"
    # When it is changed to fire at 12:30
    patched = harness.service.patch_job(
        harness.owner, job["job_id"], PatchJobIn.model_validate({"schedule": {"cron": "30 12 * * *"}})
    )
    assert patched["next_run_at"] == "2026-11-22T12:30:00.000Z" and patched["version"] == 2
    # Then the sweeps up to 13:05 dispatch 12:30 only: the 13:00 trigger of the old schedule never fires
    tick(harness, 65)
    scheduled = sorted(iso(run.scheduled_for) for run in runs_of(harness, job["job_id"]))
    assert scheduled == ["2026-11-22T12:30:00.000Z"]


def test_a_run_queued_before_a_schedule_change_is_skipped(harness: Harness, receiver: Receiver) -> None:
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=30))},
        target={"type": "http", "url": receiver.url + "/q"},
    )
    (old_message, _) = harness.queue.sent[0]
    new_time = harness.clock() + timedelta(seconds=50)
    harness.service.patch_job(
        harness.owner, job["job_id"], PatchJobIn.model_validate({"schedule": {"at": iso(new_time)}})
    )
    harness.clock.advance(60)
    while harness.work():
        pass
    runs = {iso(run.scheduled_for): run for run in runs_of(harness, job["job_id"])}
    old = runs[iso(harness.store.get_run(job["job_id"], old_message.run_id).scheduled_for)]  # type: ignore[union-attr]
    assert old.status is RunStatus.SKIPPED and old.error == "superseded by a change to the job"
    assert runs[iso(new_time)].status is RunStatus.SUCCEEDED
    assert len(receiver.for_path("/q")) == 1


def test_patching_target_and_payload_applies_to_the_next_run(harness: Harness, receiver: Receiver) -> None:
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=5))},
        target={"type": "http", "url": receiver.url + "/old"},
    )
    harness.service.patch_job(
        harness.owner,
        job["job_id"],
        PatchJobIn.model_validate(
            {"target": {"type": "http", "url": receiver.url + "/new"}, "payload": {"v": 2}}
        ),
    )
    harness.work()
    assert receiver.for_path("/old") == []
    assert [d.json for d in receiver.for_path("/new")] == [{"v": 2}]


def first_minute_after_the_lookahead(h: Harness, moment: datetime) -> datetime:
    """The next trigger of an every-minute job dispatched at ``moment``: its occurrences up to the
    look-ahead were dispatched then, the first one beyond it waits in the table."""
    horizon = moment + timedelta(seconds=h.settings.lookahead_seconds)
    return (horizon + timedelta(minutes=1)).replace(second=0, microsecond=0)


def test_pause_stops_firing_and_resume_goes_on_from_now_with_the_pause_in_the_history(
    harness: Harness, receiver: Receiver
) -> None:
    # Given a job every minute, paused at once with a note
    job = harness.create(schedule={"cron": "* * * * *"}, target={"type": "http", "url": receiver.url + "/m"})
    paused_at = harness.clock.now
    paused = harness.service.pause_job(harness.owner, job["job_id"], note="maintenance")
    assert paused["status"] == "PAUSED" and paused["upcoming"] == [] and paused["next_run_at"] is None
    # When ten and a half minutes pass: nothing runs (the run dispatched before the pause is skipped)
    tick(harness, 10)
    harness.clock.advance(30)
    while harness.work():
        pass
    assert receiver.for_path("/m") == []
    assert {run.status for run in runs_of(harness, job["job_id"])} <= {RunStatus.SKIPPED}
    # Then resuming goes on with the next occurrence; nothing due while paused runs...
    resumed_at = harness.clock.now
    resumed = harness.service.resume_job(harness.owner, job["job_id"])
    assert resumed["status"] == "ACTIVE" and resumed["next_run_at"] == iso(
        resumed_at.replace(second=0) + timedelta(minutes=1)
    )
    while harness.work():
        pass
    assert receiver.for_path("/m") == []
    # ...and one row of the history says so: the pause, its note, who, and the occurrences it covered
    (row,) = [run for run in runs_of(harness, job["job_id"]) if run.kind is RunKind.PAUSE]
    assert (row.status, row.reason, row.note, row.by) == (
        RunStatus.SKIPPED,
        Reason.PAUSED,
        "maintenance",
        harness.owner,
    )
    assert (row.scheduled_for, row.finished_at) == (paused_at, resumed_at)
    # The two minutes dispatched ahead before the pause have rows of their own (SKIPPED); the span
    # counts the other eight: each of the ten occurrences once
    own = [
        run
        for run in runs_of(harness, job["job_id"])
        if run.kind is RunKind.SCHEDULED and paused_at < run.scheduled_for < resumed_at
    ]
    assert len(own) == 2 and {run.status for run in own} == {RunStatus.SKIPPED}
    assert row.covers == 8 and row.covers_until == resumed_at.replace(second=0)
    assert harness.next_trigger_at(job["job_id"]) == first_minute_after_the_lookahead(harness, resumed_at)


def test_resume_with_skip_policy_runs_nothing_missed(harness: Harness, receiver: Receiver) -> None:
    job = harness.create(
        schedule={"cron": "* * * * *", "misfire": "skip"}, target={"type": "http", "url": receiver.url + "/s"}
    )
    harness.service.pause_job(harness.owner, job["job_id"])
    tick(harness, 5)
    harness.clock.advance(30)
    resumed_at = harness.clock.now
    harness.service.resume_job(harness.owner, job["job_id"])
    while harness.work():
        pass
    assert receiver.for_path("/s") == []
    assert harness.next_trigger_at(job["job_id"]) == first_minute_after_the_lookahead(harness, resumed_at)


def test_a_paused_one_off_runs_when_resumed_even_if_its_run_was_skipped(
    harness: Harness, receiver: Receiver
) -> None:
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=20))},
        target={"type": "http", "url": receiver.url + "/o"},
    )
    harness.service.pause_job(harness.owner, job["job_id"])
    harness.clock.advance(30)
    while harness.work():
        pass
    assert receiver.for_path("/o") == []
    harness.service.resume_job(harness.owner, job["job_id"])
    while harness.work():
        pass
    assert len(receiver.for_path("/o")) == 1
    assert harness.job(job["job_id"]).status is JobStatus.COMPLETED


def test_run_now_runs_once_even_while_paused(harness: Harness, receiver: Receiver) -> None:
    job = harness.create(
        schedule={"cron": "0 0 1 1 *"}, target={"type": "http", "url": receiver.url + "/now"}
    )
    harness.service.pause_job(harness.owner, job["job_id"])
    run = harness.service.run_now(harness.owner, job["job_id"])
    assert run["status"] == "QUEUED" and run.get("kind") == "manual"
    harness.work()
    assert len(receiver.for_path("/now")) == 1
    assert harness.store.get_run(job["job_id"], run["run_id"]).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    assert harness.job(job["job_id"]).status is JobStatus.PAUSED


def test_cancelling_a_job_cancels_its_queued_run_and_stops_the_chain(
    harness: Harness, receiver: Receiver
) -> None:
    job = harness.create(
        schedule={"cron": "*/10 * * * * *", "misfire": "run_all"},
        target={"type": "http", "url": receiver.url + "/c"},
    )
    cancelled = harness.service.cancel_job(harness.owner, job["job_id"])
    assert cancelled["status"] == "CANCELLED" and cancelled["upcoming"] == []
    tick(harness, 3)
    while harness.work():
        pass
    assert receiver.for_path("/c") == []
    statuses = {run.status for run in runs_of(harness, job["job_id"])}
    assert statuses == {RunStatus.CANCELLED}, statuses


def test_cancelling_a_queued_run_means_it_never_starts(harness: Harness, receiver: Receiver) -> None:
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=5))},
        target={"type": "http", "url": receiver.url + "/r"},
    )
    (message, _) = harness.queue.sent[0]
    run = harness.service.cancel_run(harness.owner, job["job_id"], message.run_id)
    assert run["status"] == "CANCELLED"
    harness.work()
    assert receiver.for_path("/r") == []


def test_cancelling_a_running_http_call_aborts_it_without_retry(harness: Harness) -> None:
    release = threading.Event()

    def slow(_path: str, _n: int) -> tuple[int, bytes]:
        release.wait(20)
        return 200, b"too late"

    fast_heartbeat = build_run_executor(
        harness.settings.replace(lease_seconds=3),
        store=harness.store,
        queue=harness.queue,
        targets=harness.executor.targets,
        clock=harness.clock,
    )
    with Receiver(slow) as receiver:
        job = harness.create(
            schedule={"at": iso(harness.clock())},
            target={"type": "http", "url": receiver.url + "/slow", "timeout_seconds": 30},
            retry={"max_attempts": 3},
        )
        (message, _) = harness.queue.sent[0]
        worker = threading.Thread(target=fast_heartbeat.handle, args=(message, None))
        started = time.monotonic()
        worker.start()
        while not receiver.for_path("/slow"):
            time.sleep(0.05)
        harness.service.cancel_run(harness.owner, job["job_id"], message.run_id)
        worker.join(timeout=10)
        elapsed = time.monotonic() - started
        release.set()
    assert not worker.is_alive(), "the worker did not abort the call"
    assert elapsed < 10
    run = harness.store.get_run(job["job_id"], message.run_id)
    assert run is not None and run.status is RunStatus.CANCELLED and run.attempt == 1


def test_names_are_freed_when_a_one_off_job_completes(harness: Harness, receiver: Receiver) -> None:
    harness.create(
        name="report",
        schedule={"at": iso(harness.clock())},
        target={"type": "http", "url": receiver.url + "/n"},
    )
    harness.work()
    again = harness.create(
        name="report",
        schedule={"at": iso(harness.clock() + timedelta(hours=1))},
        target={"type": "http", "url": receiver.url + "/n"},
    )
    assert again["name"] == "report"


def test_a_stale_message_cannot_skip_the_run_that_replaced_it(harness: Harness, receiver: Receiver) -> None:
    # Given a run queued for version 1, then the job paused (v2) and resumed (v3) before any worker
    # looked at it: the resume re-queues the same occurrence as a version-3 run.
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=5))},
        target={"type": "http", "url": receiver.url + "/v"},
    )
    (message, _) = harness.queue.sent[0]
    stale_view = harness.store.get_run(job["job_id"], message.run_id)
    harness.service.pause_job(harness.owner, job["job_id"])
    harness.service.resume_job(harness.owner, job["job_id"])
    assert stale_view is not None
    # When a worker that read the version-1 run tries to skip it
    skipped = harness.store.mark_run(stale_view, RunStatus.SKIPPED, now=harness.clock(), error="job paused")
    # Then the write is refused and the replacement still runs
    assert not skipped
    while harness.work():
        pass
    assert len(receiver.for_path("/v")) == 1

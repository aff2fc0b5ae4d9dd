"""The dispatcher against moto: dispatch (plan → send → record), chains, crashes, races and misfires."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from punctual_functions.api.requests import CreateJobIn, PatchJobIn
from punctual_functions.api.views import JobView
from punctual_functions.core.model import JobStatus, Reason, RunStatus, bucket_of, home_of, iso
from punctual_functions.core.pacing import SEND_LEAD
from punctual_functions.core.store.keys import job_key, trigger_pk
from tests.integration.conftest import Harness, SimulatedCrash


def sent_run_ids(h: Harness) -> list[str]:
    return [message.run_id for message, _delay in h.queue.sent]


def at_job(h: Harness, seconds_from_now: float, **extra: object) -> JobView:
    due = h.clock() + timedelta(seconds=seconds_from_now)
    return h.create(
        schedule={"at": iso(due)}, target={"type": "http", "url": "http://127.0.0.1:9/hook"}, **extra
    )


def test_job_beyond_lookahead_is_sent_by_the_sweep_that_reaches_it(harness: Harness) -> None:
    # Given a one-off job due in ten minutes
    due = harness.clock() + timedelta(seconds=600)
    job = at_job(harness, 600)
    assert harness.queue.sent == [], "a job beyond the look-ahead must wait for the sweep"
    # When the dispatcher ticks every minute
    sent_at: list[datetime] = []
    for _ in range(9):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
        sent_at += [harness.clock()] * (len(harness.queue.sent) - len(sent_at))
    # Then it was sent exactly once, by the tick whose look-ahead reached it, at the moment that
    # makes it visible a head start before its second (the sweep waited for that moment)
    assert len(harness.queue.sent) == 1
    message, delay = harness.queue.sent[0]
    assert message.job_id == job["job_id"]
    # (a request is made SEND_LEAD before its moment: SQS counts the delay from when it gets there)
    assert sent_at[0] + timedelta(seconds=delay) == due - harness.settings.head_start - SEND_LEAD
    run = harness.store.get_run(message.job_id, message.run_id)
    assert run is not None and run.status is RunStatus.QUEUED


def test_job_due_within_lookahead_is_sent_by_the_api_at_once(harness: Harness) -> None:
    job = at_job(harness, 5)
    assert [m.job_id for m, _ in harness.queue.sent] == [job["job_id"]]
    assert harness.queue.sent[0][1] == 4, "at once: visible 0.75 s before its head start, never after it"
    # And a sweep does not send it again
    harness.dispatcher.sweep()
    assert len(harness.queue.sent) == 1


def test_a_time_in_the_past_runs_at_once(harness: Harness) -> None:
    at_job(harness, -3600)
    assert len(harness.queue.sent) == 1 and harness.queue.sent[0][1] == 0


def test_recurring_chain_sends_each_occurrence_once(harness: Harness) -> None:
    # Given a seconds-level cron job
    job = harness.create(
        schedule={"cron": "*/10 * * * * *"}, target={"type": "http", "url": "http://127.0.0.1:9/"}
    )
    # When the dispatcher ticks for five minutes (each tick's sends are paced: its clock moves on)
    start = harness.clock()
    for _ in range(5):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
    # Then every 10-second slot up to now + look-ahead was sent exactly once
    ids = sent_run_ids(harness)
    assert len(ids) == len(set(ids)), "an occurrence was sent twice"
    slots = {harness.store.get_run(job["job_id"], run_id).scheduled_for for run_id in ids}  # type: ignore[union-attr]
    expected = {start + timedelta(seconds=10 * k) for k in range(1, 43)}
    assert expected <= slots, f"missing slots: {sorted(expected - slots)[:3]}"
    assert harness.next_trigger_at(job["job_id"]) is not None


def _scheduled_slots(h: Harness, job_id: str) -> list[datetime]:
    runs = [h.store.get_run(job_id, run_id) for run_id in sent_run_ids(h)]
    return sorted(run.scheduled_for for run in runs if run is not None and run.job_id == job_id)


def _every_10s_until_lookahead(h: Harness, after: datetime) -> list[datetime]:
    """The 10-second slots after ``after`` up to now + look-ahead."""
    horizon = h.clock() + timedelta(seconds=h.settings.lookahead_seconds)
    first = h.clock().replace(microsecond=0) + timedelta(seconds=10 - h.clock().second % 10)
    slots = [first + timedelta(seconds=10 * k) for k in range(50)]
    return [slot for slot in slots if after < slot <= horizon]


def test_a_seconds_cron_is_dispatched_up_to_the_lookahead_by_its_create_not_by_the_next_tick(
    harness: Harness,
) -> None:
    # Given a 10-second cron created between two ticks
    job = harness.create(
        schedule={"cron": "*/10 * * * * *"}, target={"type": "http", "url": "http://127.0.0.1:9/"}
    )
    # Then, with no tick at all, every occurrence due before now + look-ahead was already sent: the
    # dispatch of each wrote the next, and the API went on dispatching the chain (the next tick may come
    # up to a minute later, after several of them were due)
    expected = _every_10s_until_lookahead(harness, harness.clock() - timedelta(seconds=1))
    assert _scheduled_slots(harness, job["job_id"]) == expected
    ids = sent_run_ids(harness)
    assert len(ids) == len(set(ids)), "an occurrence was sent twice"
    # And the next tick continues the chain without sending any of them again
    harness.clock.advance(60)
    harness.dispatcher.sweep()
    ids = sent_run_ids(harness)
    assert len(ids) == len(set(ids)), "the tick sent an occurrence the API had sent"


@pytest.mark.parametrize("change", ["resume", "patch"])
def test_a_seconds_cron_resumed_or_rescheduled_is_dispatched_up_to_the_lookahead_at_once(
    harness: Harness, change: str
) -> None:
    # Given a paused job (its queued runs are superseded), or one rescheduled to a 10-second cron
    job = harness.create(
        schedule={"cron": "0 3 * * *"}, target={"type": "http", "url": "http://127.0.0.1:9/"}
    )
    harness.clock.advance(30)
    if change == "resume":
        harness.service.patch_job(
            harness.owner, job["job_id"], PatchJobIn.model_validate({"schedule": {"cron": "*/10 * * * * *"}})
        )
        harness.service.pause_job(harness.owner, job["job_id"])
        harness.clock.advance(5)
        sent_before = len(harness.queue.sent)
        harness.service.resume_job(harness.owner, job["job_id"])
    else:
        sent_before = len(harness.queue.sent)
        harness.service.patch_job(
            harness.owner, job["job_id"], PatchJobIn.model_validate({"schedule": {"cron": "*/10 * * * * *"}})
        )
    # Then every occurrence up to now + look-ahead is sent by that request, not by the next tick
    sent = [message.run_id for message, _ in harness.queue.sent[sent_before:]]
    runs = [harness.store.get_run(job["job_id"], run_id) for run_id in sent]
    slots = sorted(run.scheduled_for for run in runs if run is not None)
    expected = _every_10s_until_lookahead(harness, harness.clock())
    assert set(expected) <= set(slots), f"not sent at once: {sorted(set(expected) - set(slots))[:3]}"


def test_two_dispatchers_at_once_dispatch_each_occurrence_once(harness: Harness) -> None:
    for offset in range(130, 180, 2):
        at_job(harness, offset)
    harness.clock.advance(60)
    barrier = threading.Barrier(2)

    def sweep() -> None:
        barrier.wait()
        harness.dispatcher.sweep()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Both may send an occurrence they read as not dispatched at the same moment (the worker's
    # conditional start absorbs the duplicate); each occurrence has one run.
    ids = sent_run_ids(harness)
    assert len(set(ids)) == 25 and len(ids) <= 50
    jobs = {message.job_id for message, _ in harness.queue.sent}
    assert sum(len(harness.store.list_runs(job_id, limit=5)[0]) for job_id in jobs) == 25


def test_dispatcher_dying_between_plan_and_send_loses_nothing(harness: Harness) -> None:
    job = at_job(harness, 200)
    harness.clock.advance(90)
    harness.crash_at.add("after_plan_before_send")
    with pytest.raises(SimulatedCrash):
        harness.dispatcher.sweep()
    harness.crash_at.clear()
    assert harness.queue.sent == []
    # Nothing was sent and no run written: the next tick dispatches it, once
    harness.clock.advance(10)
    harness.dispatcher.sweep()
    harness.clock.advance(60)
    harness.dispatcher.sweep()
    assert [m.job_id for m, _ in harness.queue.sent] == [job["job_id"]]


def test_dispatcher_dying_after_send_causes_only_a_harmless_duplicate(harness: Harness, receiver) -> None:
    job = harness.create(
        schedule={"at": iso(harness.clock() + timedelta(seconds=200))},
        target={"type": "http", "url": receiver.url + "/dup"},
    )
    harness.clock.advance(90)
    harness.crash_at.add("after_send_before_record")
    with pytest.raises(SimulatedCrash):
        harness.dispatcher.sweep()
    harness.crash_at.clear()
    harness.clock.advance(40)
    harness.dispatcher.sweep()
    assert len(harness.queue.sent) == 2, "sent, but its run not written: the next tick sends it again"
    harness.clock.advance(75)
    while harness.work():
        pass
    assert len(receiver.for_path("/dup")) == 1, "the duplicate message must not execute the run twice"
    assert harness.job(job["job_id"]).status is JobStatus.COMPLETED


@pytest.mark.moto_only("reaches past the ports into boto3")
def test_trigger_of_a_changed_job_never_fires(harness: Harness) -> None:
    job = at_job(harness, 600)
    harness.store.client.update_item(  # type: ignore[attr-defined]
        TableName=harness.settings.table_name,
        Key=job_key(str(job["job_id"])),
        UpdateExpression="SET version = :v",
        ExpressionAttributeValues={":v": {"N": "2"}},
    )
    for _ in range(11):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
    assert harness.queue.sent == []


def test_cursor_moves_past_empty_buckets_and_a_healthy_sweep_has_no_lag(harness: Harness) -> None:
    """A tick a second after the minute leaves the cursor on the minute before (it passes a bucket a
    safety margin after its end): that is where a healthy sweep is, so its lag is 0, not 60."""
    harness.clock.advance(1 - harness.clock().second)  # hh:mm:01
    harness.dispatcher.sweep()
    for _ in range(3):
        harness.clock.advance(60)
        report = harness.dispatcher.sweep()
        assert report.lag_seconds == 0, report
    assert report.buckets_swept <= 4 * 5


def test_the_lag_counts_the_time_a_stopped_dispatcher_has_not_swept(harness: Harness, call) -> None:
    harness.clock.advance(1 - harness.clock().second)
    harness.dispatcher.sweep()
    status, stats = call("GET", "/v1/stats")
    assert stats["dispatcher_lag_seconds"] == 0, "read between two healthy ticks"
    harness.clock.advance(59)
    assert call("GET", "/v1/stats")[1]["dispatcher_lag_seconds"] == 0, "just before the next tick"
    harness.clock.advance(5 * 60 - 59)  # five ticks missed: the first is within a tick's cadence
    status, stats = call("GET", "/v1/stats")
    assert status == 200 and 230 <= stats["dispatcher_lag_seconds"] <= 240, stats
    harness.dispatcher.sweep()
    assert call("GET", "/v1/stats")[1]["dispatcher_lag_seconds"] == 0, "caught up in one tick"


@pytest.mark.parametrize(
    ("policy", "expected_runs", "expected_skipped", "reason", "covered"),
    [
        ("run_once", 1, 1, Reason.MISFIRE_COLLAPSED, 7),
        ("skip", 0, 1, Reason.MISFIRE_SKIPPED, 8),
        ("run_all", 8, 0, None, 0),
    ],
)
def test_outage_follows_the_misfire_policy(
    harness: Harness,
    policy: str,
    expected_runs: int,
    expected_skipped: int,
    reason: Reason | None,
    covered: int,
) -> None:
    # Given a job firing every minute, dispatched once
    job = harness.create(
        schedule={"cron": "* * * * *", "misfire": policy},
        target={"type": "http", "url": "http://127.0.0.1:9/"},
    )
    harness.dispatcher.sweep()
    before = set(sent_run_ids(harness))
    # When the dispatcher is down for ten minutes, then ticks again
    harness.clock.advance(600)
    harness.dispatcher.sweep()
    # Then the missed occurrences follow the policy, and the chain continues into the future
    new = [r for r in sent_run_ids(harness) if r not in before]
    runs, _ = harness.store.list_runs(job["job_id"], limit=100)
    # (occurrences 12:03 to 12:10 were missed; 12:01 and 12:02 had been dispatched before the outage)
    missed = [r for r in runs if r.run_id not in before and r.scheduled_for <= harness.clock.now]
    queued_missed = [r for r in missed if r.status is RunStatus.QUEUED]
    skipped = [r for r in missed if r.status is RunStatus.SKIPPED]
    assert len(queued_missed) == expected_runs, [(iso(r.scheduled_for), r.status) for r in missed]
    assert len(skipped) == expected_skipped
    # Every missed occurrence is in the history: one row for the stretch the policy did not run
    assert [(r.reason, r.covers) for r in skipped] == ([(reason, covered)] if reason else [])
    assert sum(r.covers for r in skipped) + expected_runs == 8
    future = harness.next_trigger_at(job["job_id"])
    assert future is not None and future > harness.clock.now
    assert len(new) >= expected_runs


def test_dispatcher_dying_before_the_cursor_moves_loses_nothing(harness: Harness) -> None:
    job = at_job(harness, 150)
    harness.crash_at.add("before_cursor_advance")
    harness.clock.advance(60)
    with pytest.raises(SimulatedCrash):
        harness.dispatcher.sweep()
    harness.crash_at.clear()
    sent_before_restart = list(harness.queue.sent)
    harness.clock.advance(60)
    harness.dispatcher.sweep()
    ids = sent_run_ids(harness)
    assert [m.job_id for m, _ in harness.queue.sent] == [job["job_id"]], (sent_before_restart, ids)


def _items_of(harness: Harness, job_id: str, kind: str) -> list[dict[str, Any]]:
    """The table's items of ``job_id`` of one kind: ``job`` (``JOB`` or ``JOB#...``), ``trigger``."""
    client = harness.store.client  # type: ignore[attr-defined]
    items = client.scan(TableName=harness.settings.table_name)["Items"]
    mine = [item for item in items if item.get("job_id", {}).get("S") == job_id]
    if kind == "job":
        return [item for item in mine if item["sk"]["S"] == "JOB" or item["sk"]["S"].startswith("JOB#")]
    return [item for item in mine if item["pk"]["S"].startswith("T#") and item["sk"]["S"][0].isdigit()]


@pytest.mark.moto_only("reads the table's items")
def test_a_one_off_job_is_one_item_its_own_trigger_and_a_jittered_one_has_a_trigger_item(
    harness: Harness,
) -> None:
    # Given a one-off job and a jittered one, due in ten minutes
    plain = str(at_job(harness, 600)["job_id"])
    jittered = str(at_job(harness, 600, jitter_seconds=30)["job_id"])
    # Then the plain one is one item (and its index entry) in the trigger partition of its minute
    (item,) = _items_of(harness, plain, "job")
    assert {"pk": item["pk"], "sk": item["sk"]} == job_key(plain)
    assert item["pk"]["S"].startswith("T#") and "trigger" in item
    assert _items_of(harness, plain, "trigger") == []
    # And the jittered one is a job item and a trigger item, as every recurring job
    assert home_of(jittered) is None
    assert len(_items_of(harness, jittered, "job")) == len(_items_of(harness, jittered, "trigger")) == 1
    # When the ticks reach them, each is sent once, and the plain one keeps its job item
    for _ in range(11):
        harness.clock.advance(60)
        harness.dispatcher.sweep()
    assert sorted(message.job_id for message, _delay in harness.queue.sent) == sorted([plain, jittered])
    assert harness.store.get_job(plain) is not None


@pytest.mark.moto_only("reads the table's items")
def test_a_create_retried_after_its_home_minute_writes_a_trigger_of_its_own_and_runs(
    harness: Harness,
) -> None:
    # Given a create of a one-off job due in ten minutes that died after its idempotency record,
    # before its job item
    body = CreateJobIn.model_validate(
        {
            "schedule": {"at": iso(harness.clock() + timedelta(seconds=600))},
            "target": {"type": "http", "url": "http://127.0.0.1:9/hook"},
        }
    )
    job_id = str(harness.service.create_job(harness.owner, body, idempotency_key="k1")["job_id"])
    harness.store.client.delete_item(  # type: ignore[attr-defined]
        TableName=harness.settings.table_name, Key=job_key(job_id)
    )
    assert harness.queue.sent == []
    # When it is retried after the minute its id names has passed
    harness.clock.advance(700)
    again = harness.service.create_job(harness.owner, body, idempotency_key="k1")
    # Then the same job is written at its home, with a trigger of its own in the current minute,
    # which the request dispatches at once (its time has passed)
    assert again["job_id"] == job_id
    home = home_of(job_id)
    assert home is not None
    (job_item,) = _items_of(harness, job_id, "job")
    assert job_item["pk"]["S"] == trigger_pk(*home) and "trigger" not in job_item
    (trigger_item,) = _items_of(harness, job_id, "trigger")
    assert trigger_item["pk"]["S"] == trigger_pk(bucket_of(harness.clock()), home[1])
    assert [message.job_id for message, _delay in harness.queue.sent] == [job_id]

"""JobService, Dispatcher and RunExecutor wired to nothing but the in-memory ports: the fakes of the
table, the queue, the targets and the fan-out. Each test runs in milliseconds."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from punctual.testing.fakes.store import MemoryStore
from punctual_functions.api.backfill import backfill as backfill_job
from punctual_functions.api.errors import Conflict, InvalidInput, NotFound, from_validation
from punctual_functions.api.requests import BackfillIn, CreateJobIn, PatchJobIn
from punctual_functions.api.views import BackfillView
from punctual_functions.core.factories import build_dispatcher, build_job_service
from punctual_functions.core.model import (
    JobStatus,
    Reason,
    Run,
    RunKind,
    RunStatus,
    bucket_of,
    fire_time,
    iso,
    jitter_of,
    make_trigger,
)
from punctual_functions.core.pacing import SEND_LEAD
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.settings import Settings
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.sweep import FANOUT_SPREAD, shard_groups
from punctual_functions.dispatcher import handler as dispatcher_handler
from punctual_functions.worker.calls import OUTCOME_GRACE
from punctual_functions.worker.context import ReturnLater
from punctual_functions.worker.followups import FollowUps
from tests.conftest import Clock
from tests.fakes.invoker import RecordingInvoker
from tests.fakes.queue import MemoryQueue
from tests.fakes.targets import OK, ScriptedTargets, failure
from tests.harness import Harness

HOOK = {"type": "http", "url": "https://example.com/hook"}
SETTINGS = Settings(table_name="memory", queue_url="memory://work", dlq_url="memory://dlq", shard_count=4)


# The engine on the fakes: tests/harness.py's services over the in-memory table, queue and targets.
Engine = Harness[MemoryStore, MemoryQueue, ScriptedTargets]


def engine_with(settings: Settings, clock: Clock) -> Engine:
    """The engine on the in-memory fakes, with these settings."""
    policy = NetworkPolicy(allow_loopback=False, allow_list=("example.com",))
    return Engine(
        settings,
        clock,
        MemoryStore(),
        MemoryQueue(delays=False),
        ScriptedTargets(),
        policy,
        default_target=HOOK,
    )


@pytest.fixture
def engine(clock: Clock) -> Iterator[Engine]:
    yield engine_with(SETTINGS, clock)


def test_a_retriable_failure_is_retried_then_the_one_off_job_completes(engine: Engine) -> None:
    engine.targets.outcomes = [failure(503, retriable=True)]
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5)
    engine.deliver_all()  # attempt 1: 503, the message goes back for the retry
    engine.clock.advance(60)
    engine.deliver_all()  # attempt 2: 200
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and [a.outcome for a in run.attempts] == [
        "RETRIABLE",
        "SUCCEEDED",
    ]
    view = engine.service.get_job("alice", job["job_id"])
    assert view["status"] == "COMPLETED" and view["last_run"] is not None
    assert view["last_run"]["status"] == "SUCCEEDED"
    assert engine.store.jobs[job["job_id"]].status is JobStatus.ACTIVE, "derived, not written"
    assert [d.attempt for _spec, d, _timeout in engine.targets.deliveries] == [1, 2]


def test_the_call_is_composed_before_the_second_and_only_the_request_waits_for_it(engine: Engine) -> None:
    """Ten runs due at one second that composed their requests at the second reached their calls 3 to
    10 ms late on a quiet core: the worker hands the target its wait instead of waiting first."""
    due = engine.clock() + timedelta(seconds=5)
    engine.create(schedule={"at": due.isoformat()})
    seen: dict[str, Any] = {}
    plain = ScriptedTargets.execute

    def execute(
        spec: Any, delivery: Any, timeout_seconds: float, cancel: Any = None, wait: Any = None
    ) -> Any:
        seen["called"] = engine.clock()
        seen["wait"] = wait
        return plain(engine.targets, spec, delivery, timeout_seconds, cancel, wait=wait)

    engine.targets.execute = execute  # type: ignore[method-assign]
    engine.clock.now = due - timedelta(milliseconds=250)  # the message arrives its head start early
    engine.deliver_all()
    assert seen["wait"] is not None and seen["called"] < due, "handed over before the second"
    assert engine.clock() >= due, "the wait it was handed ends at the second"
    (run,) = [r for runs in engine.store.runs.values() for r in runs.values()]
    assert run.status is RunStatus.SUCCEEDED and run.lateness_ms == 0


def test_an_outcome_is_written_after_the_other_calls_due_at_its_second(engine: Engine) -> None:
    """At a busy second the outcomes' table writes took the CPU the calls still to go out needed
    (twenty runs due at one second in one process: the last calls 40-50 ms late). A run whose call
    returned waits, before its outcome, for the executor's other calls due at that second."""
    due = engine.clock() + timedelta(seconds=5)
    job = engine.create(schedule={"at": due.isoformat()})
    waited: list[tuple[datetime, bool]] = []
    calls = engine.executor.attempts.calls
    calls.expect(due)  # another record's call of the same second, still under way

    others = calls._moments[due].returned
    system_wait = engine.clock.wait  # the heartbeat's waits stay the system's

    def wait(event: Any, timeout: float) -> bool:
        if event is not others:
            return system_wait(event, timeout)
        status = next(iter(engine.store.runs[job["job_id"]].values())).status
        waited.append((engine.clock() + timedelta(seconds=timeout), status is RunStatus.RUNNING))
        return False

    engine.clock.wait = wait  # type: ignore[method-assign]
    engine.clock.now = due - timedelta(milliseconds=250)
    engine.deliver_all()
    assert waited == [(due + OUTCOME_GRACE, True)], "waited before its outcome, until the grace at most"
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED
    calls.returned(due)


def test_a_fatal_failure_fails_the_run_and_the_job_and_leaves_the_dlq_empty(engine: Engine) -> None:
    engine.targets.outcomes = [failure(404, retriable=False)]
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.FAILED and run.error == "HTTP 404"
    assert engine.service.get_job("alice", job["job_id"])["status"] == "FAILED"
    assert engine.queue.dlq_bodies() == []  # a job's own dead_letter queue: tests/unit/test_dead_letter.py


class TickContext:
    """The Lambda context of a dispatcher invocation, as the handler reads it."""

    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:dispatcher"
    function_name = "dispatcher"
    memory_limit_in_mb = 256
    aws_request_id = "r"


def test_a_fanned_out_tick_spreads_its_sweeps_starts_and_each_sweep_waits_for_its_own(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """96 sweeps reading their buckets at the same moment held the simulated table at its read
    maximum at each tick: a tick spreads its sweeps' starts over ``FANOUT_SPREAD``."""
    settings = SETTINGS.replace(sweep_invocations=4, shard_count=4)
    invoker = RecordingInvoker()
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)
    monkeypatch.setattr(dispatcher_handler, "build_invoker", lambda _settings, _arn: invoker)

    dispatcher_handler.handler({"source": "aws.events"}, TickContext())  # type: ignore[arg-type]
    steps = {(later - earlier).total_seconds() for earlier, later in itertools.pairwise(invoker.starts)}
    assert len(invoker.started) == 4 and steps == {FANOUT_SPREAD.total_seconds() / 4}
    start_at = engine.clock() + timedelta(seconds=3)
    engine.dispatcher.sweep(shards=[0], start_at=start_at)
    assert engine.clock() >= start_at, "a group's sweep starts at its moment"


def test_a_tick_fans_out_through_the_invoker_and_sweeps_a_refused_group_itself(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SETTINGS.replace(sweep_invocations=2, shard_count=4)
    groups = shard_groups(settings.shard_count, settings.sweep_invocations)
    invoker = RecordingInvoker(refuse=[groups[1]])
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)
    monkeypatch.setattr(dispatcher_handler, "default_dispatcher", lambda: engine.dispatcher)
    monkeypatch.setattr(dispatcher_handler, "build_invoker", lambda _settings, _arn: invoker)

    summary = dispatcher_handler.handler({"source": "aws.events"}, TickContext())  # type: ignore[arg-type]
    assert invoker.started == [groups[0]]
    assert summary["shards"] == len(groups[1])


class Crash(Exception):
    pass


def crash_at(name: str) -> Any:
    def point(reached: str) -> None:
        if reached == name:
            raise Crash(name)

    return point


def test_a_dispatched_trigger_stays_in_place_and_is_never_sent_again(engine: Engine) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()})
    (trigger,) = engine.store.triggers.values()
    engine.clock.advance(4 * 60)
    engine.dispatcher.sweep()
    engine.dispatcher.sweep()
    assert [message.run_id for message, _delay in engine.queue.sent] == [trigger.run_id]
    assert list(engine.store.triggers.values()) == [trigger], "no claim, no delete: it expires by TTL"
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.QUEUED and run.run_id == trigger.run_id


def record_run_reads(engine: Engine) -> list[str]:
    """The job ids whose runs the store is asked for from now on (in order)."""
    checked: list[str] = []
    get_runs = engine.store.get_runs

    def recording(keys: list[tuple[str, str]]) -> Any:
        checked.extend(job_id for job_id, _run_id in keys)
        return get_runs(keys)

    engine.store.get_runs = recording  # type: ignore[method-assign]
    return checked


def test_a_sweep_checks_the_runs_of_triggers_within_its_horizon_only_and_not_of_those_new_to_it(
    engine: Engine,
) -> None:
    # The horizon falls inside a minute: one bucket on both sides of it. Both jobs are created 30 s
    # earlier, beyond the look-ahead then, so that the sweep, not the create, sends them.
    horizon = engine.clock() + timedelta(seconds=30 + SETTINGS.lookahead_seconds)
    within = engine.create(schedule={"at": (horizon - timedelta(seconds=10)).isoformat()})
    beyond = engine.create(schedule={"at": (horizon + timedelta(seconds=10)).isoformat()})
    engine.clock.advance(30)
    checked = record_run_reads(engine)
    assert engine.dispatcher.sweep().triggers_checked == 1
    assert beyond["job_id"] not in checked
    engine.clock.advance(20)
    report = engine.dispatcher.sweep()
    assert report.dispatch.sent == 1 and beyond["job_id"] not in checked, (
        "due after the last sweep's horizon, with that sweep finished: no sweep can have sent it"
    )
    assert sorted(message.job_id for message, _delay in engine.queue.sent) == sorted(
        [within["job_id"], beyond["job_id"]]
    )


def test_a_sweep_reads_no_runs_of_what_the_last_sweep_of_its_shard_dispatched_in_any_process(
    engine: Engine, clock: Clock
) -> None:
    """A fanned-out tick lands each group of shards on whichever container Lambda picks: the shard's
    frontier, not the process's memory, spares the next sweep the runs' reads."""
    for n in range(3):
        engine.create(schedule={"at": (engine.clock() + timedelta(minutes=3, seconds=n)).isoformat()})
    engine.clock.advance(90)
    assert engine.dispatcher.sweep().dispatch.sent == 3
    checked = record_run_reads(engine)
    engine.clock.advance(30)
    fresh = build_dispatcher(
        SETTINGS, store=engine.store, queue=engine.queue, clock=clock, crash_point=lambda _name: None
    )
    report = fresh.sweep()
    assert report.dispatch.sent == 0 and report.triggers_checked == 0
    assert checked == [], "vouched for by the frontier the last sweep left on the shard"
    assert len(engine.queue.sent) == 3


def test_without_a_frontier_a_dispatcher_remembers_what_it_dispatched_and_a_fresh_one_reads_the_runs(
    engine: Engine, clock: Clock
) -> None:
    for n in range(3):
        engine.create(schedule={"at": (engine.clock() + timedelta(minutes=3, seconds=n)).isoformat()})
    engine.clock.advance(90)
    checked = record_run_reads(engine)
    assert engine.dispatcher.sweep().dispatch.sent == 3
    checked.clear()
    engine.store.frontiers.clear()  # as if the last sweep had died before it released its shard
    engine.clock.advance(30)
    report = engine.dispatcher.sweep()
    assert report.triggers_checked == 3 and report.dispatch.sent == 0
    assert checked == [], "its own dispatches are not read again"
    engine.store.frontiers.clear()
    fresh = build_dispatcher(
        SETTINGS, store=engine.store, queue=engine.queue, clock=clock, crash_point=lambda _name: None
    )
    assert fresh.sweep().dispatch.sent == 0
    assert len(checked) == 3, "a new process (a cold container) reads the runs instead"
    assert len(engine.queue.sent) == 3
    engine.clock.advance(15 * 60)
    engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    assert len(engine.dispatcher._dispatched) == 1, "occurrences of long past minutes are forgotten"


def test_a_delivery_that_loses_the_start_keeps_its_message_while_the_winner_holds_the_run(
    engine: Engine,
) -> None:
    """Seen under process chaos: a second delivery of a run lost the start to the first, deleted
    its message as a duplicate, and the first worker died before calling the target; the run stayed
    RUNNING with no message left to take it over. The loser must give its message back instead."""
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    ((message, _delay),) = engine.queue.sent
    (queued,) = engine.store.runs[job["job_id"]].values()
    winner_lease = engine.clock() + timedelta(seconds=SETTINGS.lease_seconds + 5)
    engine.store.start_attempt(queued, token="winner", now=engine.clock(), lease_until=winner_lease)
    stale_read = (queued, engine.store.get_job(job["job_id"]))
    engine.store.get_run_and_job = lambda _job_id, _run_id: stale_read  # type: ignore[method-assign, assignment]
    with pytest.raises(ReturnLater) as returned:
        engine.executor.handle(message, "receipt-2")
    assert returned.value.seconds is not None and returned.value.seconds >= 1
    assert engine.targets.deliveries == [], "the winner calls the target, not the loser"


def test_a_start_write_that_outlasts_its_head_start_records_the_lateness_the_target_saw(
    engine: Engine,
) -> None:
    """The start is written half a second ahead and records the due second. Seen locally: a table
    slow for 0.9 s made the call that late while the run said 0 ms late."""
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5 - 0.5)  # the worker's start write begins half a second ahead
    start = engine.store.start_attempt

    def slow_start(*args: Any, **kwargs: Any) -> Any:
        engine.clock.advance(1.4)  # the write takes 1.4 s: the target is called 0.9 s late
        return start(*args, **kwargs)

    engine.store.start_attempt = slow_start  # type: ignore[method-assign]
    engine.deliver_all()
    ((_spec, delivery, _timeout),) = engine.targets.deliveries
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED
    assert run.lateness_ms == 900
    assert run.started_at == delivery.scheduled_for + timedelta(milliseconds=900)
    assert run.attempts[0].started_at == run.started_at
    view = engine.service.get_run("alice", job["job_id"], run.run_id)
    assert view["lateness_ms"] == 900


def test_a_start_write_within_its_head_start_records_the_second(engine: Engine) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(5 - 0.5)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.lateness_ms == 0 and run.attempts[0].started_at == run.scheduled_for


def test_a_run_logs_its_dispatch_and_its_outcome_at_info_and_the_outcome_says_how_late(
    engine: Engine,
) -> None:
    """Log lines are billed by the byte: at INFO a run writes its share of one dispatch line and one
    outcome line, which carries the lateness, the attempt and the target's answer."""
    import logging

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(level=logging.INFO)
    punctual_logger = logging.getLogger("punctual")
    level = punctual_logger.level
    punctual_logger.addHandler(keep)
    punctual_logger.setLevel(logging.INFO)
    try:
        job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
        engine.clock.advance(5)
        engine.deliver_all()
    finally:
        punctual_logger.removeHandler(keep)
        punctual_logger.setLevel(level)
    (run,) = engine.store.runs[job["job_id"]].values()
    about_run = [
        r for r in records if run.run_id in str(getattr(r, "runs", "")) + str(getattr(r, "run_id", ""))
    ]
    assert [r.getMessage() for r in about_run] == ["runs dispatched", "run succeeded"]
    outcome = about_run[-1]
    assert (outcome.lateness_ms, outcome.attempt, outcome.status_code) == (0, 1, 200)  # type: ignore[attr-defined]


def test_a_message_that_overtakes_its_run_write_runs_the_occurrence_once(engine: Engine) -> None:
    # Given a dispatcher that dies after sending, before writing the run
    job = engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()})
    engine.clock.advance(4 * 60)
    engine.dispatcher.crash_point = crash_at("after_send_before_record")
    with pytest.raises(Crash):
        engine.dispatcher.sweep()
    assert job["job_id"] not in engine.store.runs
    # When the message arrives, and the next tick sends the occurrence again
    engine.dispatcher.crash_point = lambda _name: None
    engine.dispatcher.sweep()
    assert len(engine.queue.sent) == 2
    engine.clock.advance(60)
    engine.deliver_all()
    # Then it ran once, from whichever message came first
    assert len(engine.targets.deliveries) == 1
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and run.attempt == 1 and run.executions == 1


def test_the_worker_starts_a_run_its_message_describes_before_the_dispatcher_writes_it(
    engine: Engine,
) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()})
    engine.clock.advance(4 * 60)
    engine.dispatcher.crash_point = crash_at("after_send_before_record")
    with pytest.raises(Crash):
        engine.dispatcher.sweep()
    engine.clock.advance(60)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and run.queued_at is not None
    assert engine.service.get_job("alice", job["job_id"])["status"] == "COMPLETED"


def test_a_message_older_than_the_run_retention_never_brings_its_run_back(engine: Engine) -> None:
    engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()})
    engine.clock.advance(4 * 60)
    engine.dispatcher.crash_point = crash_at("after_send_before_record")
    with pytest.raises(Crash):
        engine.dispatcher.sweep()
    engine.clock.advance(timedelta(days=SETTINGS.run_retention_days, minutes=2).total_seconds())
    engine.deliver_all()
    assert engine.targets.deliveries == []


def test_a_trigger_whose_create_died_before_writing_the_job_is_left_a_grace_then_deleted(
    engine: Engine,
) -> None:
    # Given a create that wrote its trigger and died before writing the job
    job = engine.create(schedule={"at": (engine.clock() + timedelta(minutes=10)).isoformat()})
    (trigger,) = [t for t in engine.store.triggers.values() if t.job_id == job["job_id"]]
    orphan = replace(
        trigger,
        job_id="job_never_written",
        fire_at=engine.clock() + timedelta(seconds=30),
        bucket=bucket_of(engine.clock()),
        written_at=engine.clock(),
    )
    engine.store.put_trigger(orphan)
    # When a tick comes within the grace: the create may still be writing the job
    engine.clock.advance(30)
    report = engine.dispatcher.sweep()
    assert any(t.job_id == "job_never_written" for t in engine.store.triggers.values())
    assert report.dispatch.stale == 0 and report.dispatch.sent == 0
    # Then after the grace the orphan is deleted, and nothing was ever sent for it
    engine.clock.advance(61)
    engine.dispatcher.sweep()
    assert not any(t.job_id == "job_never_written" for t in engine.store.triggers.values())
    assert all(message.job_id != "job_never_written" for message, _ in engine.queue.sent)


def test_a_retried_create_finishes_the_job_its_first_attempt_died_writing(engine: Engine) -> None:
    body = CreateJobIn.model_validate({"schedule": {"cron": "0 3 * * *"}, "target": HOOK, "name": "nightly"})
    first = engine.service.create_job("alice", body, idempotency_key="k1")
    # the first attempt died after its idempotency record and name, before its job
    del engine.store.jobs[first["job_id"]]
    again = engine.service.create_job("alice", body, idempotency_key="k1")
    assert again["job_id"] == first["job_id"] and again["name"] == "nightly"
    assert engine.service.create_job("alice", body, idempotency_key="k1")["job_id"] == first["job_id"]


def test_a_name_reserved_by_a_create_that_died_is_free_after_the_grace(engine: Engine) -> None:
    body = CreateJobIn.model_validate({"schedule": {"cron": "0 3 * * *"}, "target": HOOK, "name": "n"})
    dead = engine.service.create_job("alice", body)
    del engine.store.jobs[dead["job_id"]]
    with pytest.raises(Conflict):
        engine.service.create_job("alice", body)  # within the grace it may still be under way
    engine.clock.advance(61)
    taken = engine.service.create_job("alice", body)
    assert taken["name"] == "n" and taken["job_id"] != dead["job_id"]


def test_a_batch_answers_each_job_on_its_own(engine: Engine) -> None:
    soon = (engine.clock() + timedelta(seconds=30)).isoformat()
    answers = engine.service.create_jobs(
        "alice",
        [
            {"schedule": {"at": soon}, "target": HOOK, "name": "a"},
            {"schedule": {"cron": "not a cron"}, "target": HOOK},
            {"schedule": {"at": soon}, "target": HOOK, "name": "a"},
            {"schedule": {"at": soon}, "target": HOOK, "payload": "x" * 70_000},
            {"schedule": {"at": soon}, "target": HOOK},
        ],
    )
    assert [answer["index"] for answer in answers] == [0, 1, 2, 3, 4]
    assert [answer["status"] for answer in answers] == [201, 422, 409, 413, 201]
    assert answers[1]["error"]["field"] == "schedule.cron"
    assert answers[2]["error"]["field"] == "name"
    created = [answer["job"]["job_id"] for answer in answers if answer["status"] == 201]
    assert set(engine.store.jobs) == set(created)
    # the jobs due within the look-ahead were dispatched together, in one send
    assert sorted(message.job_id for message, _delay in engine.queue.sent) == sorted(created)


def test_a_name_twice_in_one_batch_goes_to_the_earlier_job_however_the_creates_interleave(
    engine: Engine,
) -> None:
    """The batch's creates run concurrently: the later job with a name used to win whenever the
    earlier one's create was slower (seen as a flaky answer [409, ..., 201])."""
    import threading

    create = engine.store.create_job
    later_tried = threading.Event()

    def slow_first(job: Any, *args: Any, **kwargs: Any) -> Any:
        if job.payload == "first":
            later_tried.wait(0.5)  # without ordering, the later job takes the name meanwhile
        elif job.name == "a":
            later_tried.set()
        return create(job, *args, **kwargs)

    engine.store.create_job = slow_first  # type: ignore[method-assign]
    soon = (engine.clock() + timedelta(minutes=30)).isoformat()
    answers = engine.service.create_jobs(
        "alice",
        [
            {"schedule": {"at": soon}, "target": HOOK, "name": "a", "payload": "first"},
            {"schedule": {"at": soon}, "target": HOOK},
            {"schedule": {"at": soon}, "target": HOOK, "name": "a", "payload": "second"},
        ],
    )
    assert [answer["status"] for answer in answers] == [201, 201, 409]
    assert answers[0]["job"]["payload"] == "first"


def test_a_retried_batch_answers_each_job_as_the_first_time(engine: Engine) -> None:
    jobs = [{"schedule": {"cron": "0 3 * * *"}, "target": HOOK, "name": f"n{i}"} for i in range(3)]
    first = engine.service.create_jobs("alice", jobs, idempotency_key="batch-1")
    again = engine.service.create_jobs("alice", jobs, idempotency_key="batch-1")
    assert [a["job"]["job_id"] for a in again] == [a["job"]["job_id"] for a in first]
    assert len(engine.store.jobs) == 3


def test_a_batch_of_more_than_a_hundred_is_refused_whole(engine: Engine) -> None:
    with pytest.raises(InvalidInput):
        engine.service.create_jobs("alice", [{"schedule": {"cron": "0 3 * * *"}, "target": HOOK}] * 101)
    assert engine.store.jobs == {}


def test_a_job_due_within_the_look_ahead_is_sent_and_its_run_written_by_the_create(engine: Engine) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.QUEUED
    assert [message.run_id for message, _delay in engine.queue.sent] == [run.run_id]


def tick_during_first_send(engine: Engine, clock: Clock) -> list[int]:
    """Make a tick (another process: a dispatcher of its own) sweep while the first send of the test
    is under way, when the occurrence's trigger is written and its run not yet: the moment an API
    request and a tick both see it undispatched. Returns the tick's sent count (once it ran)."""
    tick = build_dispatcher(
        SETTINGS, store=engine.store, queue=engine.queue, clock=clock, crash_point=lambda _name: None
    )
    send = engine.queue.send
    ticked: list[int] = []

    def send_then_tick(messages: list[tuple[WorkMessage, int]]) -> None:
        if not ticked:
            ticked.append(-1)
            ticked[0] = tick.sweep().dispatch.sent
        send(messages)

    engine.queue.send = send_then_tick  # type: ignore[method-assign]
    return ticked


def sends_by_run(engine: Engine) -> dict[str, int]:
    counts: dict[str, int] = {}
    for message, _delay in engine.queue.sent:
        counts[message.run_id] = counts.get(message.run_id, 0) + 1
    return counts


@pytest.mark.parametrize("schedule", [{"at": "+5"}, {"cron": "*/10 * * * * *"}], ids=["at", "cron"])
def test_a_tick_during_a_create_leaves_the_jobs_occurrences_to_the_create(
    engine: Engine, clock: Clock, schedule: dict[str, str]
) -> None:
    """Seen in the cost benchmark: crons created while a tick swept their bucket had every
    occurrence within the look-ahead sent twice, by the create and by the tick (each then following
    the chain in step with the other). The worker absorbed the duplicates, at a read, a failed
    conditional write and a message each."""
    if "at" in schedule:
        schedule = {"at": (engine.clock() + timedelta(seconds=5)).isoformat()}
    ticked = tick_during_first_send(engine, clock)
    engine.create(schedule=schedule)
    assert ticked == [0], "the tick left the occurrences the create was dispatching alone"
    sends = sends_by_run(engine)
    assert set(sends.values()) == {1}
    assert len(sends) == (1 if "at" in schedule else SETTINGS.lookahead_seconds // 10)


def test_a_trigger_whose_request_died_before_sending_it_is_sent_by_a_sweep_after_the_claim_timeout(
    engine: Engine, clock: Clock
) -> None:
    dying = build_dispatcher(
        SETTINGS,
        store=engine.store,
        queue=engine.queue,
        clock=clock,
        crash_point=crash_at("after_plan_before_send"),
    )
    policy = NetworkPolicy(allow_loopback=False, allow_list=("example.com",))
    service = build_job_service(SETTINGS, store=engine.store, dispatcher=dying, policy=policy, clock=clock)
    with pytest.raises(Crash):
        service.create_job(
            "alice",
            CreateJobIn.model_validate(
                {"schedule": {"at": (clock() + timedelta(seconds=90)).isoformat()}, "target": HOOK}
            ),
        )
    (trigger,) = engine.store.triggers.values()
    assert engine.dispatcher.sweep().dispatch.sent == 0, "held by its writer for now"
    engine.clock.advance(SETTINGS.claim_timeout_seconds + 1)
    assert engine.dispatcher.sweep().dispatch.sent == 1
    ((message, delay),) = engine.queue.sent
    assert message.run_id == trigger.run_id
    arrives = clock() + timedelta(seconds=delay)
    assert arrives == trigger.fire_at - SETTINGS.head_start - SEND_LEAD, "still at its second"


# ------------------------------------------------------------------------------------------ jitter


def test_a_jittered_occurrence_starts_at_its_own_delay_and_a_retry_keeps_it(engine: Engine) -> None:
    engine.targets.outcomes = [failure(503, retriable=True)]
    created = engine.create(schedule={"rate": "1 hour"}, jitter_seconds=1800, retry={"backoff_seconds": 1})
    assert created["jitter_seconds"] == 1800
    job = engine.store.get_job(created["job_id"])
    assert job is not None
    scheduled = engine.clock() + timedelta(hours=1)
    due = fire_time(job, scheduled)
    (trigger,) = engine.store.triggers.values()
    assert trigger.scheduled_for == scheduled and trigger.fire_at == due
    engine.clock.now = due - timedelta(seconds=90)
    engine.dispatcher.sweep()
    visible = engine.clock() + timedelta(seconds=engine.queue.sent[-1][1])
    assert visible == due - SETTINGS.head_start - SEND_LEAD, "sent to arrive a head start before its due time"
    engine.clock.now = due - timedelta(seconds=1)
    engine.deliver_all()  # waits out the last second, then attempt 1: 503
    (run,) = engine.store.runs[job.job_id].values()
    assert run.scheduled_for == scheduled and run.jitter_ms == jitter_of(job, scheduled)
    assert run.started_at == due and run.lateness_ms == 0, "lateness counts from the jittered time"
    assert run.status is RunStatus.RETRYING
    engine.clock.advance(60)
    engine.deliver_all()  # attempt 2
    (run,) = engine.store.runs[job.job_id].values()
    assert run.status is RunStatus.SUCCEEDED and run.attempt == 2
    assert run.jitter_ms == jitter_of(job, scheduled) and run.lateness_ms == 0
    deliveries = [delivery for _spec, delivery, _timeout in engine.targets.deliveries]
    assert [d.scheduled_for for d in deliveries] == [scheduled, scheduled], "the nominal time is delivered"


def test_run_now_is_not_jittered(engine: Engine) -> None:
    created = engine.create(schedule={"rate": "1 hour"}, jitter_seconds=1800)
    engine.service.run_now("alice", created["job_id"])
    engine.deliver_all()
    (run,) = engine.store.runs[created["job_id"]].values()
    assert run.kind.value == "manual" and run.jitter_ms == 0 and run.status is RunStatus.SUCCEEDED


def test_jitter_must_be_shorter_than_the_schedules_closest_fire_times(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as refused:
        engine.create(schedule={"cron": "*/5 * * * *"}, jitter_seconds=300)
    assert refused.value.field == "jitter_seconds" and "300 s" in refused.value.reason
    engine.create(schedule={"cron": "*/5 * * * *"}, jitter_seconds=299)
    engine.create(schedule={"at": (engine.clock() + timedelta(hours=1)).isoformat()}, jitter_seconds=86_400)


def test_changing_the_jitter_rewrites_the_next_trigger(engine: Engine) -> None:
    created = engine.create(schedule={"rate": "1 hour"})
    changed = engine.service.patch_job("alice", created["job_id"], PatchJobIn(jitter_seconds=600))
    assert changed["jitter_seconds"] == 600 and changed["version"] == created["version"] + 1
    job = engine.store.get_job(created["job_id"])
    assert job is not None
    current = [t for t in engine.store.triggers.values() if t.job_version == job.version]
    assert [t.fire_at for t in current] == [fire_time(job, current[0].scheduled_for)]
    with pytest.raises(InvalidInput) as refused:
        engine.service.patch_job("alice", created["job_id"], PatchJobIn(jitter_seconds=3600))
    assert refused.value.field == "jitter_seconds"


# ----------------------------------------------------------------------------- pause: note, until


def test_a_pause_says_who_why_and_until_when_and_its_first_occurrence_after_fires_at_its_second(
    engine: Engine,
) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    job_id = created["job_id"]
    engine.clock.advance(60)  # 12:01
    until = engine.clock().replace(hour=14, minute=59, second=30)  # 13:00 and 14:00 fall in the pause
    paused = engine.service.pause_job("alice", job_id, note="database migration", until=until.isoformat())
    assert paused["status"] == "PAUSED" and paused["next_run_at"] is None
    assert paused["pause"] == {
        "at": iso(engine.clock()),
        "by": "alice",
        "note": "database migration",
        "until": iso(until),
    }
    for hour in (13, 14):
        engine.clock.now = engine.clock().replace(hour=hour, minute=0, second=30)
        engine.dispatcher.sweep()
    assert not engine.queue.sent, "nothing due while it is paused runs"
    engine.clock.now = until - timedelta(seconds=60)  # 14:58:30: 15:00 is within the look-ahead
    engine.dispatcher.sweep()
    assert engine.service.get_job("alice", job_id)["status"] == "PAUSED", "until has not come"
    assert len(engine.queue.sent) == 1, "the first occurrence after until is sent ahead, as any other"
    engine.clock.now = until + timedelta(seconds=1)
    shown = engine.service.get_job("alice", job_id)
    assert shown["status"] == "ACTIVE" and shown["pause"] is None, "active from until on, as read"
    engine.clock.now = until.replace(minute=59, second=59)
    engine.deliver_all()
    (run,) = engine.store.runs[job_id].values()
    fifteen = until.replace(hour=15, minute=0, second=0)
    assert run.scheduled_for == fifteen and run.status is RunStatus.SUCCEEDED
    assert run.started_at == fifteen and run.lateness_ms == 0, "at its second"
    engine.clock.now = fifteen + timedelta(minutes=58, seconds=30)
    engine.dispatcher.sweep()  # the first dispatch after until (of 16:00) writes the pause's end
    stored = engine.store.get_job(job_id)
    assert stored is not None and stored.status is JobStatus.ACTIVE and stored.version == paused["version"]
    # The history has the pause: one row for the 13:00 and 14:00 occurrences that did not run
    page = engine.service.list_runs("alice", job_id, limit=10, cursor=None, status=None, reason=Reason.PAUSED)
    (row,) = page["items"]
    assert row["kind"] == "pause" and row["status"] == "SKIPPED" and row["covers"] == 2
    assert (row["note"], row["by"], row["finished_at"]) == ("database migration", "alice", iso(until))
    assert row["covers_until"] == iso(until.replace(hour=14, minute=0, second=0))


def test_a_one_off_paused_past_its_time_runs_when_the_pause_ends_never_before(engine: Engine) -> None:
    due = engine.clock() + timedelta(minutes=5)
    created = engine.create(schedule={"at": due.isoformat()})
    until = due + timedelta(minutes=30)
    engine.service.pause_job("alice", created["job_id"], until=until.isoformat())
    engine.clock.now = due + timedelta(seconds=30)
    engine.dispatcher.sweep()
    assert not engine.queue.sent
    engine.clock.now = until - timedelta(seconds=10)
    engine.dispatcher.sweep()
    message, _ = engine.queue.sent[0]
    assert message.queued is not None and message.queued.next_attempt_at == until, "due at the pause's end"
    engine.deliver_all()
    (run,) = engine.store.runs[created["job_id"]].values()
    assert run.started_at == until, "not a millisecond before the pause ends"
    assert run.lateness_ms == 30 * 60 * 1000, "late by the pause"


def test_resuming_before_until_wins_and_the_pauses_trigger_is_dropped(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    until = engine.clock() + timedelta(hours=5)
    engine.service.pause_job("alice", created["job_id"], until=until.isoformat())
    engine.clock.advance(1800)
    resumed = engine.service.resume_job("alice", created["job_id"])
    assert resumed["status"] == "ACTIVE" and resumed["pause"] is None
    engine.clock.now = until + timedelta(seconds=20)
    report = engine.dispatcher.sweep()
    assert report.dispatch.stale >= 1, "the pause's trigger belongs to an older version"
    assert engine.service.get_job("alice", created["job_id"])["version"] == resumed["version"]


def test_pausing_a_paused_job_again_replaces_its_note_and_keeps_its_start(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    first = engine.service.pause_job("alice", created["job_id"], note="first")
    engine.clock.advance(600)
    again = engine.service.pause_job("alice", created["job_id"], note="second")
    assert again["pause"] is not None and first["pause"] is not None
    assert again["pause"]["note"] == "second" and again["pause"]["at"] == first["pause"]["at"]
    assert engine.service.pause_job("alice", created["job_id"]) == again, "a plain pause changes nothing"


@pytest.mark.parametrize(
    ("until", "reason"),
    [
        ("2026-11-22T11:00:00Z", "not in the future"),
        ("2028-01-01T00:00:00Z", "at most a year"),
        ("soon", "ISO"),
    ],
)
def test_until_must_be_a_future_time_within_a_year(engine: Engine, until: str, reason: str) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    with pytest.raises(InvalidInput) as refused:
        engine.service.pause_job("alice", created["job_id"], until=until)
    assert refused.value.field == "until" and reason in refused.value.reason
    assert engine.service.get_job("alice", created["job_id"])["status"] == "ACTIVE"


def test_pause_on_failures_pauses_after_that_many_consecutive_failed_runs(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"}, pause_on_failures=2)
    assert created["pause_on_failures"] == 2
    fatal = failure(404, retriable=False)
    engine.targets.outcomes = [fatal, OK, fatal, fatal]
    for hour in range(4):
        engine.clock.now = engine.clock().replace(minute=0, second=0) + timedelta(hours=1, seconds=-1)
        engine.dispatcher.sweep()
        engine.clock.advance(1)
        engine.deliver_all()
        status = engine.service.get_job("alice", created["job_id"])["status"]
        assert status == ("PAUSED" if hour == 3 else "ACTIVE"), f"after run {hour + 1}"
    pause = engine.service.get_job("alice", created["job_id"])["pause"]
    assert pause is not None and pause["by"] == "punctual" and pause["note"] is not None
    assert pause["note"].startswith("paused after 2 consecutive failed runs; the last, ")
    assert "HTTP 404" in pause["note"]


# ----------------------------------------------------------------------------------------- backfill


def backfill(engine: Engine, job_id: str, **body: Any) -> BackfillView:
    return backfill_job(engine.service, "alice", job_id, BackfillIn.model_validate(body))


def test_a_buffered_backfill_runs_the_past_occurrences_one_after_another(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    engine.clock.advance(4 * 3600)  # 16:00
    answer = backfill(
        engine, created["job_id"], **{"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T15:00:00Z"}
    )
    assert answer["count"] == 3 and answer["overlap"] == "buffer_all"
    assert answer["occurrences"] == [
        "2026-11-22T13:00:00.000Z",
        "2026-11-22T14:00:00.000Z",
        "2026-11-22T15:00:00.000Z",
    ]
    order: list[str] = []
    for _ in range(3):
        sent_before = len(engine.queue.sent)
        engine.deliver_all()
        order.extend(iso(d.scheduled_for) for _spec, d, _t in engine.targets.deliveries[len(order) :])
        assert len(engine.queue.sent) <= sent_before + 1, "the next is dispatched only when one ends"
    assert order == answer["occurrences"], "oldest first, one at a time"
    backfilled = [r for r in engine.store.runs[created["job_id"]].values() if r.kind.value == "backfill"]
    assert len(backfilled) == 3 and {r.status for r in backfilled} == {RunStatus.SUCCEEDED}
    assert all(r.lateness_ms == 0 for r in backfilled), "a backfill's lateness counts from its dispatch"


def test_an_unbuffered_backfill_dispatches_everything_at_once(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/15 * * * *"})
    engine.clock.advance(3600)
    answer = backfill(
        engine,
        created["job_id"],
        overlap="allow",
        **{"from": "2026-11-22T12:00:00Z", "to": "2026-11-22T12:59:00Z"},
    )
    assert answer["count"] == 4 and len(engine.queue.sent) == 4


def test_a_worker_dying_between_a_backfill_runs_end_and_the_next_dispatch_loses_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    engine.clock.advance(3 * 3600)
    backfill(engine, created["job_id"], **{"from": "2026-11-22T12:00:00Z", "to": "2026-11-22T14:00:00Z"})
    original = FollowUps.next_backfill
    calls = {"n": 0}

    def dies_once(self: FollowUps, job: Any, run: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("worker killed after recording the outcome")
        original(self, job, run)

    monkeypatch.setattr(FollowUps, "next_backfill", dies_once)
    (message,) = engine.queue.receive()
    with pytest.raises(RuntimeError):
        engine.executor.handle(WorkMessage.from_json(message["Body"]), message["ReceiptHandle"])
    engine.queue.change_visibility(message["ReceiptHandle"], 0)  # not deleted: SQS delivers it again
    for _ in range(4):
        engine.deliver_all()
    backfilled = sorted(
        r.scheduled_for.hour
        for r in engine.store.runs[created["job_id"]].values()
        if r.kind.value == "backfill"
    )
    assert backfilled == [12, 13, 14], "the redelivery of the ended run went on with the chain"


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T18:00:00Z"}, "to", "future"),
        ({"from": "2026-11-22T15:00:00Z", "to": "2026-11-22T13:00:00Z"}, "to", "not be before from"),
        (
            {"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T15:00:00Z", "overlap": "skip"},
            "overlap",
            "almost nothing",
        ),
        ({"from": "2026-11-22T13:10:00Z", "to": "2026-11-22T13:20:00Z"}, "from", "no occurrence"),
        ({"from": "2025-01-01T00:00:00Z", "to": "2026-11-22T15:00:00Z"}, "to", "more than 1,000"),
        ({"from": "yesterday", "to": "2026-11-22T15:00:00Z"}, "from", "ISO 8601"),
    ],
)
def test_a_backfill_is_refused_naming_the_field(
    engine: Engine, body: dict[str, Any], field: str, reason: str
) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    engine.clock.advance(4 * 3600)
    with pytest.raises(InvalidInput) as refused:
        backfill(engine, created["job_id"], **body)
    assert refused.value.field == field and reason in refused.value.reason
    assert not engine.queue.sent


def test_a_cancelled_job_cannot_be_backfilled_but_a_paused_one_can(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    engine.clock.advance(2 * 3600)
    engine.service.pause_job("alice", created["job_id"])
    assert (
        backfill(engine, created["job_id"], **{"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T13:00:00Z"})[
            "count"
        ]
        == 1
    )
    engine.deliver_all()
    (run,) = [r for r in engine.store.runs[created["job_id"]].values() if r.kind.value == "backfill"]
    assert run.status is RunStatus.SUCCEEDED, "a backfill fires while paused, as run now does"
    engine.service.cancel_job("alice", created["job_id"])
    with pytest.raises(Conflict):
        backfill(engine, created["job_id"], **{"from": "2026-11-22T13:00:00Z", "to": "2026-11-22T13:00:00Z"})


def test_a_message_that_overtakes_the_replacement_of_an_older_versions_run_waits_for_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paused one-off whose time passed is resumed: the dispatch sends the occurrence again, then
    replaces the older version's SKIPPED run. A worker reading the run between the two saw the old,
    ended run and dropped the message: the run then stayed QUEUED for good (found by make test)."""
    due = engine.clock() + timedelta(seconds=5)
    created = engine.create(schedule={"at": due.isoformat()})
    engine.service.pause_job("alice", created["job_id"])
    engine.clock.now = due
    engine.deliver_all()  # the occurrence queued before the pause is skipped at its time
    (old,) = engine.store.runs[created["job_id"]].values()
    assert old.status is RunStatus.SKIPPED
    engine.clock.advance(1)
    sent: list[Any] = []
    monkeypatch.setattr(engine.service.dispatcher, "dispatch", lambda triggers, now: sent.extend(triggers))
    engine.service.resume_job("alice", created["job_id"])
    job = engine.store.get_job(created["job_id"])
    assert job is not None and sent
    queued = replace(
        old, status=RunStatus.QUEUED, job_version=job.version, finished_at=None, error=None, reason=None
    )
    message = WorkMessage(job.job_id, old.run_id, queued=queued)
    with pytest.raises(ReturnLater):  # the run of this dispatch is not written yet: not dropped
        engine.executor.handle(message, None)
    assert engine.store.put_run(queued)  # the dispatcher's write lands
    engine.executor.handle(message, None)
    run = engine.store.get_run(job.job_id, old.run_id)
    assert run is not None and run.status is RunStatus.SUCCEEDED


def test_a_backfill_follows_its_own_overlap_policy_not_the_jobs(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "0 * * * *", "overlap": "skip"})
    engine.clock.advance(3 * 3600)
    job = engine.store.get_job(created["job_id"])
    assert job is not None
    # A scheduled run of the job is under way when the backfill starts
    busy = replace(
        Run(
            job_id=job.job_id,
            run_id="20261122T115959.000Z-busy0000",  # sorts just before the backfilled occurrences
            owner="alice",
            scheduled_for=datetime(2026, 11, 22, 11, 59, 59, tzinfo=UTC),
            status=RunStatus.RUNNING,
            job_version=job.version,
        ),
        attempt=1,
        lease_until=engine.clock() + timedelta(hours=1),
    )
    engine.store.runs.setdefault(job.job_id, {})[busy.run_id] = busy
    backfill(engine, job.job_id, **{"from": "2026-11-22T12:00:00Z", "to": "2026-11-22T14:00:00Z"})
    for _ in range(4):
        engine.deliver_all()
    backfilled = sorted(
        (r.scheduled_for.hour, r.status, r.reason)
        for r in engine.store.runs[job.job_id].values()
        if r.kind.value == "backfill"
    )
    assert [hour for hour, _, _ in backfilled] == [12, 13, 14], "each occurrence got its row"
    assert {status for _, status, _ in backfilled} == {RunStatus.SUCCEEDED}, (
        "the job's skip does not apply: the backfill's buffer_all ran them one after another"
    )


# --------------------------------------------------------------------------- overlap policies


def occurrences(engine: Engine, job_id: str, count: int) -> list[WorkMessage]:
    """The work messages of the job's first ``count`` occurrences, oldest first (a fast cron's chain is
    dispatched ahead by the create and by each sweep)."""
    engine.dispatcher.sweep()
    messages = {m.run_id: m for m, _ in engine.queue.sent if m.job_id == job_id and m.queued is not None}
    while len(messages) < count:
        engine.clock.advance(30)
        engine.dispatcher.sweep()
        messages.update(
            {m.run_id: m for m, _ in engine.queue.sent if m.job_id == job_id and m.queued is not None}
        )
    return [messages[run_id] for run_id in sorted(messages)][:count]


def at_its_second(engine: Engine, message: WorkMessage) -> WorkMessage:
    assert message.queued is not None
    engine.clock.now = max(engine.clock.now, message.queued.due_at)
    return message


def while_running(engine: Engine, first: WorkMessage, during: Any) -> None:
    """Deliver ``first``; while its target is being called, ``during()`` happens (other occurrences
    come due and meet the overlap policy), then the call ends OK."""
    targets = engine.targets
    plain = ScriptedTargets.execute

    def execute(
        spec: Any, delivery: Any, timeout_seconds: float, cancel: Any = None, wait: Any = None
    ) -> Any:
        if wait is not None:
            wait()
        if delivery.run_id == first.run_id and delivery.attempt == 1:
            during()
        return plain(targets, spec, delivery, timeout_seconds, cancel)

    targets.execute = execute  # type: ignore[method-assign]
    engine.executor.handle(at_its_second(engine, first), None)


def woken(engine: Engine, run_id: str) -> WorkMessage:
    """The fresh message the end of the run ahead sent a waiting run."""
    sent = engine.queue.sent
    (message,) = [m for m, delay in sent if m.run_id == run_id and m.queued is None and delay == 0]
    return message


def test_buffer_all_runs_the_occurrences_that_fell_due_meanwhile_one_after_another(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *", "overlap": "buffer_all"})
    job_id = created["job_id"]
    first, second, third = occurrences(engine, job_id, 3)
    engine.clock.now = first.queued.scheduled_for - timedelta(seconds=1)  # type: ignore[union-attr]
    waits: list[ReturnLater] = []

    def later_ones_come_due() -> None:
        for message in (second, third):
            with pytest.raises(ReturnLater) as waiting:
                engine.executor.handle(at_its_second(engine, message), None)
            waits.append(waiting.value)

    while_running(engine, first, later_ones_come_due)
    runs = engine.store.runs[job_id]
    assert runs[second.run_id].status is RunStatus.QUEUED and runs[second.run_id].overlap_with == first.run_id
    assert runs[third.run_id].overlap_with == second.run_id, "each waits behind the one just before it"
    assert all(5 <= (w.seconds or 0) <= 60 for w in waits), "away until the run ahead could end at the latest"
    assert engine.targets.deliveries[-1][1].run_id == first.run_id
    engine.executor.handle(woken(engine, second.run_id), None)  # the first's end woke the second
    engine.executor.handle(woken(engine, third.run_id), None)  # and the second's end the third
    delivered = [d.run_id for _s, d, _t in engine.targets.deliveries]
    assert delivered == [first.run_id, second.run_id, third.run_id]
    assert {runs[m.run_id].status for m in (first, second, third)} == {RunStatus.SUCCEEDED}
    late = runs[second.run_id].lateness_ms
    assert late is not None and late >= 0
    engine.executor.handle(second, None)  # its own message, back later: nothing more
    assert len(engine.targets.deliveries) == 3


def test_buffer_one_keeps_one_waiting_and_skips_the_rest(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *", "overlap": "buffer_one"})
    job_id = created["job_id"]
    first, second, third, fourth = occurrences(engine, job_id, 4)
    engine.clock.now = first.queued.scheduled_for - timedelta(seconds=1)  # type: ignore[union-attr]

    def later_ones_come_due() -> None:
        with pytest.raises(ReturnLater):
            engine.executor.handle(at_its_second(engine, second), None)
        for message in (third, fourth):
            engine.executor.handle(at_its_second(engine, message), None)

    while_running(engine, first, later_ones_come_due)
    runs = engine.store.runs[job_id]
    for skipped in (third, fourth):
        row = runs[skipped.run_id]
        assert row.status is RunStatus.SKIPPED and row.reason is Reason.OVERLAP
        assert row.overlap_with == second.run_id, "skipped for the one already waiting"
    engine.executor.handle(woken(engine, second.run_id), None)
    assert [d.run_id for _s, d, _t in engine.targets.deliveries] == [first.run_id, second.run_id]
    assert runs[second.run_id].status is RunStatus.SUCCEEDED


def test_cancel_other_cancels_the_run_under_way_and_starts_once_its_call_has_stopped(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *", "overlap": "cancel_other"})
    job_id = created["job_id"]
    first, second = occurrences(engine, job_id, 2)
    engine.clock.now = first.queued.scheduled_for - timedelta(seconds=1)  # type: ignore[union-attr]
    started: dict[str, Any] = {}

    def the_next_comes_due() -> None:
        engine.executor.handle(at_its_second(engine, second), None)
        started["second"] = engine.store.runs[job_id][second.run_id].started_at

    while_running(engine, first, the_next_comes_due)
    runs = engine.store.runs[job_id]
    cancelled = runs[first.run_id]
    assert cancelled.status is RunStatus.CANCELLED and cancelled.reason is Reason.OVERLAP
    assert cancelled.overlap_with == second.run_id
    assert cancelled.error == f"cancelled for run {second.run_id} (overlap: cancel_other)"
    assert runs[second.run_id].status is RunStatus.SUCCEEDED
    due = second.queued.due_at  # type: ignore[union-attr]
    # it waited for the cancelled attempt's heartbeat (every third of a lease) to abort the call
    assert started["second"] >= due + timedelta(seconds=max(1.0, SETTINGS.lease_seconds / 3))


def test_skip_finds_the_run_under_way_through_the_skipped_rows_however_many(engine: Engine) -> None:
    """With 12 occurrences skipped behind a stuck run, more than the decision reads, the next is still
    skipped: each skipped row names the run it was skipped for (it started beside it before)."""
    created = engine.create(schedule={"cron": "*/10 * * * * *", "overlap": "skip"})
    job_id = created["job_id"]
    first, *later = occurrences(engine, job_id, 14)
    engine.clock.now = first.queued.scheduled_for - timedelta(seconds=1)  # type: ignore[union-attr]

    def a_long_run() -> None:
        for message in later:
            engine.executor.handle(at_its_second(engine, message), None)

    while_running(engine, first, a_long_run)
    rows = [engine.store.runs[job_id][m.run_id] for m in later]
    assert {(r.status, r.reason, r.overlap_with) for r in rows} == {
        (RunStatus.SKIPPED, Reason.OVERLAP, first.run_id)
    }
    assert [d.run_id for _s, d, _t in engine.targets.deliveries] == [first.run_id]


# --------------------------------------------------------------------------- run limits, clean-up


def run_for(engine: Engine, seconds: int) -> None:
    """The stack for ``seconds``: a tick each minute and the workers each second (test clock)."""
    for second in range(seconds):
        if second % 60 == 0:
            engine.dispatcher.sweep()
        engine.deliver_all()
        engine.clock.advance(1)


def scheduled_runs(engine: Engine, job_id: str) -> list[Run]:
    return sorted(
        (r for r in engine.store.runs.get(job_id, {}).values() if r.kind.value == "scheduled"),
        key=lambda r: r.scheduled_for,
    )


def test_max_runs_ends_the_job_after_that_many_occurrences_and_frees_its_name(engine: Engine) -> None:
    created = engine.create(name="thrice", schedule={"cron": "* * * * *"}, max_runs=3)
    job_id = created["job_id"]
    assert (created["max_runs"], created["remaining_runs"], len(created["upcoming"])) == (3, 3, 3)
    engine.clock.advance(61)
    engine.deliver_all()  # the first falls due
    view = engine.service.get_job("alice", job_id)
    assert (view["status"], view["remaining_runs"], len(view["upcoming"])) == ("ACTIVE", 2, 2)
    run_for(engine, 300)
    runs = scheduled_runs(engine, job_id)
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 3, "three, then no more"
    view = engine.service.get_job("alice", job_id)
    assert (view["status"], view["remaining_runs"], view["next_run_at"]) == ("COMPLETED", 0, None)
    later = [
        t
        for t in engine.store.triggers.values()
        if t.job_id == job_id and t.scheduled_for > runs[-1].scheduled_for
    ]
    assert later == [], "no trigger beyond the last"
    engine.create(name="thrice", schedule={"cron": "*/10 * * * * *"})  # the name is free again


def test_runs_now_and_paused_occurrences_do_not_count_and_a_resume_counts_on(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "* * * * *"}, max_runs=3)
    job_id = created["job_id"]
    engine.service.run_now("alice", job_id)
    engine.dispatcher.sweep()  # sets off the next two minutes' occurrences ahead
    engine.service.pause_job("alice", job_id)  # which the pause stops
    engine.deliver_all()
    stopped = [r for r in engine.store.runs[job_id].values() if r.reason is Reason.PAUSED]
    assert len(stopped) == 2
    engine.service.resume_job("alice", job_id)
    run_for(engine, 400)
    runs = engine.store.runs[job_id].values()
    ran = [r for r in runs if r.kind.value == "scheduled" and r.status is RunStatus.SUCCEEDED]
    manual = [r for r in runs if r.kind.value == "manual"]
    assert (len(ran), len(manual)) == (3, 1), "three after the resume: the two the pause stopped do not count"
    assert engine.service.get_job("alice", job_id)["status"] == "COMPLETED"


def test_lowering_max_runs_below_the_runs_made_ends_the_job_at_its_next_occurrence(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *"})
    job_id = created["job_id"]
    run_for(engine, 35)
    made = len(scheduled_runs(engine, job_id))
    assert made >= 3
    view = engine.service.patch_job("alice", job_id, PatchJobIn.model_validate({"max_runs": 2}))
    assert view["remaining_runs"] == 0
    run_for(engine, 70)
    assert len(scheduled_runs(engine, job_id)) == made, "nothing more was set off"
    assert engine.service.get_job("alice", job_id)["status"] == "COMPLETED"


def test_a_one_off_refuses_max_runs(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as refused:
        engine.create(schedule={"at": (engine.clock() + timedelta(minutes=5)).isoformat()}, max_runs=2)
    assert refused.value.field == "max_runs"


def test_on_complete_delete_takes_an_ended_job_and_its_history_away_after_its_days(engine: Engine) -> None:
    recurring = engine.create(
        schedule={"cron": "*/10 * * * * *"}, max_runs=1, on_complete="delete", delete_after_days=1
    )
    one_off = engine.create(
        schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()}, on_complete="delete"
    )
    kept = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    run_for(engine, 30)
    ended = engine.service.get_job("alice", recurring["job_id"])
    assert ended["status"] == "COMPLETED" and ended["deletes_at"] is not None
    done = engine.service.get_job("alice", one_off["job_id"])
    assert done["status"] == "COMPLETED" and done["delete_after_days"] == 7
    finished = engine.store.jobs[one_off["job_id"]].expires_at
    assert finished is not None and done["deletes_at"] == iso(finished)
    assert engine.service.get_job("alice", kept["job_id"])["deletes_at"] is None, "keep: kept"
    engine.clock.advance(24 * 3600)
    for gone in (recurring,):
        with pytest.raises(NotFound):
            engine.service.get_job("alice", gone["job_id"])
        with pytest.raises(NotFound):
            engine.service.list_runs("alice", gone["job_id"], limit=5, cursor=None, status=None)
    listed = {
        job["job_id"]
        for job in engine.service.list_jobs("alice", limit=50, cursor=None, status=None, name=None)["items"]
    }
    assert recurring["job_id"] not in listed and one_off["job_id"] in listed, "one day vs seven"
    engine.clock.advance(6 * 24 * 3600)
    with pytest.raises(NotFound):
        engine.service.get_job("alice", one_off["job_id"])
    assert engine.service.get_job("alice", kept["job_id"])["status"] == "COMPLETED"


# --------------------------------------------------------------------------------------- alerts

ALERTS_HOOK = {"type": "http", "url": "https://example.com/alerts"}


def alerts_sent(engine: Engine) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, run id, body) of every alert delivered, in order."""
    return [
        (delivery.alert, delivery.run_id, delivery.payload)
        for spec, delivery, _timeout in engine.targets.deliveries
        if spec.get("url") == ALERTS_HOOK["url"] and delivery.alert is not None
    ]


def test_a_run_that_fails_for_good_alerts_once_signed_and_apart_from_the_run(engine: Engine) -> None:
    engine.targets.outcomes = [failure(404, retriable=False)]
    created = engine.create(
        name="report",
        schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()},
        signing_secret="a-secret-of-sixteen",
        alerts={"target": ALERTS_HOOK, "failed": True},
    )
    assert created["alerts"] is not None
    assert created["alerts"]["failed"] is True and created["alerts"]["target"]["url"] == ALERTS_HOOK["url"]
    engine.clock.advance(5)
    message = next(m for m, _ in engine.queue.sent if m.job_id == created["job_id"])
    engine.executor.handle(message, None)
    engine.executor.handle(message, None)  # a redelivery: the run is done, no second alert
    ((kind, run_id, body),) = alerts_sent(engine)
    assert (kind, body["alert"], body["job_name"], body["detail"], body["run_status"]) == (
        "failed",
        "failed",
        "report",
        "HTTP 404",
        "FAILED",
    )
    (_spec, delivery, _t) = engine.targets.deliveries[-1]
    assert delivery.idempotency_key == f"{run_id}.alert-failed" and delivery.secret == "a-secret-of-sixteen"
    run = engine.store.runs[created["job_id"]][run_id]
    assert run.alerts_sent == {"failed"}


def test_a_late_start_alerts_beside_the_call(engine: Engine) -> None:
    engine.create(
        schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()},
        alerts={"target": ALERTS_HOOK, "late_seconds": 30},
    )
    engine.clock.advance(5 + 45)  # the worker comes 45 s late
    engine.deliver_all()
    ((kind, _run_id, body),) = alerts_sent(engine)
    assert kind == "late" and body["detail"].startswith("started 45.0 s after its due time")
    on_time = engine.create(
        schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()},
        alerts={"target": ALERTS_HOOK, "late_seconds": 30},
    )
    engine.deliver_all()
    assert engine.service.get_job("alice", on_time["job_id"])["status"] == "COMPLETED"
    assert len(alerts_sent(engine)) == 1, "on time: no alert"


def test_occurrences_the_misfire_policy_skips_after_an_outage_alert_as_missed(engine: Engine) -> None:
    created = engine.create(
        schedule={"cron": "* * * * *", "misfire": "skip"},
        alerts={"target": ALERTS_HOOK, "missed": True},
    )
    engine.clock.advance(10 * 60)  # the dispatcher was down for ten minutes
    engine.dispatcher.sweep()
    engine.deliver_all()
    missed = [(kind, body) for kind, _run_id, body in alerts_sent(engine)]
    assert missed and {kind for kind, _ in missed} == {"missed"}
    assert all(body["run_status"] == "SKIPPED" for _, body in missed)
    rows = [r for r in engine.store.runs[created["job_id"]].values() if r.reason is Reason.MISFIRE_SKIPPED]
    assert rows and all(r.alerts_sent == {"missed"} for r in rows)
    quiet = engine.create(schedule={"cron": "* * * * *", "misfire": "skip"})
    engine.clock.advance(10 * 60)
    before = len(engine.queue.sent)
    engine.dispatcher.sweep()
    notes = [m for m, _ in engine.queue.sent[before:] if m.job_id == quiet["job_id"] and m.queued is None]
    assert notes == [], "a job without alerts costs no message"


def test_an_occurrence_skipped_by_overlap_alerts_as_missed(engine: Engine) -> None:
    created = engine.create(
        schedule={"cron": "*/10 * * * * *", "overlap": "skip"}, alerts={"target": ALERTS_HOOK, "missed": True}
    )
    first, second = occurrences(engine, created["job_id"], 2)
    engine.clock.now = first.queued.scheduled_for - timedelta(seconds=1)  # type: ignore[union-attr]
    while_running(engine, first, lambda: engine.executor.handle(at_its_second(engine, second), None))
    ((kind, run_id, body),) = alerts_sent(engine)
    assert (kind, run_id) == ("missed", second.run_id) and "still under way" in body["detail"]


def test_an_attempt_running_long_alerts_once_from_the_heartbeat(engine: Engine) -> None:
    import time as real_time

    created = engine.create(
        schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()},
        alerts={"target": ALERTS_HOOK, "running_seconds": 1},
    )
    plain = ScriptedTargets.execute

    def slow(spec: Any, delivery: Any, timeout_seconds: float, cancel: Any = None, wait: Any = None) -> Any:
        if wait is not None:
            wait()
        if delivery.alert is None:
            real_time.sleep(2.5)  # real time: the heartbeat beats on a thread, every second here
        return plain(engine.targets, spec, delivery, timeout_seconds, cancel)

    engine.targets.execute = slow  # type: ignore[method-assign]
    engine.clock.advance(5)
    engine.deliver_all()
    ((kind, _run_id, body),) = alerts_sent(engine)
    assert kind == "running_long" and "still running after" in body["detail"]
    assert engine.service.get_job("alice", created["job_id"])["status"] == "COMPLETED"


@pytest.mark.parametrize(
    ("alerts", "field"),
    [
        ({"target": {"type": "lambda", "function": "f"}, "failed": True}, "alerts.target.type"),
        ({"target": ALERTS_HOOK}, "alerts"),
        ({"target": {"type": "http", "url": "https://10.0.0.1/x"}, "failed": True}, "alerts.target.url"),
        (
            {"target": {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:1:t"}, "failed": True},
            "alerts.target.topic_arn",
        ),
        ({"target": ALERTS_HOOK, "late_seconds": 0}, "alerts.late_seconds"),
    ],
)
def test_alerts_are_refused_naming_the_field(engine: Engine, alerts: dict[str, Any], field: str) -> None:
    with pytest.raises((InvalidInput, ValidationError)) as refused:
        engine.create(schedule={"cron": "0 * * * *"}, alerts=alerts)
    error = refused.value
    if isinstance(error, ValidationError):
        error = from_validation([dict(problem) for problem in error.errors()])
    assert isinstance(error, InvalidInput) and error.field == field


def test_a_backfill_of_an_occurrence_older_than_the_retention_runs_when_its_message_comes_first(
    engine: Engine,
) -> None:
    """Its message may overtake the dispatcher's write of its run, as any. The guard against re-running
    a run that expired counts the message's age from its dispatch, not from the (old) occurrence: the
    console's browser test found a backfill of last January left QUEUED for good."""
    created = engine.create(schedule={"cron": "0 3 1 1 *"})
    job_id = created["job_id"]
    engine.clock.advance(400 * 24 * 3600)  # the occurrence of next January 1st is a year in the past
    job = engine.store.get_job(job_id)
    assert job is not None
    answer = backfill(engine, job_id, **{"from": "2026-12-31T00:00:00Z", "to": "2027-01-02T00:00:00Z"})
    assert answer["count"] == 1
    (message,) = [m for m, _ in engine.queue.sent if m.job_id == job_id and m.queued is not None]
    del engine.store.runs[job_id][message.run_id]  # its message came before the run was written
    engine.executor.handle(message, None)
    run = engine.store.runs[job_id][message.run_id]
    assert run.status is RunStatus.SUCCEEDED and run.kind.value == "backfill"


def test_changing_the_schedule_of_a_job_paused_until_keeps_its_resume_and_follows_the_new_schedule(
    engine: Engine,
) -> None:
    created = engine.create(schedule={"cron": "0 * * * *"})
    job_id = created["job_id"]
    until = engine.clock().replace(hour=14, minute=59, second=30)
    engine.service.pause_job("alice", job_id, note="migration", until=until.isoformat())
    engine.clock.advance(600)
    changed = engine.service.patch_job(
        "alice", job_id, PatchJobIn.model_validate({"schedule": {"cron": "30 * * * *"}})
    )
    assert changed["status"] == "PAUSED" and changed["pause"] is not None
    assert changed["pause"]["until"] == iso(until), "still paused until then"
    for hour in (13, 14):
        engine.clock.now = engine.clock().replace(hour=hour, minute=30, second=30)
        engine.dispatcher.sweep()
    assert not engine.queue.sent, "nothing due while it is paused runs"
    engine.clock.now = until.replace(hour=15, minute=29, second=30)
    engine.dispatcher.sweep()
    engine.clock.now = until.replace(hour=15, minute=31)
    engine.deliver_all()
    runs = [run for run in engine.store.runs[job_id].values() if run.status is RunStatus.SUCCEEDED]
    assert [run.scheduled_for for run in runs] == [until.replace(hour=15, minute=30, second=0)], (
        "the pause ends by itself and the new schedule's first occurrence after it runs"
    )


def test_lowering_max_runs_of_a_job_paused_until_ends_it_when_the_pause_ends_with_no_more_runs(
    engine: Engine,
) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *"}, max_runs=20)
    job_id = created["job_id"]
    run_for(engine, 25)
    made = len(scheduled_runs(engine, job_id))
    assert 2 <= made < 20
    until = engine.clock() + timedelta(minutes=3)
    engine.service.pause_job("alice", job_id, until=until.isoformat())
    engine.service.patch_job("alice", job_id, PatchJobIn.model_validate({"max_runs": 2}))
    run_for(engine, 300)
    assert len(scheduled_runs(engine, job_id)) == made, "nothing more was set off, before or after until"
    assert engine.service.get_job("alice", job_id)["status"] == "COMPLETED"


@pytest.mark.parametrize(
    "ending", [{"max_runs": 3}, {"schedule": {"cron": "*/10 * * * * *", "end_at": "2026-11-22T12:00:30Z"}}]
)
def test_a_create_whose_dispatch_sets_off_the_last_run_answers_as_a_read_right_after_it_would(
    engine: Engine, ending: dict[str, Any]
) -> None:
    body: dict[str, Any] = {"schedule": {"cron": "*/10 * * * * *"}, **ending}
    created = engine.create(**body)
    read = engine.service.get_job("alice", created["job_id"])
    assert read["status"] == "COMPLETED", "the whole chain was set off within the look-ahead"
    assert created["status"] == read["status"] and created["remaining_runs"] == read["remaining_runs"]
    assert created["upcoming"] == read["upcoming"] and len(read["upcoming"]) == 3, "still to fire"
    assert read["next_run_at"] == read["upcoming"][0]
    engine.clock.advance(31)
    assert engine.service.get_job("alice", created["job_id"])["upcoming"] == [], "all fired"


def test_a_batch_create_whose_dispatch_ends_a_job_answers_it_completed(engine: Engine) -> None:
    body = {
        "schedule": {"cron": "*/10 * * * * *"},
        "target": {"type": "http", "url": "https://example.com/hook"},
        "max_runs": 2,
    }
    (answer,) = engine.service.create_jobs("alice", [body])
    assert answer["status"] == 201 and answer["job"]["status"] == "COMPLETED"
    assert engine.service.get_job("alice", answer["job"]["job_id"])["status"] == "COMPLETED"


def test_a_patch_lowering_max_runs_whose_dispatch_ends_the_job_answers_it_completed(engine: Engine) -> None:
    created = engine.create(schedule={"cron": "*/10 * * * * *"})
    changed = engine.service.patch_job("alice", created["job_id"], PatchJobIn.model_validate({"max_runs": 1}))
    assert changed["status"] == "COMPLETED" == engine.service.get_job("alice", created["job_id"])["status"]


def test_a_pause_span_covers_only_the_occurrences_without_a_row_of_their_own(engine: Engine) -> None:
    # Given a cron every 10 s whose occurrences were dispatched ahead (the look-ahead) when it is paused
    created = engine.create(schedule={"cron": "*/10 * * * * *"})
    job_id = created["job_id"]
    engine.dispatcher.sweep()
    ahead = {r.scheduled_for for r in engine.store.runs[job_id].values() if r.scheduled_for > engine.clock()}
    assert len(ahead) >= 6
    paused_at = engine.clock()
    engine.service.pause_job("alice", job_id, note="deploy")
    # When five minutes pass and it is resumed (the runs set off ahead are skipped as they come)
    for _ in range(5):
        engine.clock.advance(60)
        engine.dispatcher.sweep()
        engine.deliver_all()
    resumed_at = engine.clock()
    engine.service.resume_job("alice", job_id)
    # Then every occurrence of the pause is counted once: by its own row, or by the pause's span
    rows = list(engine.store.runs[job_id].values())
    (span,) = [r for r in rows if r.kind is RunKind.PAUSE]
    own = [r for r in rows if r.kind is RunKind.SCHEDULED and paused_at < r.scheduled_for < resumed_at]
    assert own and all(r.status is RunStatus.SKIPPED for r in own)
    assert (paused_at.second, (resumed_at - paused_at).total_seconds()) == (0, 300)
    due = 29  # 12:00:10 to 12:04:50: after the pause began, before it ended
    assert span.covers + len(own) == due, "no occurrence counted twice"
    assert span.covers == due - len(ahead)


def test_a_dispatcher_that_may_not_delete_leaves_a_stale_trigger_for_the_sweep(engine: Engine) -> None:
    # The worker going on with a buffered backfill dispatches with deletes=False (its role may not
    # delete items): a trigger whose job was cancelled just before is left, and the sweep deletes it.
    created = engine.create(schedule={"cron": "0 3 * * *"})
    job = engine.store.jobs[created["job_id"]]
    engine.service.cancel_job("alice", job.job_id)
    trigger = make_trigger(job, engine.clock(), now=engine.clock(), shard_count=4, kind=RunKind.BACKFILL)
    engine.store.put_trigger(trigger)
    worker_side = build_dispatcher(
        SETTINGS, store=engine.store, queue=engine.queue, clock=engine.clock, deletes=False
    )
    report = worker_side.dispatch([trigger], engine.clock())
    assert report.stale == 1 and report.sent == 0
    assert trigger in engine.store.query_bucket(trigger.bucket, trigger.shard)
    engine.dispatcher.dispatch([trigger], engine.clock())
    assert trigger not in engine.store.query_bucket(trigger.bucket, trigger.shard)


def test_the_worker_opens_the_targets_connection_while_it_waits_for_the_second(engine: Engine) -> None:
    job = engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    engine.clock.advance(4.75)  # the message arrives a head start before the second
    engine.deliver_all()
    assert [spec["url"] for spec in engine.targets.prepared] == [HOOK["url"]]
    assert len(engine.targets.deliveries) == 1
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and run.lateness_ms == 0


def test_a_dispatched_message_is_hidden_for_its_wait_before_the_worker_reads_anything(engine: Engine) -> None:
    """A worker killed during its first reads must not leave the message hidden for the receive's
    visibility (on AWS the queue's 5,400 s): the hold its body allows for comes first, once."""
    calls: list[str] = []
    engine.create(schedule={"at": (engine.clock() + timedelta(seconds=5)).isoformat()})
    read, hide = engine.store.get_run_and_job, engine.queue.change_visibility

    def reading(job_id: str, run_id: str) -> Any:
        calls.append("read")
        return read(job_id, run_id)

    def hiding(receipt_handle: str, seconds: int) -> None:
        calls.append(f"hide {seconds}")
        hide(receipt_handle, seconds)

    engine.store.get_run_and_job = reading  # type: ignore[method-assign]
    engine.queue.change_visibility = hiding  # type: ignore[method-assign]
    engine.clock.advance(4.75)  # a head start before the second
    engine.deliver_all()
    assert calls[:2] == ["hide 3", "read"], "hidden for the wait plus the margin before any read"
    assert calls.count("hide 3") == 1, "and not asked for again before the wait"

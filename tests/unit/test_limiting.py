"""Target limits in the worker, on the fakes: a run over a limit waits its turn (QUEUED, reason
``limited``), its slot is freed with its outcome or lapses with its lease, and a job under no limit
reads nothing per run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from punctual_functions.core.limits import Limit, in_use, job_limit_name
from punctual_functions.core.model import Reason, RunStatus
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome
from punctual_functions.worker.context import ReturnLater
from punctual_functions.worker.limiting import LIMITS_CACHE_SECONDS, Held
from tests.conftest import Clock
from tests.fakes.targets import ScriptedTargets, failure
from tests.unit.test_engine_on_fakes import SETTINGS, Engine, engine_with


class DuringCall(ScriptedTargets):
    """A target that, while it is being called, lets the test do something (deliver another run)."""

    def __init__(self) -> None:
        super().__init__()
        self.during: Callable[[], None] | None = None

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
        *,
        wait: Callable[[], None] | None = None,
    ) -> TargetOutcome:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().execute(spec, delivery, timeout_seconds, cancel, wait=wait)


@pytest.fixture
def engine(clock: Clock) -> Iterator[Engine]:
    built = engine_with(SETTINGS, clock)
    built.targets = DuringCall()
    built.executor = built.build_executor()
    yield built


def _limit_of_one_held_by(engine: Engine, holder: str, *, seconds: int) -> None:
    """The limit ``hooks`` (one at a time, on example.com), its slot held by ``holder`` for ``seconds``."""
    engine.store.put_limit(
        "alice", Limit("hooks", "https://example.com", max_concurrent=1), expected_version=None
    )
    now = engine.clock()
    engine.store.take_slot(
        "alice", "hooks", 1, holder=holder, job_id="j", now=now, lease_until=now + timedelta(seconds=seconds)
    )


def _one_off(engine: Engine, seconds: int = 5, **body: Any) -> str:
    at = (engine.clock() + timedelta(seconds=seconds)).isoformat()
    return engine.create(schedule={"at": at}, **body)["job_id"]


def _message(engine: Engine, job_id: str) -> tuple[WorkMessage, str]:
    for message in engine.queue.receive():
        parsed = WorkMessage.from_json(message["Body"])
        if parsed.job_id == job_id:
            return parsed, message["ReceiptHandle"]
        engine.queue.change_visibility(message["ReceiptHandle"], 0)
    raise AssertionError(f"no message of {job_id}")


def _run_of(engine: Engine, job_id: str) -> Any:
    runs, _ = engine.store.list_runs(job_id, limit=5)
    assert len(runs) == 1
    return runs[0]


def test_a_run_over_a_limit_waits_its_turn_and_records_how_long_it_waited(engine: Engine) -> None:
    engine.store.put_limit(
        "alice", Limit("hooks", "https://example.com", max_concurrent=1), expected_version=None
    )
    first, second = _one_off(engine), _one_off(engine)
    engine.clock.advance(5)
    message, receipt = _message(engine, second)
    refused: list[ReturnLater] = []

    def deliver_second() -> None:
        try:
            engine.executor.handle(message, receipt)
        except ReturnLater as later:
            refused.append(later)

    assert isinstance(engine.targets, DuringCall)
    engine.targets.during = deliver_second  # the second arrives while the first is being called
    first_message, first_receipt = _message(engine, first)
    engine.executor.handle(first_message, first_receipt)
    assert len(refused) == 1 and 10 <= (refused[0].seconds or 0) <= 20, "given back: a release wakes it"
    waiting = _run_of(engine, second)
    assert (waiting.status, waiting.reason, waiting.limited_by) == (RunStatus.QUEUED, Reason.LIMITED, "hooks")
    use = engine.store.limit_use("alice", "hooks")
    assert use.waiting == (), "the first's outcome handed its slot over to the waiting run"
    (slot,) = in_use(use.slots, engine.clock())
    assert slot.handed and slot.run_id == waiting.run_id
    woken = [(m.run_id, m.handed, delay) for m, delay in engine.queue.sent if m.run_id == waiting.run_id]
    assert woken[1:] == [(waiting.run_id, "hooks", 0)], "after its dispatch, the release woke it"
    engine.clock.advance(2)
    wake, wake_receipt = _message(engine, second)
    assert wake.handed == "hooks"
    engine.executor.handle(wake, wake_receipt)
    done = _run_of(engine, second)
    assert (done.status, done.reason, done.limited_by, done.limited_ms) == (
        RunStatus.SUCCEEDED,
        None,
        "hooks",
        2000,
    )
    assert done.lateness_ms is not None and done.lateness_ms >= 2000, "lateness counts from the due time"
    assert engine.store.limit_use("alice", "hooks").waiting == ()
    assert len(engine.targets.deliveries) == 2


def test_a_jobs_own_max_concurrent_caps_its_runs_alone(engine: Engine) -> None:
    job_id = _one_off(engine, 10, max_concurrent=1)
    other = _one_off(engine, 10)
    job = engine.store.get_job(job_id)
    assert job is not None and job.max_concurrent == 1
    # Another of its runs holds the job's one slot.
    name = job_limit_name(job_id)
    assert engine.store.take_slot(
        "alice",
        name,
        1,
        holder="other-run",
        job_id=job_id,
        now=engine.clock(),
        lease_until=engine.clock() + timedelta(minutes=5),
    )
    engine.clock.advance(10)
    engine.deliver_all()
    runs, _ = engine.store.list_runs(job_id, limit=5)
    assert [(run.status, run.reason, run.limited_by) for run in runs] == [
        (RunStatus.QUEUED, Reason.LIMITED, name)
    ]
    assert _run_of(engine, other).status is RunStatus.SUCCEEDED, "another job is not capped by it"
    handed = engine.store.release_slot(
        "alice", name, holder="other-run", max_concurrent=1, now=engine.clock()
    )
    assert [waiter.job_id for waiter in handed] == [job_id]
    engine.clock.advance(4)  # before the hand-over lapses, a delivery of it (no wake-up: the test released)
    message, receipt = _message(engine, job_id)
    engine.executor.handle(message, receipt)
    engine.deliver_all()
    assert _run_of(engine, job_id).status is RunStatus.SUCCEEDED


def test_a_slot_held_by_a_worker_that_died_is_taken_over_when_its_lease_ends(engine: Engine) -> None:
    _limit_of_one_held_by(engine, "dead", seconds=30)
    job_id = _one_off(engine)
    engine.clock.advance(5)
    engine.deliver_all()
    assert _run_of(engine, job_id).reason is Reason.LIMITED
    engine.clock.advance(26)
    engine.deliver_all()
    assert _run_of(engine, job_id).status is RunStatus.SUCCEEDED


def test_a_retry_frees_its_slot_and_takes_one_again(engine: Engine) -> None:
    engine.store.put_limit(
        "alice", Limit("hooks", "https://example.com", max_concurrent=1), expected_version=None
    )
    engine.targets.outcomes = [failure(503, retriable=True)]
    job_id = _one_off(engine)
    engine.clock.advance(5)
    engine.deliver_all()
    assert _run_of(engine, job_id).status is RunStatus.RETRYING
    assert in_use(engine.store.limit_use("alice", "hooks").slots, engine.clock()) == []
    engine.clock.advance(60)
    engine.deliver_all()
    assert _run_of(engine, job_id).status is RunStatus.SUCCEEDED


def test_a_rate_limit_gives_its_burst_then_waits_for_tokens(engine: Engine) -> None:
    engine.store.put_limit(
        "alice", Limit("rate", "https://example.com", per_second=1, burst=2), expected_version=None
    )
    jobs = [_one_off(engine) for _ in range(3)]
    engine.clock.advance(5)
    engine.deliver_all()
    statuses = sorted(_run_of(engine, job_id).status.value for job_id in jobs)
    assert statuses == ["QUEUED", "SUCCEEDED", "SUCCEEDED"]
    engine.clock.advance(1)
    engine.deliver_all()
    assert {_run_of(engine, job_id).status for job_id in jobs} == {RunStatus.SUCCEEDED}


def test_a_run_that_waited_long_alerts_limited_once(engine: Engine) -> None:
    _limit_of_one_held_by(engine, "busy", seconds=600)
    alerts = {"target": {"type": "http", "url": "https://example.com/alerts"}, "limited_seconds": 30}
    job_id = _one_off(engine, alerts=alerts)
    engine.clock.advance(5)
    for _ in range(5):
        engine.deliver_all()
        engine.clock.advance(10)
    sent = [d for spec, d, _ in engine.targets.deliveries if spec.get("url") == "https://example.com/alerts"]
    assert len(sent) == 1
    assert "limited" in _run_of(engine, job_id).alerts_sent


def _count_limit_reads(engine: Engine) -> list[str]:
    """The owners whose limits the worker reads with a request of their own, from now on."""
    calls: list[str] = []
    original = engine.store.list_limits

    def counted(owner: str) -> list[Limit]:
        calls.append(owner)
        return original(owner)

    engine.store.list_limits = counted  # type: ignore[method-assign]
    return calls


def test_a_job_under_no_limit_reads_the_owners_limits_once_per_container(engine: Engine) -> None:
    calls = _count_limit_reads(engine)
    jobs = [_one_off(engine, 5 + n) for n in range(5)]
    for _ in range(5):
        engine.clock.advance(1)
        engine.deliver_all()
    assert {_run_of(engine, job_id).status for job_id in jobs} == {RunStatus.SUCCEEDED}
    assert calls == ["alice"], "one read for five runs within the cache's time"
    engine.clock.advance(LIMITS_CACHE_SECONDS + 1)
    _one_off(engine, 1)
    engine.clock.advance(1)
    engine.deliver_all()
    assert calls == ["alice", "alice"]


def test_two_deliveries_of_one_run_never_free_each_others_slot(engine: Engine) -> None:
    engine.store.put_limit(
        "alice", Limit("hooks", "https://example.com", max_concurrent=2), expected_version=None
    )
    job_id = _one_off(engine)
    job = engine.store.get_job(job_id)
    assert job is not None
    run = _run_of(engine, job_id)
    limiting = engine.executor.limiting
    first = limiting.enter(job, run, create=False)  # its call goes on
    second = limiting.enter(job, run, create=False)  # a duplicate, whose start will lose
    assert len(in_use(engine.store.limit_use("alice", "hooks").slots, engine.clock())) == 2
    limiting.release(second)
    held = in_use(engine.store.limit_use("alice", "hooks").slots, engine.clock())
    assert [slot.run_id for slot in held] == [run.run_id] and first is not None
    assert held[0].holder == first.holder, "the call under way keeps its slot"
    limiting.release(first)
    assert in_use(engine.store.limit_use("alice", "hooks").slots, engine.clock()) == []


def _waiting_behind_a_busy_slot(engine: Engine, count: int) -> list[str]:
    """``count`` one-off jobs refused by a limit of one whose slot another holds: each waits."""
    _limit_of_one_held_by(engine, "busy/t", seconds=600)
    jobs = [_one_off(engine, 5 + n) for n in range(count)]
    for _ in range(count):
        engine.clock.advance(1)
        engine.deliver_all()
    engine.clock.advance(4)
    assert [_run_of(engine, job_id).reason for job_id in jobs] == [Reason.LIMITED] * count
    return jobs


def _wake_of(engine: Engine, job_id: str) -> tuple[WorkMessage, str]:
    """The wake-up a hand-over sent the job's run (its own message may be back as well)."""
    for message in engine.queue.receive():
        parsed = WorkMessage.from_json(message["Body"])
        if parsed.job_id == job_id and parsed.handed is not None:
            return parsed, message["ReceiptHandle"]
        engine.queue.change_visibility(message["ReceiptHandle"], 0)
    raise AssertionError(f"no wake-up of {job_id}")


def _release_busy(engine: Engine, job_id: str) -> None:
    """What the busy slot's worker does with its outcome: release (the limit covers ``job_id``) and wake."""
    limiting = engine.executor.limiting
    job = engine.store.get_job(job_id)
    assert job is not None
    limiting.release(Held("alice", "busy/t", "busy", limiting.gates(job)))


def test_a_woken_run_that_will_not_start_passes_its_slot_on_to_the_next(engine: Engine) -> None:
    first, second = _waiting_behind_a_busy_slot(engine, 2)
    _release_busy(engine, first)
    (slot,) = engine.store.limit_use("alice", "hooks").slots
    assert slot.handed and slot.job_id == first
    engine.service.cancel_job("alice", first)  # before its wake-up is delivered
    wake, receipt = _wake_of(engine, first)
    assert wake.handed == "hooks"
    engine.executor.handle(wake, receipt)
    assert _run_of(engine, first).status is RunStatus.CANCELLED
    (slot,) = engine.store.limit_use("alice", "hooks").slots
    assert slot.handed and slot.job_id == second, "passed on at once, not after its hand-over lapsed"
    wake, receipt = _wake_of(engine, second)
    engine.executor.handle(wake, receipt)
    assert _run_of(engine, second).status is RunStatus.SUCCEEDED
    assert engine.store.limit_use("alice", "hooks").slots == ()


def test_a_run_whose_hand_over_lapsed_waits_on_the_list_again(engine: Engine) -> None:
    (job_id,) = _waiting_behind_a_busy_slot(engine, 1)
    _release_busy(engine, job_id)
    assert engine.store.limit_use("alice", "hooks").waiting == ()
    wake, receipt = _wake_of(engine, job_id)
    engine.clock.advance(6)  # its wake-up came late: the slot went to a newcomer meanwhile
    now = engine.clock()
    assert engine.store.take_slot(
        "alice", "hooks", 1, holder="new/t", job_id="j", now=now, lease_until=now + timedelta(minutes=1)
    )
    with pytest.raises(ReturnLater):
        engine.executor.handle(wake, receipt)
    waiting = engine.store.limit_use("alice", "hooks").waiting
    assert [w.job_id for w in waiting] == [job_id], "back on the list, so the next release hands it over"
    assert _release_busy_as(engine, "new/t") == job_id


def _release_busy_as(engine: Engine, holder: str) -> str | None:
    handed = engine.store.release_slot("alice", "hooks", holder=holder, max_concurrent=1, now=engine.clock())
    return handed[0].job_id if handed else None


def test_a_record_held_for_its_second_uses_the_limits_read_with_its_batch(engine: Engine) -> None:
    calls = _count_limit_reads(engine)
    wait = int(LIMITS_CACHE_SECONDS) + 5  # within the worker's early wait, beyond the cache's time
    job_id = _one_off(engine, wait)
    message, receipt = _message(engine, job_id)
    engine.executor.arrive([(message, receipt)])  # the batch's read: run, job and the owner's limits
    engine.executor.handle(message, receipt)  # waits for its second, then calls
    assert _run_of(engine, job_id).status is RunStatus.SUCCEEDED
    assert calls == [], "no read of the limits of its own after its wait"


def test_a_run_refused_just_before_its_second_waits_from_its_second(engine: Engine) -> None:
    _limit_of_one_held_by(engine, "busy/t", seconds=60)
    job_id = _one_off(engine, 5)
    engine.clock.advance(4.6)  # the attempt starts half a second ahead (PRESTART_SECONDS)
    message, receipt = _message(engine, job_id)
    with pytest.raises(ReturnLater):
        engine.executor.handle(message, receipt)
    run = _run_of(engine, job_id)
    assert run.reason is Reason.LIMITED
    assert run.limited_since == run.scheduled_for, "not before the second it was due at"
    (waiter,) = engine.store.limit_use("alice", "hooks").waiting
    assert waiter.since == run.scheduled_for

"""The heartbeat's lease: short for short attempts, growing with a long attempt's age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual_functions.core.model import Run, RunStatus
from punctual_functions.worker.heartbeat import (
    MAX_LEASE_SECONDS,
    AgeAlarm,
    Heartbeat,
    beat_interval,
    beats_for,
    lease_for,
    next_beat_by,
)

BASE = 4  # the default lease_seconds
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class SimulatedTime:
    """A monotonic clock that moves only when the heartbeat waits; stops it at ``end``."""

    def __init__(self, end: float) -> None:
        self.now = 0.0
        self.end = end

    def monotonic(self) -> float:
        return self.now

    def __call__(self) -> datetime:
        return T0 + timedelta(seconds=self.now)

    def wait(self, _event: object, seconds: float) -> bool:
        if self.now + seconds >= self.end:
            self.now = self.end
            return True
        self.now += seconds
        return False


class CountingStore:
    def __init__(self, refuse_after: int | None = None) -> None:
        self.leases: list[float] = []
        self.refuse_after = refuse_after

    def renew_lease(self, run: Run, lease_until: datetime) -> bool:
        if self.refuse_after is not None and len(self.leases) >= self.refuse_after:
            return False
        self.leases.append((lease_until - T0).total_seconds())
        return True


class CountingQueue:
    def __init__(self) -> None:
        self.visibility: list[int] = []

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self.visibility.append(seconds)


def run_item() -> Run:
    return Run(job_id="j", run_id="r", owner="o", scheduled_for=T0, status=RunStatus.RUNNING)


def beat_for(
    seconds: float,
    store: CountingStore | None = None,
    queue: CountingQueue | None = None,
    **kwargs: Any,
) -> tuple[Heartbeat, CountingStore, CountingQueue]:
    """Run a heartbeat's loop (on this thread) for an attempt of ``seconds``, in simulated time."""
    time = SimulatedTime(seconds)
    store = store or CountingStore(kwargs.pop("refuse_after", None))
    queue = queue or CountingQueue()
    heartbeat = Heartbeat(
        store,  # type: ignore[arg-type]
        queue,  # type: ignore[arg-type]
        run_item(),
        "receipt",
        base_lease=BASE,
        clock=time,  # type: ignore[arg-type]
        **kwargs,
    )
    heartbeat._run()
    return heartbeat, store, queue


def test_a_short_attempt_keeps_the_base_lease_and_beats_every_third_of_it() -> None:
    _heartbeat, store, queue = beat_for(7.9)
    assert len(store.leases) == 5  # at 1.33, 2.67, 4, 5.33, 6.67 s
    assert queue.visibility == [BASE] * 5, "a worker dying early is still replaced within the base lease"
    renewed_at = [lease - BASE for lease in store.leases]
    assert renewed_at == pytest.approx([4 / 3 * n for n in range(1, 6)])


def test_a_long_attempt_makes_a_few_dozen_beats_not_hundreds() -> None:
    # Before the lease grew, an 840 s attempt renewed every 1.33 s: about 630 writes and SQS calls.
    heartbeat, store, queue = beat_for(840)
    assert heartbeat.beats == len(store.leases) == len(queue.visibility) == beats_for(840, BASE)
    assert 30 <= heartbeat.beats <= 50
    assert max(queue.visibility) == MAX_LEASE_SECONDS
    # each beat comes before the previous lease ran out, with two thirds of it to spare
    renewed_at = [0.0] + [
        lease - visibility for lease, visibility in zip(store.leases, queue.visibility, strict=True)
    ]
    for before, lease, after in zip(renewed_at, [BASE, *queue.visibility], renewed_at[1:], strict=False):
        assert after - before <= lease / 3 + 1e-6


def test_the_lease_is_half_the_attempts_age_within_its_bounds() -> None:
    assert lease_for(0, BASE) == BASE
    assert lease_for(7.9, BASE) == BASE
    assert lease_for(60, BASE) == 30
    assert lease_for(10_000, BASE) == MAX_LEASE_SECONDS
    assert lease_for(10, 300) == 300, "a deployment's longer base lease is never shortened"
    assert beat_interval(3) == 1.0


def test_a_refused_renewal_marks_the_run_lost_and_stops_the_beat() -> None:
    heartbeat, store, _queue = beat_for(60, refuse_after=2)
    assert heartbeat.lost.is_set()
    assert len(store.leases) == 2 and heartbeat.beats == 3


def test_the_age_alarm_rings_once_at_its_age_even_between_distant_beats() -> None:
    rang: list[float] = []
    beat_for(700, alarm=AgeAlarm(500.0, rang.append))
    assert rang == [500.0], "the alarm comes at its age, not at the next beat (up to 40 s later)"


def test_the_next_beat_of_another_workers_attempt_is_bounded_by_its_lease() -> None:
    run = run_item()
    now = T0 + timedelta(seconds=10)
    # renewed just now with the base lease: its next beat comes a third of a lease later
    fresh = Run(**{**run.__dict__, "lease_until": now + timedelta(seconds=BASE)})
    assert next_beat_by(fresh, BASE, now) == now + timedelta(seconds=BASE / 3)
    # a long attempt's lease: the bound is later than its true beat, never earlier
    long_lease = Run(**{**run.__dict__, "lease_until": now + timedelta(seconds=60)})
    assert next_beat_by(long_lease, BASE, now) >= now + timedelta(seconds=20)
    # an overdue beat gets one more base interval
    overdue = Run(**{**run.__dict__, "lease_until": now - timedelta(seconds=1)})
    assert next_beat_by(overdue, BASE, now) == now + timedelta(seconds=BASE / 3)


def test_a_beat_hides_the_message_before_it_writes_the_lease() -> None:
    # A write to a busy table may take longer than the third of a lease left: the message's
    # visibility, an SQS call of milliseconds, comes first, so the message never reappears while the
    # attempt runs (seen in the worker_queue benchmark: 105 re-deliveries per 1,000 runs before).
    order: list[str] = []

    class Store(CountingStore):
        def renew_lease(self, run: Run, lease_until: datetime) -> bool:
            order.append("lease")
            return super().renew_lease(run, lease_until)

    class Queue(CountingQueue):
        def change_visibility(self, receipt_handle: str, seconds: int) -> None:
            order.append("visibility")
            super().change_visibility(receipt_handle, seconds)

    beat_for(3, Store(), Queue())
    assert order == ["visibility", "lease", "visibility", "lease"]


def test_a_beat_whose_visibility_call_fails_still_renews_the_lease() -> None:
    class Failing(CountingQueue):
        def change_visibility(self, receipt_handle: str, seconds: int) -> None:
            raise ConnectionError("SQS did not answer")

    _heartbeat, store, _queue = beat_for(3, queue=Failing())
    assert len(store.leases) == 2


def test_the_first_beat_comes_before_the_workers_hold_of_the_message_runs_out() -> None:
    # A message received after its second is held for 2 s; if its start write took 1.2 s of that, the
    # usual first beat (1.33 s into the attempt) would come after the message reappeared.
    _heartbeat, store, queue = beat_for(1.0, hidden_until=0.8)
    assert store.leases == [pytest.approx(0.3 + BASE)]
    assert queue.visibility == [BASE]
    # with time enough left, the first beat keeps its place
    _heartbeat, store, _queue = beat_for(1.5, hidden_until=2.0)
    assert store.leases == [pytest.approx(BASE / 3 + BASE)]

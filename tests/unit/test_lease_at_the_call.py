"""A start whose answer came late (a throttled table) has its lease renewed before the call, and a
worker whose attempt was taken over meanwhile does not call: the simulator found the call made twice
(docs/scale.md)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from punctual_functions.core.model import Run, RunStatus
from punctual_functions.worker import lease
from tests.conftest import Clock
from tests.unit.test_engine_on_fakes import SETTINGS, Engine, engine_with


def slow_start(engine: Engine, clock: Clock, seconds: float, then: Any = None) -> None:
    """The start's write lands; its answer comes ``seconds`` later (the SDK's retries)."""
    start = engine.store.start_attempt

    def started(*args: Any, **kwargs: Any) -> Any:
        run = start(*args, **kwargs)
        clock.advance(seconds)
        if then is not None:
            then(run)
        return run

    engine.store.start_attempt = started  # type: ignore[method-assign]


def test_a_start_answered_late_renews_its_lease_before_the_call(clock: Clock) -> None:
    engine = engine_with(SETTINGS, clock)
    job = engine.create(schedule={"at": (clock() + timedelta(seconds=5)).isoformat()})
    slow_start(engine, clock, SETTINGS.lease_seconds - 0.5)
    renewed: list[datetime] = []
    renew = engine.store.renew_lease

    def renew_lease(run: Run, lease_until: datetime) -> bool:
        renewed.append(lease_until)
        return renew(run, lease_until)

    engine.store.renew_lease = renew_lease  # type: ignore[method-assign]
    clock.advance(5)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and len(engine.targets.deliveries) == 1
    assert renewed and renewed[0] >= clock() + timedelta(seconds=1), "renewed before the call"


def test_a_worker_whose_attempt_was_taken_over_during_a_slow_start_does_not_call(clock: Clock) -> None:
    engine = engine_with(SETTINGS, clock)
    job = engine.create(schedule={"at": (clock() + timedelta(seconds=5)).isoformat()})

    def taken_over(run: Run) -> None:  # another delivery found the lease run out and took it
        stored = engine.store.runs[run.job_id][run.run_id]
        engine.store.runs[run.job_id][run.run_id] = replace(
            stored, lease_token="other", lease_until=clock() + timedelta(seconds=SETTINGS.lease_seconds)
        )

    slow_start(engine, clock, SETTINGS.lease_seconds + 0.5, taken_over)
    clock.advance(5)
    engine.deliver_all()
    assert engine.targets.deliveries == [], "the other delivery calls, not this one"
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.RUNNING and run.lease_token == "other"


def test_a_renewal_answered_after_its_lease_ran_out_is_made_again_and_a_lost_attempt_not_called(
    clock: Clock,
) -> None:
    # The renewal before the call landed, but its answer came after the lease it wrote had run out,
    # and another delivery took the attempt over meanwhile: this worker must not call.
    engine = engine_with(SETTINGS, clock)
    job = engine.create(schedule={"at": (clock() + timedelta(seconds=5)).isoformat()})
    slow_start(engine, clock, SETTINGS.lease_seconds - 0.5)
    renew = engine.store.renew_lease

    def renew_lease(run: Run, lease_until: datetime) -> bool:
        landed = renew(run, lease_until)
        clock.advance(SETTINGS.lease_seconds + 0.5)  # the SDK's retries
        stored = engine.store.runs[run.job_id][run.run_id]
        engine.store.runs[run.job_id][run.run_id] = replace(
            stored, lease_token="other", lease_until=clock() + timedelta(seconds=SETTINGS.lease_seconds)
        )
        return landed

    engine.store.renew_lease = renew_lease  # type: ignore[method-assign]
    clock.advance(5)
    engine.deliver_all()
    assert engine.targets.deliveries == [], "the other delivery calls, not this one"
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.lease_token == "other"


@pytest.mark.parametrize("left", [0.2, 3.5])
def test_the_first_beat_is_due_before_the_lease_or_the_hold_ends(clock: Clock, left: float) -> None:
    context = engine_with(SETTINGS, clock).executor.context
    run = Run(
        job_id="j",
        run_id="r",
        owner="o",
        scheduled_for=clock(),
        status=RunStatus.RUNNING,
        lease_until=clock() + timedelta(seconds=left),
    )
    now = clock.monotonic()
    assert lease.renew_by(context, run, None) == pytest.approx(now + left, abs=0.05)
    assert lease.renew_by(context, run, now + 1.0) == pytest.approx(now + min(1.0, left), abs=0.05)

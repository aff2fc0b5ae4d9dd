"""AWS misbehaving: throttled requests and answers lost after the request took effect.

The emulator injects both (``PUNCTUAL_EMULATOR_FAULTS``); the SDK retries, and the protocol must
still deliver every job exactly once.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta

import pytest

from punctual.local.emulator import EmulatorThread, FaultInjector
from punctual.testing.receiver import Receiver
from punctual_functions.core.model import JobStatus, RunStatus, iso
from tests.integration.conftest import Harness


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """This module's emulator throttles 5 % of requests and loses the answer of another 5 %."""
    emulator = EmulatorThread()
    injector = FaultInjector(emulator.server.app, throttle=0.05, lost=0.05, rng=random.Random(7))
    emulator.server.app = injector
    emulator.start()
    yield emulator.endpoint
    emulator.stop()
    assert injector.injected["throttle"] > 0 and injector.injected["lost"] > 0, injector.injected


def test_every_job_is_delivered_once_despite_throttling_and_lost_answers(
    harness: Harness, receiver: Receiver
) -> None:
    jobs = [
        harness.create(
            schedule={"at": iso(harness.clock() + timedelta(seconds=5 * n))},
            target={"type": "http", "url": f"{receiver.url}/job-{n}"},
        )
        for n in range(25)
    ]
    for _ in range(12):
        harness.clock.advance(20)
        harness.dispatcher.sweep()
        while harness.work():
            pass
    for n, job in enumerate(jobs):
        deliveries = receiver.for_path(f"/job-{n}")
        assert len(deliveries) == 1, f"job {n} delivered {len(deliveries)} times"
        runs, _ = harness.store.list_runs(job["job_id"], limit=5)
        assert [run.status for run in runs] == [RunStatus.SUCCEEDED], (n, runs)
        assert harness.job(job["job_id"]).status is JobStatus.COMPLETED

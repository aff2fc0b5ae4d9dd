"""Target limits under process chaos: jobs due at one second under ``max_concurrent: 10`` while
workers are SIGKILLed, some of them holding slots. The receiver never has more than 10 requests at
once, every job is delivered (none early, each under one Idempotency-Key), and no slot is leaked: a
killed worker's slot lapses with its lease, so a second wave after the kills runs 10 at once again.
Marked slow (`make test-slow`)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from punctual.testing.receiver import Receiver
from punctual.testing.stack import StackProcess, local_stack
from punctual_functions.core.model import iso
from tests.chaos.test_process_chaos import call

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("chaos")]

MAX_CONCURRENT = 10
FIRST_WAVE = 100
SECOND_WAVE = 30
CALL_SECONDS = 1.0


class Gauge:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.gather: threading.Barrier | None = None
        self.to_gather = 0

    def respond(self, _path: str, _n: int) -> tuple[int, bytes]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            gather = self.gather if self.to_gather > 0 else None
            self.to_gather -= 1
        # The second wave's first ten wait for each other; only they: a barrier each later group had
        # to fill again held the calls past the worker's timeout whenever a slot was between runs,
        # and the abandoned requests still counted here.
        if gather is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                gather.wait()
        time.sleep(CALL_SECONDS)
        with self.lock:
            self.now -= 1
        return 200, b'{"ok": true}'

    def reset(self) -> None:
        """From now on: the most at once afresh, and the next ``MAX_CONCURRENT`` requests held until
        that many are open together (or a while has passed)."""
        with self.lock:
            self.most = self.now
            self.gather = threading.Barrier(MAX_CONCURRENT, timeout=20)
            self.to_gather = MAX_CONCURRENT


@pytest.fixture
def chaotic_stack(tmp_path: Path) -> Iterator[StackProcess]:
    with local_stack(tmp_path, workers=3, env={"PUNCTUAL_LOG_FORMAT": "text"}) as stack:
        yield stack


def _wave(base: str, receiver: Receiver, prefix: str, count: int, due: datetime) -> list[str]:
    paths = [f"/{prefix}-{n}" for n in range(count)]
    for start in range(0, count, 100):
        jobs = [
            {
                "schedule": {"at": iso(due)},
                "target": {"type": "http", "url": receiver.url + path},
                "timeout_seconds": 5,
            }
            for path in paths[start : start + 100]
        ]
        status, answer = call(base, "POST", "/v1/jobs/batch", {"jobs": jobs})
        assert status == 200, answer
    return paths


def _all_delivered(receiver: Receiver, paths: list[str], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(not receiver.for_path(p) for p in paths):
        time.sleep(1)
    return [p for p in paths if not receiver.for_path(p)]


def test_no_slot_is_leaked_when_workers_die_holding_them(chaotic_stack: StackProcess) -> None:
    base = chaotic_stack.base_url
    rng = random.Random(20261126)
    gauge = Gauge()
    with Receiver(gauge.respond) as receiver:
        name = f"chaos-{time.time_ns()}"
        status, _ = call(
            base,
            "POST",
            "/v1/limits",
            {"name": name, "match": receiver.url, "max_concurrent": MAX_CONCURRENT},
        )
        assert status == 201
        due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=15)
        first = _wave(base, receiver, "first", FIRST_WAVE, due)
        # Kill a random worker every few seconds while the wave runs under the limit.
        while datetime.now(UTC) < due:
            time.sleep(0.5)
        kills = 0
        for _ in range(8):
            time.sleep(rng.uniform(1.5, 3.5))
            roles = chaotic_stack.roles()
            victim = rng.choice([role for role in roles if role.startswith("worker")])
            try:
                os.kill(roles[victim], signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
        missing = _all_delivered(receiver, first, 240)
        first_most = gauge.most
        # The slots of killed workers lapse with their leases (the job's timeout and ~15 s).
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            status, limit = call(base, "GET", f"/v1/limits/{name}")
            if isinstance(limit, dict) and limit["in_use"] == 0:
                break
            time.sleep(1)
        assert isinstance(limit, dict) and limit["in_use"] == 0, f"slots still held: {limit}"
        # After the kills: a second wave. Had a killed worker's slot been lost for good, fewer than
        # ten would run at once.
        gauge.reset()
        due_again = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=15)
        second = _wave(base, receiver, "second", SECOND_WAVE, due_again)
        missing += _all_delivered(receiver, second, 180)
        time.sleep(3)
        second_most = gauge.most
        dues = {**dict.fromkeys(first, due), **dict.fromkeys(second, due_again)}

    early = [
        p for p, moment in dues.items() for d in receiver.for_path(p) if d.received_at < moment.timestamp()
    ]
    two_keys = [p for p in dues if len({d.headers["Idempotency-Key"] for d in receiver.for_path(p)}) > 1]
    again = sum(len(receiver.for_path(p)) - 1 for p in dues)
    print(
        f"\nlimits chaos: {kills} worker kills; most at once {first_most} during the kills,"
        f" {second_most} after; {again} re-executions (same key)"
    )
    assert kills >= 5
    assert not missing, f"{len(missing)} jobs never delivered: {missing[:5]}"
    assert not early, f"delivered early: {early[:5]}"
    assert not two_keys, f"delivered under two Idempotency-Keys: {two_keys[:5]}"
    assert first_most <= MAX_CONCURRENT and second_most <= MAX_CONCURRENT
    assert second_most == MAX_CONCURRENT, f"after the kills only {second_most} ran at once: a slot leaked"

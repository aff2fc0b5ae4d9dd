"""Process chaos: hundreds of jobs while workers and the dispatcher are SIGKILLed at random.

Every job must be delivered, none early, and never under two different Idempotency-Keys. Marked slow
(`make test-slow`, also run by CI). Lateness figures are printed for the record; they are measured
properly by `make bench`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from punctual.testing.receiver import Receiver
from punctual.testing.stack import StackProcess, local_stack
from punctual_functions.core.model import iso

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("chaos")]

JOBS = 240
WINDOW_SECONDS = 200  # jobs due from 15 s to ~3.5 min out: inside and beyond the 60 s look-ahead
TOKEN = "local-dev-token"


def call(base: str, method: str, path: str, body: object = None) -> tuple[int, object]:
    request = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode() if body else None
    )
    request.add_header("Authorization", f"Bearer {TOKEN}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


@pytest.fixture
def chaotic_stack(tmp_path: Path) -> Iterator[StackProcess]:
    with local_stack(tmp_path, workers=3, env={"PUNCTUAL_LOG_FORMAT": "text"}) as stack:
        yield stack


def test_nothing_is_lost_early_or_doubled_while_roles_are_killed(chaotic_stack: StackProcess) -> None:
    base = chaotic_stack.base_url
    rng = random.Random(20261122)
    with Receiver() as receiver:
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=15)
        due: dict[str, datetime] = {}
        for n in range(JOBS):
            moment = start + timedelta(milliseconds=rng.randrange(0, WINDOW_SECONDS * 1000))
            path = f"/job-{n}"
            status, _ = call(
                base,
                "POST",
                "/v1/jobs",
                {
                    "schedule": {"at": iso(moment)},
                    "target": {"type": "http", "url": receiver.url + path},
                },
            )
            assert status == 201
            due[path] = moment
        # Kill a random worker or the dispatcher every few seconds across the whole window.
        kills = 0
        end = start + timedelta(seconds=WINDOW_SECONDS)
        while datetime.now(UTC) < end:
            time.sleep(rng.uniform(3, 8))
            roles = chaotic_stack.roles()
            victims = [name for name in roles if name.startswith("worker") or name == "dispatcher"]
            victim = rng.choice(victims)
            try:
                os.kill(roles[victim], signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
        # Let the stragglers (runs whose worker died) be taken over and delivered.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and any(not receiver.for_path(p) for p in due):
            time.sleep(1)
        time.sleep(3)

    missing = [p for p in due if not receiver.for_path(p)]
    early = [
        p for p, moment in due.items() for d in receiver.for_path(p) if d.received_at < moment.timestamp()
    ]
    two_keys = [p for p in due if len({d.headers["Idempotency-Key"] for d in receiver.for_path(p)}) > 1]
    lateness = sorted(
        (receiver.for_path(p)[0].received_at - moment.timestamp()) * 1000
        for p, moment in due.items()
        if receiver.for_path(p)
    )
    duplicates = sum(len(receiver.for_path(p)) - 1 for p in due)
    print(
        f"\nchaos: {JOBS} jobs, {kills} kills, {duplicates} re-executions (same key);"
        f" lateness ms p50 {statistics.median(lateness):.0f},"
        f" p99 {lateness[int(len(lateness) * 0.99) - 1]:.0f},"
        f" max {lateness[-1]:.0f}"
    )
    assert kills >= 20
    assert not missing, f"{len(missing)} jobs never delivered: {missing[:5]}"
    assert not early, f"delivered early: {early[:5]}"
    assert not two_keys, f"delivered under two Idempotency-Keys: {two_keys[:5]}"

"""Killing roles of the local stack loses nothing: the supervisor restarts them, the emulator keeps state."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def role_pids(api: Api) -> dict[str, int]:
    pids: dict[str, int] = json.loads((api.state_dir / "roles.json").read_text())
    return pids


def test_jobs_survive_workers_and_dispatcher_being_killed(local_stack: Api) -> None:
    with Receiver() as receiver:
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
        due = {f"/job-{n}": start + timedelta(seconds=n) for n in range(8)}
        for path, moment in due.items():
            status, body = local_stack.call(
                "POST",
                "/v1/jobs",
                {"schedule": {"at": iso(moment)}, "target": {"type": "http", "url": receiver.url + path}},
            )
            assert status == 201, body
        before = role_pids(local_stack)
        for name, pid in before.items():
            if name.startswith("worker") or name == "dispatcher":
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and any(len(receiver.for_path(p)) < 1 for p in due):
            time.sleep(0.2)
        time.sleep(1)
        for path, moment in due.items():
            deliveries = receiver.for_path(path)
            assert len(deliveries) == 1, f"{path} delivered {len(deliveries)} times"
            assert deliveries[0].received_at >= moment.timestamp(), f"{path} fired early"
        after = role_pids(local_stack)
        assert after["dispatcher"] != before["dispatcher"], "the dispatcher was not restarted"
        assert all(after[name] != before[name] for name in before if name.startswith("worker"))
        assert after["emulator"] == before["emulator"] and after["api"] == before["api"]


def test_the_stack_runs_the_serialising_emulator_not_stock_moto(local_stack: Api) -> None:
    pid = role_pids(local_stack)["emulator"]
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"punctual.local.emulator" in command, command


def test_the_dispatcher_yields_the_cores_to_the_workers(local_stack: Api) -> None:
    """Locally all roles share a few cores; a tick's dispatches must not delay a call due at its second."""
    from punctual.local.role import DISPATCHER_NICENESS

    pids = role_pids(local_stack)
    worker = next(pid for name, pid in pids.items() if name.startswith("worker"))
    dispatcher_niceness = os.getpriority(os.PRIO_PROCESS, pids["dispatcher"])
    worker_niceness = os.getpriority(os.PRIO_PROCESS, worker)
    assert dispatcher_niceness == min(19, worker_niceness + DISPATCHER_NICENESS)

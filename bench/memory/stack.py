"""The memory benchmark's stack: the local stack as ``punctual local``'s supervisor runs it, with the
settings the benchmark needs (one shard, the shortest look-ahead, the dispatcher ticking every
``--spacing`` seconds), its worker being the real role instrumented to record each invocation and
each record's wait for its second (``python -m bench.memory _worker``, ``_stack``)."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

# The shortest look-ahead the settings allow, so that the jobs' wait beyond it is short.
LOOKAHEAD_SECONDS = 60
# The dispatcher ticks every ``--spacing`` seconds, the batches due halfway between two ticks, so that
# each tick sweeps one batch and sends its ten messages in one SendMessageBatch, paced to arrive
# head_start_ms before the second. With production's one-minute tick, one sweep sent a minute's
# batches as one paced group in chunks of ten, and every chunk sent more than the sweep's 20 ms lead
# after its moment (the third on) arrived a second early: holds of 1.24 s instead of 0.25 s.
DEFAULT_SPACING = 8
# One shard: a batch's ten triggers are swept and sent together (with four, each shard's sweep sends
# its share, milliseconds apart).
SHARDS = 1
# The local stack's four pollers. A batch that comes in two sends (or that two polls woken together
# split) is two invocations, side by side in the one process and so in the one cgroup: the ten records
# share one size's CPU as in a single invocation (records_per_invocation says how each batch came).
# With one poller, the second part waited for the first invocation to end (the second plus the call):
# messages visible 250 ms early were taken 30-60 ms after their second, whatever the CPU.
WORKER_POLLERS = 4

# --------------------------------------------------------------------- the worker, instrumented


def worker_role(events_path: str, role_args: list[str]) -> None:
    """``punctual.local.role worker`` with a record of each handler invocation (one JSON line: its
    span, its records' job ids, the process CPU clock at both ends) and of each ``sleep_until`` of
    the worker's arrival (the moment waited for, when the wait began and ended, the process CPU clock
    when it began): the last wait of a record, for its second, begins once the record is ready to
    call. The waits are kept in memory and written when an invocation ends, so that nothing but an
    append stands between a wait's end and the call."""
    import punctual_functions.worker.handler as worker_handler
    from punctual_functions.worker.arrival import Arrival

    out = open(events_path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process
    lock = threading.Lock()
    waits: collections.deque[list[float]] = collections.deque()
    sleep_until = Arrival.sleep_until

    def timed_sleep(self: Arrival, moment: datetime) -> None:
        entered, cpu = time.time(), time.process_time()
        sleep_until(self, moment)
        waits.append([moment.timestamp(), entered, time.time(), cpu])

    setattr(Arrival, "sleep_until", timed_sleep)  # noqa: B010 - a method, replaced for the record
    handler = worker_handler.handler

    def timed(event: dict[str, Any], context: Any) -> Any:
        started, cpu = time.time(), time.process_time()
        try:
            return handler(event, context)
        finally:
            ended, cpu_end = time.time(), time.process_time()
            done = []
            while True:
                try:
                    done.append(waits.popleft())
                except IndexError:
                    break
            records = event.get("Records") or []
            line = json.dumps(
                {
                    "t": started,
                    "t_end": ended,
                    "cpu": [cpu, cpu_end],
                    "jobs": [_job_of(r.get("body", "")) for r in records],
                    "waits": done,
                },
                separators=(",", ":"),
            )
            with lock:
                out.write(line + "\n")

    worker_handler.handler = timed
    from punctual.local.role import main as role_main

    role_main(role_args)


def _job_of(body: str) -> str | None:
    try:
        job = json.loads(body).get("job_id")
    except (ValueError, AttributeError):
        return None
    return str(job) if job is not None else None


# ------------------------------------------------------------------------------------ the stack


def serve_stack(config_path: str) -> None:
    """The local stack as ``punctual local`` runs it (``LocalStack``: emulator, api, dispatcher, a
    worker, restarted if they die), its worker being ``worker_role``; stopped with SIGINT/SIGTERM."""
    from punctual.local.supervisor import LocalStack, Role

    config = json.loads(Path(config_path).read_text())
    events = str(config["events"])

    class Stack(LocalStack):
        def _spawn(self, role: Role, env: dict[str, str]) -> None:
            if role.name.startswith("worker") and role.argv[1:3] == ["-m", "punctual.local.role"]:
                role.argv = [role.argv[0], "-m", "bench.memory", "_worker", events, *role.argv[3:]]
            super()._spawn(role, env)

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    stack = Stack(
        port=int(config["port"]),
        workers=1,
        tick_seconds=float(config["tick_seconds"]),
        worker_pollers=int(config["pollers"]),
        settings_overrides=dict(config["settings"]),
        state_dir=str(config["state_dir"]),
    )
    try:
        stack.start()
        print("punctual: the stack is up", flush=True)
        stack.supervise()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


@dataclass
class MemoryStack:
    api: Any  # bench.common.Api
    workdir: Path
    process: subprocess.Popen[bytes]

    @property
    def events_path(self) -> Path:
        return self.workdir / "worker-events.jsonl"

    @property
    def log_path(self) -> Path:
        return self.workdir / "stack.log"

    def worker_pid(self) -> int:
        roles = json.loads((self.workdir / ".punctual" / "roles.json").read_text())
        return int(roles["worker-1"])

    def invocations(self) -> list[dict[str, Any]]:
        if not self.events_path.exists():
            return []
        out = []
        for line in self.events_path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


@contextmanager
def memory_stack(workdir: Path, head_start_ms: int, spacing: int) -> Iterator[MemoryStack]:
    from bench.common import ROOT, Api
    from punctual.local.supervisor import free_port

    port = free_port()
    config = {
        "port": port,
        "tick_seconds": spacing,
        "pollers": WORKER_POLLERS,
        "settings": {
            "shard_count": SHARDS,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "head_start_ms": head_start_ms,
        },
        "state_dir": str(workdir / ".punctual"),
        "events": str(workdir / "worker-events.jsonl"),
    }
    (workdir / "stack.json").write_text(json.dumps(config))
    with (workdir / "stack.log").open("ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.memory", "_stack", str(workdir / "stack.json")],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            # JSON log lines, as on AWS: their formatting is part of the worker's CPU.
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PUNCTUAL_LOG_FORMAT": "json"},
        )
        stack = MemoryStack(Api(f"http://127.0.0.1:{port}"), workdir, process)
        try:
            stack.api.wait_healthy(timeout=90, process=process)
            deadline = time.monotonic() + 30
            while True:
                try:
                    stack.worker_pid()
                    break
                except (OSError, ValueError, KeyError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            yield stack
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

"""The cost benchmark's stack: the local stack's roles as separate processes, each one
``bench.timed_role`` (the real role plus a record of every AWS call it makes and of each handler
invocation), with the settings the scenarios assume (a 10 s tick, a 60 s look-ahead, four shards);
``TimedStack`` reads those records back and the emulator's own request counter."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, Api, emulator
from punctual.local.env import LOCAL_CREDENTIALS, local_settings
from punctual.local.provision import provision
from punctual.local.supervisor import free_port
from punctual_functions.core.settings import Settings

TICK_SECONDS = 10
LOOKAHEAD_SECONDS = 60
SHARDS = 4
AWS_SHARDS = 8  # the deployed default (docs/deploy.md)
TICKS_PER_MONTH = 43_200  # one a minute on AWS
ROLES = ("api", "dispatcher", "worker")
ESM_OPERATIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessageBatch")


# ------------------------------------------------------------------------------------- the stack


@dataclass
class TimedStack:
    api: Api
    endpoint: str
    workdir: Path
    settings: Settings
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def counters(self, reset: bool = False) -> dict[str, int]:
        request = urllib.request.Request(
            self.endpoint + "/_punctual/requests", method="DELETE" if reset else "GET"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            counts: dict[str, int] = json.loads(response.read())
            return counts

    def events(self, since: float, until: float) -> list[dict[str, Any]]:
        out = []
        for role in ROLES:
            path = self.workdir / f"{role}.jsonl"
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if since <= event["t"] < until:
                    out.append(event)
        return out

    def log_bytes(self) -> dict[str, int]:
        return {role: (self.workdir / f"{role}.log").stat().st_size for role in ROLES}


@contextmanager
def timed_stack() -> Iterator[TimedStack]:
    workdir = Path(tempfile.mkdtemp(prefix="punctual-bench-cost-"))
    api_port = free_port()
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = []
    with emulator(workdir) as endpoint:
        try:
            settings = provision(
                local_settings(
                    endpoint, overrides={"shard_count": SHARDS, "lookahead_seconds": LOOKAHEAD_SECONDS}
                )
            )
            env = {
                **os.environ,
                **LOCAL_CREDENTIALS,
                **settings.to_env(),
                # JSON logs, as on AWS, so their size per job means something.
                "PUNCTUAL_LOG_FORMAT": "json",
                "POWERTOOLS_SERVICE_NAME": "punctual",
            }
            role_args = {
                "api": ["--port", str(api_port)],
                "dispatcher": ["--tick-seconds", str(TICK_SECONDS)],
                "worker": ["--pollers", "4", "--name", "worker-1"],
            }
            for role in ROLES:
                role_log = (workdir / f"{role}.log").open("wb")
                logs.append(role_log)
                processes[role] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bench.timed_role",
                        role,
                        "--events",
                        str(workdir / f"{role}.jsonl"),
                        *role_args[role],
                    ],
                    env=env,
                    stdout=role_log,
                    stderr=subprocess.STDOUT,
                    cwd=ROOT,  # `-m bench.timed_role` from wherever the benchmark was started
                    start_new_session=True,
                )
            stack = TimedStack(Api(f"http://127.0.0.1:{api_port}"), endpoint, workdir, settings, processes)
            stack.api.wait_healthy(process=processes["api"])
            yield stack
        finally:
            for process in processes.values():
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGTERM)
            for process in processes.values():
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            for handle in logs:
                handle.close()

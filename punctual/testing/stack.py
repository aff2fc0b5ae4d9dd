"""Starts the real local stack (``punctual local``) as a subprocess, for end-to-end and chaos tests
and for the benchmarks (``bench/common.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from punctual.local.supervisor import free_port


@dataclass(frozen=True)
class StackProcess:
    """A running ``punctual local``: its API, its process and its working directory."""

    base_url: str
    process: subprocess.Popen[bytes]
    workdir: Path

    @property
    def state_dir(self) -> Path:
        return self.workdir / ".punctual"

    def roles(self) -> dict[str, int]:
        """Which process plays which role, from the supervisor's ``roles.json``."""
        roles: dict[str, int] = json.loads((self.state_dir / "roles.json").read_text())
        return roles

    def log_text(self) -> str:
        return (self.workdir / "stack.log").read_text(errors="replace")


@contextmanager
def local_stack(
    workdir: Path,
    *,
    workers: int | None = 2,
    tick_seconds: float | None = 10,
    lookahead_seconds: int | None = 60,
    shards: int | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[StackProcess]:
    """Run ``punctual local`` with its working directory (and so ``.punctual/``) in ``workdir``;
    yields it once the API answers, stops the stack with Ctrl-C afterwards. ``tick_seconds`` and
    ``lookahead_seconds`` (and ``workers``) of None leave the stack's defaults (a one-minute tick), as
    ``make run``."""
    port = free_port()
    log_path = workdir / "stack.log"
    command = [
        sys.executable,
        "-m",
        "punctual",
        "local",
        "--port",
        str(port),
    ]
    if workers is not None:
        command += ["--workers", str(workers)]
    if tick_seconds is not None:
        command += ["--tick-seconds", str(tick_seconds)]
    if lookahead_seconds is not None:
        command += ["--lookahead-seconds", str(lookahead_seconds)]
    if shards is not None:
        command += ["--shards", str(shards)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        stack = StackProcess(f"http://127.0.0.1:{port}", process, workdir)
        try:
            _wait_for_health(stack)
            yield stack
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for_health(stack: StackProcess) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(stack.base_url + "/v1/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if stack.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the local stack did not start:\n" + stack.log_text()[-3000:])
        time.sleep(0.2)

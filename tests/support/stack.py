"""Starts the real local stack (``punctual local``) as a subprocess, for end-to-end and chaos tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from punctual.local.supervisor import free_port


@contextmanager
def local_stack_process(
    state: Path,
    *,
    workers: int = 2,
    tick_seconds: int = 10,
    lookahead_seconds: int = 60,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Run ``punctual local`` with its working directory (and so ``.punctual/``) in ``state``;
    yields the API's base URL once it answers, stops the stack with Ctrl-C afterwards."""
    port = free_port()
    log_path = state / "stack.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "punctual",
                "local",
                "--port",
                str(port),
                "--workers",
                str(workers),
                "--tick-seconds",
                str(tick_seconds),
                "--lookahead-seconds",
                str(lookahead_seconds),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=state,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_health(base_url, process, log_path)
            yield base_url
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_for_health(base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base_url + "/v1/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the local stack did not start:\n" + log_path.read_text()[-3000:])
        time.sleep(0.2)

"""Starts the real local stack (``punctual local``) once for the end-to-end tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from punctual.local.supervisor import free_port

TOKEN = "local-dev-token"


@dataclass
class Api:
    base_url: str
    state_dir: Path
    token: str = TOKEN

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {token or self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    port = free_port()
    state = tmp_path_factory.mktemp("stack")
    log = open(state / "stack.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "punctual",
            "local",
            "--port",
            str(port),
            "--workers",
            "2",
            "--tick-seconds",
            "10",
            "--lookahead-seconds",
            "60",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=state,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    api = Api(f"http://127.0.0.1:{port}", state / ".punctual")
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(api.base_url + "/v1/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.close()
            raise RuntimeError("the local stack did not start:\n" + (state / "stack.log").read_text()[-3000:])
        time.sleep(0.2)
    yield api
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()

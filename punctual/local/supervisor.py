"""Starts every local role in its own process and restarts any that dies.

The emulator process holds all state (table and queues), so killing the api, the dispatcher or a
worker loses nothing: the restarted process carries on from the table and the queue.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from punctual.cdk.config import WORKER_MAX_CONCURRENCY
from punctual.local.env import LOCAL_CREDENTIALS, local_settings, parse_rights
from punctual.local.provision import provision
from punctual.local.role import WORKER_POLLERS
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.settings import Settings

# Below the workers, above the dispatcher role (punctual/local/role.py, DISPATCHER_NICENESS).
EMULATOR_NICENESS = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout:.0f}s")


def _write_json(path: str, data: object) -> None:
    """Replace ``path`` at once: a reader never sees half a file."""
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


@dataclass
class Role:
    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0


@dataclass
class LocalStack:
    port: int = 8000
    workers: int = 1
    aws_endpoint: str | None = None
    emulator_port: int = 0
    tick_seconds: float = 60.0
    worker_pollers: int = WORKER_POLLERS
    # The event source's MaximumConcurrency, shared by the worker processes.
    worker_max_concurrency: int = WORKER_MAX_CONCURRENCY
    settings_overrides: dict[str, object] = field(default_factory=dict)
    log: TextIO = sys.stderr
    state_dir: str = ".punctual"
    roles: list[Role] = field(default_factory=list)
    settings: Settings | None = None
    rights: DeliveryRights | None = None
    _stopping: bool = False

    def environment(self) -> dict[str, str]:
        assert self.settings is not None
        # The allow-list of targets is the table's item (provision wrote it), not a variable: on AWS it
        # does not fit Lambda's 4 KB of environment, and the roles read it the way they do there.
        roles_settings = self.settings.replace(allowed_target_arns=())
        env = {**os.environ, **LOCAL_CREDENTIALS, **roles_settings.to_env()}
        env.setdefault("POWERTOOLS_SERVICE_NAME", "punctual")
        return env

    def start(self) -> Settings:
        python = sys.executable
        if self.aws_endpoint is None:
            emulator_port = self.emulator_port or free_port()
            emulator = Role(
                "emulator",
                [
                    python,
                    "-m",
                    "punctual.local.emulator",
                    "--port",
                    str(emulator_port),
                    # Here every role shares the machine's few cores (on AWS each function has its
                    # own): a tick's burst of dispatches kept the emulator busy while workers had to
                    # call targets at their second. Workers come first, then the emulator (whose
                    # answers workers need half a second ahead), then the dispatcher.
                    "--niceness",
                    str(EMULATOR_NICENESS),
                ],
            )
            self.roles.append(emulator)
            self._spawn(emulator, {**os.environ, **LOCAL_CREDENTIALS})
            wait_for_port(emulator_port)
            endpoint = f"http://127.0.0.1:{emulator_port}"
        else:
            endpoint = self.aws_endpoint
        for key, value in LOCAL_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        if self.rights is None:
            self.rights = parse_rights(os.environ.get("PUNCTUAL_DELIVERY_RIGHTS"))
        self.settings = provision(
            local_settings(endpoint, overrides=self.settings_overrides), rights=self.rights
        )
        role = [python, "-m", "punctual.local.role"]
        self.roles.append(Role("api", [*role, "api", "--port", str(self.port)]))
        self.roles.append(Role("dispatcher", [*role, "dispatcher", "--tick-seconds", str(self.tick_seconds)]))
        for index in range(self.workers):
            self.roles.append(
                Role(
                    f"worker-{index + 1}",
                    [
                        *role,
                        "worker",
                        "--pollers",
                        str(self.worker_pollers),
                        "--max-concurrency",
                        str(-(-self.worker_max_concurrency // self.workers)),
                        "--name",
                        f"worker-{index + 1}",
                    ],
                )
            )
        env = self.environment()
        for proc_role in self.roles:
            if proc_role.process is None:
                self._spawn(proc_role, env)
        wait_for_port(self.port)
        return self.settings

    def _spawn(self, role: Role, env: dict[str, str]) -> None:
        # The emulator logs every request; that goes to a file, the roles' logs to the terminal.
        output = None
        if role.name == "emulator":
            os.makedirs(self.state_dir, exist_ok=True)
            output = open(os.path.join(self.state_dir, "emulator.log"), "ab")  # noqa: SIM115 - owned by the child
        role.process = subprocess.Popen(
            role.argv,
            # The SDK names the role in its User-Agent (app/<role>): the emulator's turns for the
            # table go by role, and its trace names them.
            env={**env, "AWS_SDK_UA_APP_ID": role.name},
            start_new_session=True,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
        )
        if output is not None:
            output.close()
        self._write_state()

    def _write_state(self) -> None:
        """``<state_dir>/roles.json``: which process plays which role (for operators and chaos tests);
        once provisioned, ``<state_dir>/stack.json``: where the stack's resources are (the emulator's
        endpoint, region, table and queues), read by ``punctual dlq``."""
        os.makedirs(self.state_dir, exist_ok=True)
        roles = {role.name: role.process.pid for role in self.roles if role.process is not None}
        _write_json(os.path.join(self.state_dir, "roles.json"), roles)
        if self.settings is not None:
            stack = {
                "api_url": f"http://127.0.0.1:{self.port}",
                "aws_endpoint": self.settings.aws_endpoint_url,
                "region": self.settings.region,
                "table_name": self.settings.table_name,
                "queue_url": self.settings.queue_url,
                "dlq_url": self.settings.dlq_url,
            }
            _write_json(os.path.join(self.state_dir, "stack.json"), stack)

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    def check(self) -> None:
        """Restart every role that has exited (called in a loop by ``supervise``)."""
        for role in self.roles:
            if role.process is not None and role.process.poll() is not None and not self._stopping:
                role.restarts += 1
                print(
                    f"punctual: {role.name} exited with {role.process.returncode}; restarting"
                    f" (restart #{role.restarts})",
                    file=self.log,
                    flush=True,
                )
                env = self.environment() if role.name != "emulator" else {**os.environ, **LOCAL_CREDENTIALS}
                self._spawn(role, env)
                if role.name == "emulator":
                    port = int(role.argv[-1])
                    wait_for_port(port)
                    assert self.settings is not None
                    provision(self.settings, rights=self.rights)

    def supervise(self) -> None:
        while not self._stopping:
            self.check()
            time.sleep(0.5)

    def stop(self) -> None:
        self._stopping = True
        for role in reversed(self.roles):
            if role.process is not None and role.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(role.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for role in self.roles:
            if role.process is None:
                continue
            try:
                role.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(role.process.pid, signal.SIGKILL)
                role.process.wait()

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from punctual_functions.core.clock import SystemClock

# Never let a test reach a real AWS account.
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}.items():
    os.environ[_key] = _value


# The CDK writes each synthesized app's cloud assembly (about 180 MB with its assets) to a new
# directory under the temporary directory and never removes it: a run of the suite left about 4 GB
# in /tmp, and repeated runs filled the disk. Its Node process (started at the first ``import
# aws_cdk``) and every subprocess take their temporary directory from TMPDIR: one for this test
# process, removed when it exits (each xdist worker has its own).
SESSION_TMPDIR = tempfile.mkdtemp(prefix="punctual-tests-")
os.environ["TMPDIR"] = SESSION_TMPDIR
atexit.register(shutil.rmtree, SESSION_TMPDIR, ignore_errors=True)


class Clock(SystemClock):
    """A controllable clock; ``sleep`` advances it instead of waiting. Intervals, event waits and
    background work stay the system's (a heartbeat's thread waits in real time, as it always has)."""

    def __init__(self, start: datetime) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC))


@pytest.fixture
def moto_env() -> Iterator[None]:
    from moto import mock_aws

    from punctual_functions.core import aws

    aws.reset_clients()
    with mock_aws():
        yield
    aws.reset_clients()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """The local stack's emulator (a moto server) over HTTP, in a thread, for the session."""
    from punctual.local.emulator import EmulatorThread

    emulator = EmulatorThread().start()
    yield emulator.endpoint
    emulator.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs moto (``moto``: left out by ``make test-fast``), and run a test that
    reaches past the ports into boto3 (``moto_only``) only on the moto-backed harness."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        params = getattr(item, "callspec", None)
        backend = params.params.get("harness") if params is not None else None
        if backend == "memory" and item.get_closest_marker("moto_only"):
            dropped.append(item)
            continue
        if {"moto_endpoint", "moto_env"} & set(getattr(item, "fixturenames", ())) and backend != "memory":
            item.add_marker(pytest.mark.moto)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty, private config location and no endpoint or token from the developer's shell.

    ``punctual.client`` reads PUNCTUAL_CONFIG when it is imported, so the path is patched, not the env.
    """
    import punctual.client

    path = tmp_path / "punctual" / "config.json"
    monkeypatch.setattr(punctual.client, "CONFIG_PATH", path)
    monkeypatch.setenv("PUNCTUAL_CONFIG", str(path))
    for key in (
        "PUNCTUAL_ENDPOINT",
        "PUNCTUAL_TOKEN",
        "PUNCTUAL_API_KEY",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(key, raising=False)
    return path

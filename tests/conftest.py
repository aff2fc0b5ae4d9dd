from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

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


class Clock:
    """A controllable clock; ``sleep`` advances it instead of waiting."""

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

    from functions.core import aws

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

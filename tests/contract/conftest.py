"""The contract of the table's ports, held against both implementations: ``MemoryStore`` (the
fake the logic's tests use) and ``DynamoStore`` on the moto server. A behaviour the logic relies on
is written here once; when the two disagree, this suite fails on one of them."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.local.provision import provision
from punctual.testing.fakes.store import MemoryStore
from punctual_functions.core import aws
from punctual_functions.core.model import (
    Attempt,
    Job,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    make_trigger,
    new_job_id,
    run_id_for,
)
from punctual_functions.core.ports import Tables
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.schedule import parse_schedule
from punctual_functions.core.settings import Settings
from punctual_functions.core.store import DynamoStore

NOW = datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC)
SHARDS = 4


@pytest.fixture(params=["memory", pytest.param("dynamodb", marks=pytest.mark.moto)])
def tables(request: pytest.FixtureRequest) -> Iterator[Tables]:
    if request.param == "memory":
        yield MemoryStore()
        return
    prefix = f"c{uuid.uuid4().hex[:12]}"
    endpoint = request.getfixturevalue("moto_endpoint")
    # No delivery rights (nor allow-list): the contract tests write their own.
    settings = Settings(aws_endpoint_url=endpoint, table_name=prefix)
    settings = provision(settings, prefix=prefix, rights=DeliveryRights())
    yield DynamoStore(aws.client("dynamodb", settings), settings.table_name, timedelta(days=30))


@dataclass
class World:
    """Builders of jobs, triggers and runs for the contract tests."""

    tables: Tables

    def job(self, *, name: str | None = None, owner: str = "alice", cron: bool = True, **changes: Any) -> Job:
        schedule = (
            parse_schedule(cron="*/10 * * * * *", now=NOW)
            if cron
            else parse_schedule(at=(NOW + timedelta(minutes=5)).isoformat(), now=NOW)
        )
        values: dict[str, Any] = {
            "job_id": new_job_id(),
            "owner": owner,
            "name": name,
            "schedule": schedule,
            "target": {"type": "http", "url": "https://example.com/hook", "method": "POST"},
            "payload": {"n": 1},
            "created_at": NOW,
            "updated_at": NOW,
            **changes,
        }
        return Job(**values)

    def created(self, **options: Any) -> tuple[Job, Trigger]:
        job = self.job(**options)
        # A one-off job's trigger is for its own time; a recurring one's for an occurrence 10 s on.
        trigger = self.trigger(job, job.schedule.first_fire_time() or NOW)
        if job.schedule.is_recurring:
            trigger = self.trigger(job, NOW + timedelta(seconds=10))
        self.tables.create_job(job, trigger)
        stored = self.tables.get_job(job.job_id)
        assert stored is not None
        return stored, trigger

    def trigger(self, job: Job, at: datetime, kind: RunKind = RunKind.SCHEDULED) -> Trigger:
        return make_trigger(job, at, now=NOW, shard_count=SHARDS, kind=kind)

    def run(self, job: Job, at: datetime, status: RunStatus = RunStatus.QUEUED) -> Run:
        return Run(
            job_id=job.job_id,
            run_id=run_id_for(job.job_id, at),
            owner=job.owner,
            scheduled_for=at,
            status=status,
            queued_at=NOW,
            next_attempt_at=at,
            job_version=job.version,
        )

    def dispatched_run(self, **options: Any) -> tuple[Job, Run]:
        """A job whose first occurrence was dispatched: its run is QUEUED."""
        job, trigger = self.created(**options)
        run = self.run(job, trigger.scheduled_for)
        assert self.tables.put_run(run)
        stored = self.tables.get_run(job.job_id, run.run_id)
        assert stored is not None
        return job, stored

    def running(self, **options: Any) -> tuple[Job, Run]:
        job, run = self.dispatched_run(**options)
        started = self.tables.start_attempt(
            run, token="lease-1", now=run.scheduled_for, lease_until=run.scheduled_for + timedelta(seconds=20)
        )
        return job, started


@pytest.fixture
def world(tables: Tables) -> World:
    return World(tables)


class WriteFault(Exception):
    """A write that never reached the table: the process died before it."""


WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")


class _CutClient:
    """The DynamoDB client, each write first asking ``check`` (which raises once the cut is reached)."""

    def __init__(self, client: Any, check: Callable[[], None]) -> None:
        self._client = client
        self._check = check

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in WRITES:
            return attribute

        def write(**request: Any) -> Any:
            self._check()
            return attribute(**request)

        return write


@pytest.fixture
def cut_after(tables: Tables) -> Callable[[int], None]:
    """``cut_after(n)``: the table's next ``n`` writes go through, every one after them raises
    ``WriteFault`` (a process dying between two writes of one call, as seen by the table)."""
    client = getattr(tables, "client", None)

    def cut(writes: int) -> None:
        made = itertools.count()

        def check() -> None:
            if next(made) >= writes:
                raise WriteFault(f"cut after {writes} writes")

        if isinstance(tables, MemoryStore):
            tables.before_write = lambda _what: check()
        else:
            assert isinstance(tables, DynamoStore)
            tables.client = _CutClient(client, check)  # type: ignore[assignment]

    return cut


def attempt(outcome: str = "SUCCEEDED", error: str | None = None, number: int = 1) -> Attempt:
    return Attempt(
        number=number, started_at=NOW, finished_at=NOW, outcome=outcome, duration_ms=5, error=error
    )

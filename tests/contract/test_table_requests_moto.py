"""``sim.table_requests`` tells the truth: each port call, made on ``DynamoStore`` over moto while
every request botocore sends is recorded, and made with the same arguments on a ``MemoryStore`` in the
same state, is mapped to the same requests, on the same partition key values, with the units
DynamoDB's rules give for the items moto actually read and wrote (measured with ``item_size``).

The expected units are computed here from the recorded requests alone, independently of the map: a
write from the items before and after it (a scan of the table around the call), a read from the items
moto answered; a query's read units from the items it read before its filter (the same request asked
again without the filter)."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

import pytest

from punctual.scale.sizes import item_size
from punctual.sim.table_requests import PartitionUnits, TableRequest, requests_for, snapshot
from punctual.testing.fakes.store import MemoryStore
from punctual_functions.core import aws
from punctual_functions.core.calendars import Calendar, HolidaySource
from punctual_functions.core.limits import Limit
from punctual_functions.core.model import (
    Job,
    JobStatus,
    Run,
    RunStatus,
    Trigger,
    bucket_of,
    new_job_id,
    run_id_for,
)
from punctual_functions.core.ports import CalendarStore, JobStore, RunStore, TriggerStore
from punctual_functions.core.resources import table_definition
from punctual_functions.core.settings import Settings
from punctual_functions.core.store import DynamoStore
from tests.contract.conftest import NOW, SHARDS, World, attempt

pytestmark = pytest.mark.moto

TABLE = "requests"
_Key = tuple[str, str]
_Item = dict[str, Any]


@dataclass
class Recorder:
    """Every DynamoDB request the client sends (operation, parameters) and its parsed answer."""

    client: Any
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    paused: bool = False
    _pending: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client.meta.events.register("before-parameter-build.dynamodb", self._sent)
        self.client.meta.events.register("after-call.dynamodb", self._answered)

    def _sent(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if not self.paused:
            self._pending.append((model.name, copy.deepcopy(params)))

    def _answered(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if not self.paused:
            name, params = self._pending.pop()
            assert name == model.name
            self.calls.append((name, params, copy.deepcopy(parsed)))

    def items(self) -> dict[_Key, _Item]:
        """The whole table, unrecorded."""
        self.paused = True
        try:
            found: dict[_Key, _Item] = {}
            request: dict[str, Any] = {"TableName": TABLE}
            while True:
                page = self.client.scan(**request)
                found.update((_key(item), item) for item in page["Items"])
                if "LastEvaluatedKey" not in page:
                    return found
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        finally:
            self.paused = False

    def read_before_filter(self, params: dict[str, Any]) -> list[_Item]:
        """The items a query read: the same request without its filter, unrecorded."""
        request = {k: v for k, v in params.items() if k != "FilterExpression"}
        used = request["KeyConditionExpression"]
        for part in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {k: v for k, v in request.get(part, {}).items() if k in used}
            request.pop(part, None)
            if kept:
                request[part] = kept
        self.paused = True
        try:
            return list(self.client.query(**request)["Items"])
        finally:
            self.paused = False


def _key(item: _Item) -> _Key:
    return item["pk"]["S"], item["sk"]["S"]


def _size(item: _Item | None) -> int:
    return item_size(item) if item else 0


def _read(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


def expected(recorder: Recorder, before: dict[_Key, _Item], after: dict[_Key, _Item]) -> list[TableRequest]:
    """DynamoDB's units for the recorded requests, from the items moto holds and answered."""
    state = dict(before)
    out: list[TableRequest] = []
    for operation, params, parsed in recorder.calls:
        ok = "Error" not in parsed
        parts: list[tuple[str, float, float]] = []
        if operation == "GetItem":
            parts.append((params["Key"]["pk"]["S"], _read(_size(parsed.get("Item")), True), 0.0))
            assert params.get("ConsistentRead") is True
        elif operation == "BatchGetItem":
            ((table, spec),) = params["RequestItems"].items()
            answered = {_key(item): item for item in parsed["Responses"][table]}
            for key in spec["Keys"]:
                size = _size(answered.get(_key(key)))
                parts.append((key["pk"]["S"], _read(size, bool(spec.get("ConsistentRead"))), 0.0))
        elif operation == "Query":
            values = params["ExpressionAttributeValues"]
            partition = f"gsi1:{values[':owner']['S']}" if "IndexName" in params else values[":pk"]["S"]
            read = recorder.read_before_filter(params)
            consistent = bool(params.get("ConsistentRead"))
            parts.append((partition, _read(sum(map(item_size, read)), consistent), 0.0))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((action, body),) = entry.items()
                parts += _written(state, after, action, body, ok, tx=True)
        else:
            parts += _written(state, after, operation.removesuffix("Item"), params, ok, tx=False)
        merged: dict[str, list[float]] = {}
        for partition, rcu, wcu in parts:
            merged.setdefault(partition, [0.0, 0.0])
            merged[partition][0] += rcu
            merged[partition][1] += wcu
        out.append(TableRequest(operation, tuple(PartitionUnits(p, r, w) for p, (r, w) in merged.items())))
    return out


def _written(
    state: dict[_Key, _Item], after: dict[_Key, _Item], action: str, body: dict[str, Any], ok: bool, tx: bool
) -> list[tuple[str, float, float]]:
    """One item's write (Put, Update, Delete), from the item before it (``state``, moved on as the
    call's requests write) and after the call; ``ok``: not refused."""
    key = _key(body["Item"] if action == "Put" else body["Key"])
    old = state.get(key)
    new = body["Item"] if action == "Put" else after.get(key) if action == "Update" else None
    size = max(_size(old), _size(new) if ok or action == "Put" else 0)
    units = float(max(1, math.ceil(size / 1024)))
    parts = [(key[0], 0.0, units * (2 if tx else 1))]
    if not ok:
        return parts
    if old != new:  # the owner index follows a changed job item
        for index_pk in dict.fromkeys(i["gsi1pk"]["S"] for i in (old, new) if i and "gsi1pk" in i):
            parts.append((f"gsi1:{index_pk}", 0.0, units))
    if new is None:
        state.pop(key, None)
    else:
        state[key] = new
    return parts


def _shape(requests: list[TableRequest]) -> list[tuple[str, dict[str, tuple[float, float]]]]:
    return [(r.operation, {u.partition: (u.rcu, u.wcu) for u in r.units}) for r in requests]


def _call(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return method(*args, **kwargs)
    except Exception as error:
        return error


@dataclass
class Twins:
    """A DynamoStore on moto and a MemoryStore, kept in the same state by making every call on both."""

    dynamo: DynamoStore
    memory: MemoryStore
    recorder: Recorder
    world: World

    def both(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Set the scene: the call on both, unchecked (the map still sees it, as the simulator's
        does: it learns where job items live); the fake's answer."""
        _call(getattr(self.dynamo, method), args, kwargs)
        seen = snapshot(self.memory, method, args, kwargs)
        result = _call(getattr(self.memory, method), args, kwargs)
        requests_for(method, args, kwargs, result, seen, self.memory)
        return result

    def check(
        self, method: str, *args: Any, dynamo_args: tuple[Any, ...] | None = None, **kwargs: Any
    ) -> list[TableRequest]:
        """The call on both; the map of the fake's call must be what moto saw. ``dynamo_args``: the
        adapter's own view of the arguments (a trigger as the table's query gives it)."""
        before = self.recorder.items()
        self.recorder.calls.clear()
        answer = _call(getattr(self.dynamo, method), dynamo_args or args, kwargs)
        truth = expected(self.recorder, before, self.recorder.items())
        seen = snapshot(self.memory, method, args, kwargs)
        result = _call(getattr(self.memory, method), args, kwargs)
        mapped = requests_for(method, args, kwargs, result, seen, self.memory)
        assert _shape(mapped) == _shape(truth), method
        if isinstance(answer, BaseException) or isinstance(result, BaseException | bool | None):
            assert type(answer) is type(result), (method, answer, result)
        return mapped


@pytest.fixture
def twins(moto_env: None) -> Iterator[Twins]:
    client = aws.client("dynamodb", Settings(table_name=TABLE))
    client.create_table(**table_definition(TABLE))
    memory = MemoryStore()
    yield Twins(DynamoStore(client, TABLE, timedelta(days=30)), memory, Recorder(client), World(memory))


def _operations(requests: list[TableRequest]) -> list[str]:
    return [request.operation for request in requests]


BIG = {"blob": "x" * 3000}  # a job item of a few KB: its units are more than the minimum


def _create(twins: Twins, **options: Any) -> tuple[Job, Trigger]:
    """A recurring job created on both, with its trigger 10 s on."""
    job = twins.world.job(**options)
    trigger = twins.world.trigger(job, NOW + timedelta(seconds=10))
    twins.both("create_job", job, trigger)
    return job, trigger


def _one_off(twins: Twins, minutes: int, **options: Any) -> tuple[Job, Trigger]:
    at = NOW + timedelta(minutes=minutes)
    job = twins.world.job(cron=False, job_id=new_job_id(bucket_of(at), SHARDS), **options)
    trigger = twins.world.trigger(job, at)
    return job, trigger


# ------------------------------------------------------------------------------------------ jobs


def test_a_recurring_job_is_created_as_its_records_then_its_trigger_then_the_job_and_its_index_entry(
    twins: Twins,
) -> None:
    job = twins.world.job(name="nightly", payload=BIG)
    trigger = twins.world.trigger(job, NOW + timedelta(seconds=10))
    mapped = twins.check("create_job", job, trigger, ("key-1", "fingerprint"))
    assert _operations(mapped) == ["PutItem"] * 4
    assert [u.partition for u in mapped[3].units] == [f"JOB#{job.job_id}", "gsi1:OWNER#alice"]
    assert mapped[3].units[0].wcu == mapped[3].units[1].wcu == 4.0
    twins.check("create_job", job, trigger, ("key-1", "fingerprint"))  # a retry: its own write, read back
    twins.check("get_job", job.job_id)
    twins.check("name_holder", "alice", "nightly")
    twins.check("name_holder", "alice", "nobody")
    twins.check("get_idempotent_create", "alice", "key-1", NOW)
    twins.check("get_idempotent_create", "alice", "key-2", NOW)


def test_a_one_off_job_is_one_item_in_its_home_trigger_partition(twins: Twins) -> None:
    job, trigger = _one_off(twins, 5, payload=BIG)
    (request,) = twins.check("create_job", job, trigger)
    home = f"T#{trigger.bucket}#{trigger.shard:03d}"
    assert [u.partition for u in request.units] == [home, "gsi1:OWNER#alice"]
    twins.check("get_job", job.job_id)
    twins.check("query_bucket", trigger.bucket, trigger.shard)


def test_a_create_refused_for_its_key_or_its_name_is_charged_for_what_it_wrote(twins: Twins) -> None:
    _create(twins, name="taken")
    twins.both("create_job", twins.world.job(), None, ("key-1", "first"))
    refused = twins.check("create_job", twins.world.job(), None, ("key-1", "other"))
    assert _operations(refused) == ["PutItem"]
    second = twins.world.job(name="taken")
    refused = twins.check("create_job", second, twins.world.trigger(second, NOW), ("key-2", "print"))
    assert _operations(refused) == ["PutItem", "PutItem", "DeleteItem"]


def test_an_api_change_is_one_transaction_and_a_stale_one_reads_the_job_back(twins: Twins) -> None:
    job, _ = _create(twins, name="old", payload=BIG)
    renamed = replace(job, name="new", version=2, updated_at=NOW + timedelta(seconds=1), payload={"n": 2})
    trigger = twins.world.trigger(renamed, NOW + timedelta(minutes=2))
    (transaction,) = twins.check("update_job", job, renamed, trigger=trigger)
    assert len(transaction.units) == 5  # job, its index entry, two names, the trigger
    assert transaction.units[0].wcu == 8.0, "the larger of before and after, doubled"
    stale = twins.check("update_job", job, replace(job, payload={"n": 3}, version=2))
    assert _operations(stale) == ["TransactWriteItems", "GetItem"]
    ended = replace(renamed, status=JobStatus.PAUSED, version=3)
    twins.check("update_job", renamed, ended)
    twins.both("update_job", ended, replace(ended, status=JobStatus.ACTIVE, version=4))
    _create(twins, name="other")
    clash = twins.check(
        "update_job",
        replace(ended, version=4, status=JobStatus.ACTIVE),
        replace(ended, name="other", version=5, status=JobStatus.ACTIVE),
    )
    assert _operations(clash) == ["TransactWriteItems", "GetItem"]


def test_completing_a_job_frees_its_name_and_expiring_one_sets_its_ttl(twins: Twins) -> None:
    job, _ = _create(twins, name="last")
    twins.check("complete_job", replace(job, version=2))
    twins.check("complete_job", job, NOW + timedelta(days=2))
    twins.check("complete_job", job)  # twice: refused, then read back as done
    one_off, trigger = _one_off(twins, 3)
    twins.both("create_job", one_off, trigger)
    twins.check("expire_job", one_off.job_id, NOW + timedelta(days=1))
    (unchanged,) = twins.check("expire_job", one_off.job_id, NOW + timedelta(days=1))
    assert len(unchanged.units) == 1, "the item did not change: no index write"
    twins.check("expire_job", "job_gone000000000000000000", NOW)


def test_a_listing_of_jobs_reads_its_pages_from_the_owner_index(twins: Twins) -> None:
    for n in range(32):
        _create(twins, created_at=NOW + timedelta(seconds=n), payload=BIG if n % 3 == 0 else {})
    _create(twins, owner="bob")
    jobs, cursor = twins.memory.list_jobs("alice", limit=10, cursor=None, statuses=None, name=None)
    twins.check("list_jobs", "alice", limit=10, cursor=None, statuses=None, name=None)
    twins.check("list_jobs", "alice", limit=10, cursor=cursor, statuses=None, name=None)
    paged = twins.check(
        "list_jobs",
        "alice",
        limit=5,
        cursor=None,
        statuses=frozenset({JobStatus.ACTIVE}),
        name=None,
        keep=lambda job: job.created_at < NOW + timedelta(seconds=3),
    )
    assert _operations(paged) == ["Query", "Query"], "25 read, too few kept, the rest read"
    twins.check("list_jobs", "alice", limit=40, cursor=None, statuses=None, name="none", name_prefix="x")
    twins.check("list_jobs", "alice", limit=5, cursor="bad", statuses=None, name=None)
    twins.check("owner_jobs", "alice")
    twins.check("owner_jobs", "carol")
    assert jobs


# -------------------------------------------------------------------------------------- triggers


def test_a_bucket_is_read_with_its_triggers_and_the_one_off_jobs_at_home_in_it(twins: Twins) -> None:
    job, trigger = _one_off(twins, 7, payload={"blob": "y" * 9000})
    twins.both("create_job", job, trigger)
    recurring, _ = _create(twins)
    for seconds in range(12):
        other = replace(
            twins.world.trigger(recurring, NOW + timedelta(minutes=7, seconds=seconds)), shard=trigger.shard
        )
        twins.both("put_trigger", other)
    (query,) = twins.check("query_bucket", trigger.bucket, trigger.shard)
    assert query.units[0].rcu == 4.0, "9 KB of job and 12 triggers: 4 KB pages"
    twins.check("query_bucket", trigger.bucket, (trigger.shard + 1) % SHARDS)
    (stored,) = [
        t for t in twins.memory.query_bucket(trigger.bucket, trigger.shard) if t.job_id == job.job_id
    ]
    (carried,) = [t for t in twins.dynamo.query_bucket(trigger.bucket, trigger.shard) if t.embedded]
    (removal,) = twins.check("delete_trigger", stored, dynamo_args=(carried,))
    assert removal.operation == "UpdateItem" and removal.units[1].partition == "gsi1:OWNER#alice"
    (again,) = twins.check("delete_trigger", stored, dynamo_args=(carried,))
    assert len(again.units) == 1, "nothing changed: no index write"
    twins.check("query_bucket", trigger.bucket, trigger.shard)  # the job item is still read
    twins.check("get_job", job.job_id)


def test_a_trigger_is_put_claimed_and_deleted_and_a_refused_claim_is_charged(twins: Twins) -> None:
    job, _ = _create(twins)
    retry = replace(twins.world.trigger(job, NOW + timedelta(seconds=30)), is_retry=True)
    twins.check("put_trigger", retry)
    twins.check("put_trigger", retry)
    later = NOW + timedelta(minutes=1)
    twins.check("claim_trigger_only", retry, token="first", now=later)
    twins.check("claim_trigger_only", retry, token="again", now=later)
    twins.check(
        "claim_trigger_only", twins.world.trigger(job, NOW + timedelta(hours=1)), token="x", now=later
    )
    twins.check("delete_trigger", retry)
    twins.check("delete_trigger", retry)


def test_a_cursor_is_read_moved_forward_or_refused_and_read_in_batches(twins: Twins) -> None:
    twins.check("get_cursor", 0)
    twins.check("hold_shard", 0, token="a", now=NOW, until=NOW + timedelta(seconds=50))
    twins.check("hold_shard", 0, token="b", now=NOW, until=NOW + timedelta(seconds=50))
    twins.check("advance_cursor", 0, None, "2026-11-22T12:01")
    twins.check("release_shard", 0, token="b")
    twins.check("release_shard", 0, token="a")
    twins.check("advance_cursor", 0, None, "2026-11-22T12:01")
    twins.check("get_cursor", 0)
    twins.check("advance_cursor", 1, None, "2026-11-22T12:02")
    twins.check("oldest_cursor", [0, 1, 2])
    twins.check("oldest_cursor", list(range(150)))


# ------------------------------------------------------------------------------------------ runs


def _run(twins: Twins, job: Job, seconds: int, status: RunStatus = RunStatus.QUEUED) -> Run:
    return twins.world.run(job, NOW + timedelta(seconds=seconds), status)


def test_a_run_is_put_once_unless_it_is_an_older_versions_and_read_alone_or_in_batches(twins: Twins) -> None:
    job, _ = _create(twins)
    run = _run(twins, job, 10)
    twins.check("put_run", run)
    twins.check("put_run", run)
    twins.check("put_run", replace(run, job_version=2))
    twins.check("get_run", job.job_id, run.run_id)
    twins.check("get_run", job.job_id, "20261122T000000.000Z-00000000")
    twins.check("get_run_and_job", job.job_id, run.run_id)
    one_off, trigger = _one_off(twins, 2, payload=BIG)
    twins.both("create_job", one_off, trigger)
    twins.both("put_run", _run(twins, one_off, 120))
    keys = [
        (job.job_id, run.run_id),
        (one_off.job_id, run_id_for(one_off.job_id, NOW + timedelta(seconds=120))),
    ]
    keys += [(job.job_id, run_id_for(job.job_id, NOW + timedelta(seconds=n))) for n in range(120)]
    (batch, rest) = twins.check("get_runs_and_jobs", keys)
    assert len(batch.units) == 2 and rest.operation == "BatchGetItem", "a hundred keys to a request"
    twins.check("get_runs_and_jobs", [])
    twins.check("get_runs", keys)


def test_an_attempt_starts_renews_and_finishes_under_its_lease_and_a_lost_one_is_charged(
    twins: Twins,
) -> None:
    job, _ = _create(twins)
    queued = _run(twins, job, 10)
    twins.both("put_run", queued)
    lease = NOW + timedelta(seconds=40)
    started = twins.memory.start_attempt(
        queued, token="a", now=NOW + timedelta(seconds=10), lease_until=lease
    )
    twins.dynamo.start_attempt(queued, token="a", now=NOW + timedelta(seconds=10), lease_until=lease)
    twins.check("start_attempt", queued, token="b", now=NOW, lease_until=lease)  # RunNotOurs
    twins.check("renew_lease", started, lease + timedelta(seconds=20))
    twins.check("renew_lease", replace(started, lease_token="other"), lease)
    lost = twins.check(
        "finish_attempt",
        replace(started, lease_token="other"),
        attempt(),
        status=RunStatus.SUCCEEDED,
        now=NOW,
    )
    assert _operations(lost) == ["UpdateItem", "GetItem"]
    failed = attempt("FAILED", error="e" * 2500)
    retry = replace(twins.world.trigger(job, NOW + timedelta(hours=1)), is_retry=True, run_id=queued.run_id)
    (transaction,) = twins.check(
        "finish_attempt",
        started,
        failed,
        status=RunStatus.RETRYING,
        now=NOW,
        next_attempt_at=NOW + timedelta(hours=1),
        retry_trigger=retry,
    )
    twins.check("get_run", job.job_id, queued.run_id)
    retrying = twins.memory.get_run(job.job_id, queued.run_id)
    assert retrying is not None
    again = twins.check("start_attempt", retrying, token="c", now=NOW, lease_until=lease)
    assert transaction.units[0].wcu == 2 * again[0].units[0].wcu == 12.0, "5 KB: the error, twice; doubled"
    twins.check("finish_attempt", started, attempt(number=2), status=RunStatus.SUCCEEDED, now=NOW)  # not ours
    twins.check("start_attempt", retrying, token="d", now=NOW, lease_until=lease)  # RunNotOurs


def test_a_run_is_created_by_its_start_or_its_end_when_its_message_came_first(twins: Twins) -> None:
    job, _ = _create(twins)
    first, second = _run(twins, job, 10), _run(twins, job, 20)
    lease = NOW + timedelta(seconds=40)
    twins.check("start_attempt", first, token="a", now=NOW, lease_until=lease, create=True)
    twins.check("mark_run", second, RunStatus.CANCELLED, now=NOW, error=None, create=True)
    twins.check("mark_run", second, RunStatus.CANCELLED, now=NOW, error="late")
    assert twins.check("mark_run", first, RunStatus.SUCCEEDED, now=NOW, error=None) == []  # invalid


def test_a_run_is_marked_alerted_and_set_waiting_once(twins: Twins) -> None:
    job, _ = _create(twins)
    queued, behind = _run(twins, job, 10), _run(twins, job, 20)
    twins.both("put_run", queued)
    twins.both("put_run", behind)
    twins.check("mark_waiting", behind, queued.run_id)
    twins.check("mark_waiting", replace(behind, job_version=9), queued.run_id)
    twins.check("claim_alert", queued, "failure")
    twins.check("claim_alert", queued, "failure")
    twins.check("claim_alert", _run(twins, job, 30), "failure")
    twins.check("mark_run", queued, RunStatus.SKIPPED, now=NOW, error=None, overlap_with=behind.run_id)
    twins.check("mark_run", queued, RunStatus.SKIPPED, now=NOW, error=None)


def test_a_history_is_read_in_pages_newest_first_and_around_a_run(twins: Twins) -> None:
    job, _ = _create(twins)
    runs = [_run(twins, job, 10 * n) for n in range(30)]
    for n, run in enumerate(runs):
        status = RunStatus.SKIPPED if n % 7 == 0 else RunStatus.QUEUED
        twins.both("put_run", replace(run, status=status, error="x" * 600 if n % 2 else None))
    _page, cursor = twins.memory.list_runs(job.job_id, limit=10)
    twins.check("list_runs", job.job_id, limit=10)
    twins.check("list_runs", job.job_id, limit=10, cursor=cursor)
    twins.check("list_runs", job.job_id, limit=100)
    filtered = twins.check("list_runs", job.job_id, limit=10, status=RunStatus.SKIPPED)
    assert _operations(filtered) == ["Query", "Query"], "25 read, 4 kept; then the last 5"
    twins.check("list_runs", job.job_id, limit=3, status=RunStatus.SKIPPED)
    twins.check("list_runs", job.job_id, limit=10, cursor="bad")
    twins.check("recent_runs", job.job_id, limit=20)
    twins.check("recent_runs", job.job_id, limit=50)
    middle = runs[15].run_id
    twins.check("runs_before", job.job_id, middle, limit=3)
    twins.check("runs_after", job.job_id, middle, limit=3)
    between = run_id_for(job.job_id, NOW + timedelta(seconds=155))  # no run of its own
    twins.check("runs_before", job.job_id, between, limit=3)
    twins.check("runs_after", job.job_id, between, limit=3)
    twins.check("runs_after", job.job_id, runs[-1].run_id, limit=3)
    twins.check("recent_runs", "job_none", limit=5)


# ------------------------------------------------------------------------------------- calendars


def test_a_calendar_is_put_read_listed_and_deleted_and_a_refused_write_is_charged(twins: Twins) -> None:
    big = Calendar(
        name="trading",
        holidays=(HolidaySource("US"),),
        exchanges=("XNYS",),
        exchange_closed=frozenset(date(2026, 1, 1) + timedelta(days=n) for n in range(0, 1400, 7)),
        expanded_until=date(2029, 11, 26),
    )
    (put,) = twins.check("put_calendar", "alice", big, expected_version=None)
    assert put.units == (PartitionUnits("CAL#alice", 0.0, 3.0),), "a few KB of closed days"
    refused = twins.check("put_calendar", "alice", Calendar(name="trading"), expected_version=None)
    assert refused[0].units[0].wcu == 3.0, "a refused put is charged for the item it would replace"
    twins.check("put_calendar", "alice", replace(big, version=2), expected_version=1)
    twins.check("put_calendar", "alice", Calendar(name="plain"), expected_version=None)
    twins.check("put_calendar", "alice", Calendar(name="plain", version=3), expected_version=2)
    twins.check("get_calendar", "alice", "trading")
    twins.check("get_calendar", "alice", "nothing")
    (batch,) = twins.check("get_calendars", "alice", ["trading", "plain", "nothing"])
    assert [u.partition for u in batch.units] == ["CAL#alice"]
    twins.check("get_calendars", "alice", [f"c{n}" for n in range(150)])  # two requests
    assert twins.check("get_calendars", "alice", []) == []
    twins.check("list_calendars", "alice")
    twins.check("list_calendars", "bob")
    twins.check("delete_calendar", "alice", "trading", expected_version=1)
    twins.check("delete_calendar", "alice", "trading")
    twins.check("delete_calendar", "alice", "trading")


def test_an_owners_limits_are_one_query(twins: Twins) -> None:
    twins.check("list_limits", "alice")
    for n in range(3):
        limit = Limit(
            f"l{n}", "https://api.example.com/v1", max_concurrent=n + 1, per_second=2.5, created_at=NOW
        )
        for store in (twins.dynamo, twins.memory):  # written by the api alone: not modelled
            store.put_limit("alice", limit, expected_version=None)
    assert _operations(twins.check("list_limits", "alice")) == ["Query"], "its summary item left out"


def test_a_batch_reads_its_owners_limits_in_its_one_request(twins: Twins) -> None:
    job, _ = _create(twins)
    run = _run(twins, job, 10)
    twins.both("put_run", run)
    keys = [(job.job_id, run.run_id), (job.job_id, "nope")]
    assert _operations(twins.check("get_runs_jobs_and_limits", keys, ["bob"])) == ["BatchGetItem"]
    limit = Limit("partner", "https://api.example.com/v1", max_concurrent=10, created_at=NOW)
    for store in (twins.dynamo, twins.memory):
        store.put_limit("alice", limit, expected_version=None)
    both = twins.check("get_runs_jobs_and_limits", keys, ["alice", "bob"])
    assert _operations(both) == ["BatchGetItem"]
    summary = {"alice": [replace(limit, created_at=None)], "bob": []}  # what a worker needs of each
    assert twins.dynamo.get_runs_jobs_and_limits(keys, ["alice", "bob"])[2] == summary


def test_every_method_of_the_port_is_checked_here() -> None:
    parts = (JobStore, TriggerStore, RunStore, CalendarStore)
    port = {name for part in parts for name in vars(part) if name[0] != "_"}
    with open(__file__) as source:
        text = source.read()
    assert "create_job" in port and "hold_shard" in port  # the ports' methods were found
    assert {name for name in port if f'check("{name}"' not in text and f'"{name}", ' not in text} == set()

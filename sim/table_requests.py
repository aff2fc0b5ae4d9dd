"""The DynamoDB requests behind each call of the table port, with their capacity units per partition.

For a call of a ``functions.core.ports.Tables`` method on the in-memory fake (``tests.fakes.store``),
:func:`requests_for` gives the requests ``functions.core.store.DynamoStore`` makes for it, in order,
with the units each consumes on every partition key value it touches: the base table's (``JOB#<id>``,
``T#<bucket>#<shard>``, ...) and the owner index's (``gsi1:OWNER#<owner>``). For each call (the
outermost only)::

    before = snapshot(store, method, args, kwargs)   # the items it may write, as they are
    result = <the call>                               # or the exception it raised
    requests = requests_for(method, args, kwargs, result, before, store)

DynamoDB's rules, as ``bench/cost/`` applies them: a write is 1 WCU per started KB of the larger of
the item before and after (a put: the item replaced and the one written; a refused update: the item
as it is; a delete: the item deleted), doubled in a transaction, charged when refused too (a refused
transaction charges every item); a write that changes a job item writes its owner-index entry too
(projection ALL), a standard write as ``bench/cost/`` counts it. A read is 1 RCU per started 4 KB
per item (GetItem, BatchGetItem), a query request 1 RCU per started 4 KB of the items it read (before
its filter; at most 1 MB); eventually consistent halves (the owner index always is); a missing item
or an empty page costs the minimum. Item sizes: the items ``functions/core/store/items.py`` builds,
measured with ``bench.timed_role.item_size``.
"""

from __future__ import annotations

import heapq
import inspect
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, Protocol

from bench.timed_role import item_size
from functions.core.model import Job, JobStatus, Run, RunStatus, Trigger, home_of, to_ms
from functions.core.ports import ConflictError, Tables
from functions.core.resources import GSI1_SK, PK, SK, TTL_ATTRIBUTE
from functions.core.store.items import embeds, job_to_item, run_to_item, trigger_to_item
from functions.core.store.jobs import IDEMPOTENCY_TTL
from functions.core.store.keys import (
    cursor_key,
    idempotency_key,
    job_key,
    name_key,
    owner_index_pk,
    trigger_pk,
)
from functions.core.store.pages import decode_cursor

PAGE_BYTES = 1024 * 1024  # a query request reads at most 1 MB
_HOLD_BYTES = 60  # a sweep's hold on a cursor item: held_until (13 digits), holder (32 hex)
_FRONTIER_BYTES = 150  # the shard's frontier: 3 times of 13 digits, 2 sweep tokens of 32 hex
BATCH = 100  # keys per BatchGetItem, as the adapter chunks them
_MS = {"N": "1" * 13}  # a time in milliseconds: 13 digits, whatever its value
_TKey = tuple[str, int, str]  # the fake's key of a trigger: bucket, shard, sort key


@dataclass(frozen=True)
class PartitionUnits:
    partition: str  # a base-table partition key value, or "<index name>:<its partition key value>"
    rcu: float
    wcu: float


@dataclass(frozen=True)
class TableRequest:
    operation: str  # the DynamoDB API name: "GetItem", "PutItem", "Query", "TransactWriteItems", ...
    units: tuple[PartitionUnits, ...]  # one per partition key value touched, in the order touched
    bytes: int = field(
        default=0, compare=False
    )  # of the items it carries (read or written): what the SDK (de)serializes


class StateView(Protocol):
    """What is read of the fake after the call: its items (``MemoryStore`` is one)."""

    @property
    def jobs(self) -> dict[str, Job]: ...  # a dict: the newest job last
    @property
    def names(self) -> Mapping[tuple[str, str], str]: ...
    @property
    def idempotency(self) -> Mapping[tuple[str, str], tuple[str, str, int]]: ...
    @property
    def triggers(self) -> Mapping[_TKey, Trigger]: ...
    @property
    def cursors(self) -> Mapping[int, str]: ...
    @property
    def runs(self) -> Mapping[str, Mapping[str, Run]]: ...


@dataclass(frozen=True)
class Before:
    """What :func:`snapshot` keeps of the items a call may write: the fake's (immutable) objects."""

    job: Job | None = None
    run: Run | None = None
    trigger: Trigger | None = None  # the stored trigger at the key of the call's trigger
    holders: tuple[str | None, ...] = ()  # who holds the names it writes (its job's or before's, after's)
    record: tuple[str, str, int] | None = None  # the idempotency record: job id, fingerprint, expiry
    cursor: str | None = None


# ------------------------------------------------------------------------- sizes and the index


class _Memo:
    """Per store: where job items live (the owner index, trigger partitions) and the job items' sizes,
    with the job and embedded trigger sized (immutable: a hit is exact; a changed job is sized again)."""

    def __init__(self) -> None:
        self.count = 0  # jobs indexed (the fake never removes one)
        self.owners: dict[str, list[str]] = {}
        self.homes: dict[str, list[str]] = {}  # trigger partition -> the one-off jobs whose item is there
        self.embedded: dict[str, _TKey] = {}  # job id -> the fake's key of the trigger its item holds
        self.jobs: dict[str, tuple[Job, Trigger | None, int]] = {}
        self.triggers: dict[int, tuple[Trigger, int]] = {}  # by id: the object is kept, its id never reused
        self.runs: dict[tuple[str, str], tuple[Run, int]] = {}  # the last version sized of each run


_MEMOS: weakref.WeakKeyDictionary[Any, _Memo] = weakref.WeakKeyDictionary()
# Run and trigger items are sized by their shape (their texts' lengths, which attributes they hold):
# serializing one costs 25-30 µs and a run changes at every step, but most items have the shape of an
# earlier one. The trade: what a shape leaves out (the digits of a few counters and of an attempt's
# numbers, the names of the alerts sent) is taken as in the first item of that shape: a few bytes off,
# which changes units only at a KB (4 KB) boundary. A job item is serialized again at each change.
_SHAPES: dict[tuple[Any, ...], int] = {}


def _memo(view: StateView) -> _Memo:
    """The store's memo, with the jobs added since (the newest last in the fake's dict). A job added
    without a ``create_job`` seen here is indexed without the trigger its item may carry."""
    memo = _MEMOS.get(view)
    if memo is None or memo.count > len(view.jobs):
        memo = _MEMOS[view] = _Memo()
    for job_id in islice(reversed(view.jobs), len(view.jobs) - memo.count):
        memo.owners.setdefault(view.jobs[job_id].owner, []).append(job_id)
        if _job_pk(job_id)[1]:
            memo.homes.setdefault(_job_pk(job_id)[0], []).append(job_id)
    memo.count = len(view.jobs)
    return memo


@lru_cache(maxsize=1 << 16)
def _job_pk(job_id: str) -> tuple[str, bool]:
    """The job item's partition, and whether it is a trigger partition (a one-off job at home)."""
    return job_key(job_id)[PK]["S"], home_of(job_id) is not None


def _tkey(trigger: Trigger) -> _TKey:
    return trigger.bucket, trigger.shard, f"{to_ms(trigger.fire_at):013d}#{trigger.run_id}"


def _n(value: Any) -> int:
    return -1 if value is None else len(str(value))


def _run_size(run: Run | None) -> int:
    if run is None:
        return 0
    errors = sum(len(a.error or "") + len(a.response) for a in run.attempts)
    shape: tuple[Any, ...] = (len(run.job_id), len(run.owner), run.status, run.kind, run.attempt, errors)
    shape += (len(run.attempts), len(run.error or ""), _n(run.lease_token), _n(run.lateness_ms), run.covers)
    shape += (run.reason, _n(run.overlap_with), _n(run.note), _n(run.by), len(run.alerts_sent))
    shape += (_n(run.jitter_ms or None), run.next_attempt_at is None, run.covers_until is None)
    shape += (run.backfill_until is None,)
    size = _SHAPES.get(shape)
    if size is None:
        item = run_to_item(run, run.scheduled_for)  # any expiry: 10 digits of seconds
        if run.lease_until is not None:  # what only a start writes
            item["lease_until"] = _MS
        if run.lease_token is not None:
            item["lease_token"] = {"S": run.lease_token}
        size = _SHAPES[shape] = item_size(item)
    return size


def _name_size(owner: str, name: str, holder: str | None) -> int:
    item = {**name_key(owner, name), "job_id": {"S": holder}, "reserved_at": _MS}
    return item_size(item) if holder is not None else 0


def _record_size(owner: str, key: str, record: tuple[str, str, int] | None) -> int:
    if record is None:
        return 0
    job_id, fingerprint, expires = record
    values = {"job_id": {"S": job_id}, "fingerprint": {"S": fingerprint}, TTL_ATTRIBUTE: {"N": str(expires)}}
    return item_size({**idempotency_key(owner, key), **values})


def _cursor_size(shard: int, bucket: str | None) -> int:
    return item_size({**cursor_key(shard), "bucket": {"S": bucket}}) if bucket is not None else 0


def _tpk(trigger: Trigger) -> str:
    return trigger_pk(trigger.bucket, trigger.shard)


def _gsi_sk(job: Job) -> str:
    return f"{to_ms(job.created_at):013d}#{job.job_id}"


# --------------------------------------------------------------------------------- the units

_Part = tuple[str, float, float]  # partition, rcu, wcu


def _request(operation: str, parts: list[_Part], size: int = 0) -> TableRequest:
    merged: dict[str, list[float]] = {}
    for partition, rcu, wcu in parts:
        units = merged.setdefault(partition, [0.0, 0.0])
        units[0] += rcu
        units[1] += wcu
    return TableRequest(operation, tuple(PartitionUnits(p, r, w) for p, (r, w) in merged.items()), size)


def _rcu(size: int, consistent: bool) -> float:
    units = max(1, -(-size // 4096))
    return float(units) if consistent else units / 2


def _write(pk: str, old: int, new: int, tx: bool = False, owner: str | None = None) -> list[_Part]:
    """One item's write, sized by the larger of ``old`` and ``new`` (0: no item); ``owner``: it
    changed a job item of that owner, whose owner-index entry is written too."""
    units = float(max(1, -(-max(old, new) // 1024)))
    parts = [(pk, 0.0, 2 * units if tx else units)]
    return [*parts, ("gsi1:" + owner_index_pk(owner), 0.0, units)] if owner is not None else parts


def _pages(items: Iterable[tuple[int, bool]], page_limit: int | None, want: int | None) -> list[int]:
    """Bytes read by each request of a query loop over (size, matches) items: a request reads up to
    ``page_limit`` items (its ``Limit``) or 1 MB; the loop stops after the request in which ``want``
    items matched. A request that stopped at its ``Limit`` answers a LastEvaluatedKey even when nothing
    follows (DynamoDB's rule; moto answers none): one more, empty, request."""
    pages: list[int] = []
    total = count = found = 0
    for size, matches in items:
        if count == page_limit or total + size > PAGE_BYTES:
            pages.append(total)
            if want is not None and found >= want:
                return pages
            total = count = 0
        total, count, found = total + size, count + 1, found + matches
        if page_limit is None and found == want:  # unfiltered: the request's Limit ends here
            return [*pages, total]
    pages.append(total)
    if page_limit is not None and count == page_limit and (want is None or found < want):
        pages.append(0)
    return pages


# ------------------------------------------------------------------------------- the requests


class _Call:
    """One call: its arguments by name (``p``), its ``result``, the items before it (``b``), the store
    after it (``view``) and its memo. A method per port method sends its requests to ``out``."""

    def __init__(self, method: str, p: dict[str, Any], result: Any, b: Before, view: StateView) -> None:
        self.method, self.p, self.result, self.b, self.view = method, p, result, b, view
        self.m = _memo(view)
        self.out: list[TableRequest] = []

    def send(self, operation: str, parts: list[_Part], size: int = 0) -> None:
        self.out.append(_request(operation, parts, size))

    def write(self, operation: str, pk: str, old: int, new: int, owner: str | None = None) -> None:
        self.send(operation, _write(pk, old, new, False, owner), new)

    def get(self, pk: str, size: int, consistent: bool = True) -> None:
        self.send("GetItem", [(pk, _rcu(size, consistent), 0.0)], size)

    def batches(self, keys: list[tuple[str, int]], consistent: bool) -> None:
        for i in range(0, len(keys), BATCH):
            chunk = keys[i : i + BATCH]
            parts = [(pk, _rcu(size, consistent), 0.0) for pk, size in chunk]
            self.send("BatchGetItem", parts, sum(size for _pk, size in chunk))

    def queries(self, pk: str, pages: list[int], consistent: bool) -> None:
        for size in pages:
            self.send("Query", [(pk, _rcu(size, consistent), 0.0)], size)

    def job_size(self, job: Job | None, inside: Any = False) -> int:
        """The job's item, with the trigger it still carries (``inside``: this one instead)."""
        if job is None:
            return 0
        if inside is False:
            key = self.m.embedded.get(job.job_id)
            inside = self.view.triggers.get(key) if key is not None else None
        hit = self.m.jobs.get(job.job_id)
        if hit is None or hit[0] is not job or hit[1] is not inside:
            hit = self.m.jobs[job.job_id] = (job, inside, item_size(job_to_item(job, inside)))
        return hit[2]

    def trigger_size(self, t: Trigger | None) -> int:
        if t is None:
            return 0
        hit = self.m.triggers.get(id(t))
        if hit is None:
            shape: tuple[Any, ...] = (len(t.job_id), len(t.run_id), t.kind, t.is_retry, t.state)
            shape += (t.runs_before, t.job_version, t.claimed_at is None, t.written_at is None)
            shape += (_n(t.claim_token), t.backfill_until is None)
            size = _SHAPES.get(shape) or _SHAPES.setdefault(shape, item_size(trigger_to_item(t)))
            hit = self.m.triggers[id(t)] = (t, size)
        return hit[1]

    def run_size(self, run: Run | None) -> int:
        if run is None:
            return 0
        hit = self.m.runs.get((run.job_id, run.run_id))
        if hit is None or hit[0] is not run:
            hit = self.m.runs[(run.job_id, run.run_id)] = (run, _run_size(run))
        return hit[1]

    def stored_trigger_size(self, t: Trigger) -> int:
        return self.trigger_size(self.view.triggers.get(_tkey(t)))

    # ---------------------------------------------------------------------------------- jobs

    def create_job(self) -> None:
        job, first, b, idem = self.p["job"], self.p["first_trigger"], self.b, self.p["idempotency"]
        if idem is not None:
            record_pk = idempotency_key(job.owner, idem[0])[PK]["S"]
            expires = int((job.created_at + IDEMPOTENCY_TTL).timestamp())
            record = _record_size(job.owner, idem[0], (job.job_id, idem[1], expires))
            self.write("PutItem", record_pk, _record_size(job.owner, idem[0], b.record), record)
            if b.record and b.record[0] != job.job_id and b.record[2] >= int(job.created_at.timestamp()):
                return  # IdempotencyKeyTaken
        if job.name:
            holder, pk = b.holders[0], name_key(job.owner, job.name)[PK]["S"]
            old, new = _name_size(job.owner, job.name, holder), _name_size(job.owner, job.name, job.job_id)
            self.write("PutItem", pk, old, new)
            if holder not in (None, job.job_id, self.p["replacing_name_of"]):
                if idem is not None:  # NameTaken: the record is released again
                    self.write("DeleteItem", record_pk, record, 0)
                return
        pk, at_home = _job_pk(job.job_id)
        inside = first if first is not None and at_home and embeds(job, first) else None
        if first is not None and inside is None:
            self.write("PutItem", _tpk(first), self.trigger_size(b.trigger), self.stored_trigger_size(first))
        if b.job is None:
            if inside is not None:
                self.m.embedded[job.job_id] = _tkey(inside)
            self.write("PutItem", pk, 0, self.job_size(self.view.jobs.get(job.job_id)), job.owner)
            return
        old = self.job_size(b.job)
        self.write("PutItem", pk, old, item_size(job_to_item(job, inside)))
        self.get(pk, old)  # refused: is the job there our own write?

    def update_job(self) -> None:
        was, new, b = self.p["before"], self.p["after"], self.b
        release = bool(was.name) and was.is_live and (new.name != was.name or not new.is_live)
        reserve = bool(new.name) and new.is_live and (new.name != was.name or not was.is_live)
        released, taken = b.holders
        ok = b.job is not None and b.job.version == was.version
        ok = ok and (not release or released in (None, was.job_id))
        ok = ok and (not reserve or taken in (None, new.job_id, self.p["replacing_name_of"]))
        pk, stored = _job_pk(was.job_id)[0], self.view.jobs.get(was.job_id)
        old, changed = self.job_size(b.job), was.owner if ok and stored != b.job else None
        parts = _write(pk, old, self.job_size(stored) if ok else 0, True, changed)
        if release:
            name_pk = name_key(was.owner, was.name)[PK]["S"]
            parts += _write(name_pk, _name_size(was.owner, was.name, released), 0, True)
        if reserve:
            sizes = [_name_size(new.owner, new.name, holder) for holder in (taken, new.job_id)]
            parts += _write(name_key(new.owner, new.name)[PK]["S"], sizes[0], sizes[1], True)
        if (trigger := self.p["trigger"]) is not None:
            written = item_size(trigger_to_item(trigger))
            parts += _write(_tpk(trigger), self.trigger_size(b.trigger), written, True)
        self.send("TransactWriteItems", parts)
        if not ok:
            self.get(pk, old)

    def complete_job(self) -> None:
        job, b = self.p["job"], self.b
        ok = b.job is not None and b.job.status is JobStatus.ACTIVE and b.job.version == job.version
        ok = ok and b.holders[0] in (None, job.job_id)
        pk, old = _job_pk(job.job_id)[0], self.job_size(b.job)
        new = self.job_size(self.view.jobs.get(job.job_id)) if ok else 0
        parts = _write(pk, old, new, True, job.owner if ok else None)
        if job.name:
            name_pk = name_key(job.owner, job.name)[PK]["S"]
            parts += _write(name_pk, _name_size(job.owner, job.name, b.holders[0]), 0, True)
        self.send("TransactWriteItems", parts)
        if not ok:
            self.get(pk, old)

    def expire_job(self) -> None:
        stored = self.view.jobs.get(self.p["job_id"])
        owner = stored.owner if stored is not None and stored != self.b.job else None
        old, new = self.job_size(self.b.job), self.job_size(stored)
        self.write("UpdateItem", _job_pk(self.p["job_id"])[0], old, new, owner)

    def list_jobs(self) -> None:
        p, result = self.p, self.result
        if isinstance(result, BaseException):
            return  # a cursor of another listing: refused before any request
        jobs = sorted((self.view.jobs[i] for i in self.m.owners.get(p["owner"], ())), key=_gsi_sk)[::-1]
        if (start := decode_cursor(p["cursor"])) is not None:
            jobs = [job for job in jobs if _gsi_sk(job) < start[GSI1_SK]["S"]]
        kept = {job.job_id for job in result[0]}
        filtered = p["statuses"] is not None or p["name"] is not None or p["name_prefix"] or p["keep"]
        items = ((self.job_size(job), job.job_id in kept) for job in jobs)
        pages = _pages(items, max(p["limit"], 25) if filtered else None, p["limit"])
        self.queries("gsi1:" + owner_index_pk(p["owner"]), pages, False)

    def owner_jobs(self) -> None:
        items = ((self.job_size(job), True) for job in sorted(self.result, key=_gsi_sk))
        self.queries("gsi1:" + owner_index_pk(self.p["owner"]), _pages(items, None, None), False)

    def get_job(self) -> None:
        self.get(_job_pk(self.p["job_id"])[0], self.job_size(self.result), self.p.get("consistent", True))

    def name_holder(self) -> None:
        owner, name = self.p["owner"], self.p["name"]
        self.get(name_key(owner, name)[PK]["S"], _name_size(owner, name, self.view.names.get((owner, name))))

    def get_idempotent_create(self) -> None:
        owner, key = self.p["owner"], self.p["key"]
        size = _record_size(owner, key, self.view.idempotency.get((owner, key)))
        self.get(idempotency_key(owner, key)[PK]["S"], size)

    # ------------------------------------------------------------------------------ triggers

    def query_bucket(self) -> None:
        """The partition's trigger items in sort-key order, then the job items at home there."""
        pk, m = trigger_pk(self.p["bucket"], self.p["shard"]), self.m
        homed = sorted(m.homes.get(pk, ()))
        carried = {key for job_id in homed if (key := m.embedded.get(job_id)) is not None}
        carriers = {key[2].rpartition("#")[2] for key in carried}  # their run ids: a cheap first test
        own = [t for t in self.result if t.run_id not in carriers or _tkey(t) not in carried]
        sizes = [self.trigger_size(t) for t in own] + [self.job_size(self.view.jobs[i]) for i in homed]
        self.queries(pk, _pages(((size, True) for size in sizes), None, None), self.p.get("consistent", True))

    def put_trigger(self) -> None:
        trigger = self.p["trigger"]
        self.write(
            "PutItem", _tpk(trigger), self.trigger_size(self.b.trigger), self.stored_trigger_size(trigger)
        )

    def claim_trigger_only(self) -> None:
        trigger = self.p["trigger"]
        new = self.stored_trigger_size(trigger) if self.result else 0
        self.write("UpdateItem", _tpk(trigger), self.trigger_size(self.b.trigger), new)

    def delete_trigger(self) -> None:
        trigger, b = self.p["trigger"], self.b
        if self.m.embedded.get(trigger.job_id) != _tkey(trigger):
            self.write("DeleteItem", _tpk(trigger), self.trigger_size(b.trigger), 0)
            return
        # The trigger a one-off job's item carries: the map goes, the job item stays.
        job = self.view.jobs.get(trigger.job_id)
        owner = job.owner if job is not None and b.trigger is not None else None
        old, new = self.job_size(b.job, b.trigger), self.job_size(job, None)
        self.write("UpdateItem", _job_pk(trigger.job_id)[0], old, new, owner)

    def get_cursor(self) -> None:
        shard = self.p["shard"]
        self.get(cursor_key(shard)[PK]["S"], _cursor_size(shard, self.view.cursors.get(shard)))

    def advance_cursor(self) -> None:
        shard = self.p["shard"]
        old, new = _cursor_size(shard, self.b.cursor), _cursor_size(shard, self.p["new"])
        self.write("UpdateItem", cursor_key(shard)[PK]["S"], old, new + _HOLD_BYTES)

    def hold_shard(self) -> None:  # one update, read back with ReturnValues (no read units)
        shard = self.p["shard"]
        size = _cursor_size(shard, self.view.cursors.get(shard)) + _FRONTIER_BYTES
        self.write("UpdateItem", cursor_key(shard)[PK]["S"], size, size + _HOLD_BYTES)

    release_shard = hold_shard

    def oldest_cursor(self) -> None:  # eventually consistent
        cursors = self.view.cursors
        self.batches(
            [(cursor_key(s)[PK]["S"], _cursor_size(s, cursors.get(s))) for s in self.p["shards"]], False
        )

    # ---------------------------------------------------------------------------------- runs

    def get_run(self) -> None:
        self.get(f"JOB#{self.p['job_id']}", self.run_size(self.result))

    def get_run_and_job(self) -> None:
        job_id, (run, job) = self.p["job_id"], self.result
        self.batches([(f"JOB#{job_id}", self.run_size(run)), (_job_pk(job_id)[0], self.job_size(job))], True)

    def get_runs(self) -> None:  # eventually consistent
        both = self.method == "get_runs_and_jobs"  # and their jobs, consistent
        runs, pairs = self.result[0] if both else self.result, dict.fromkeys(self.p["keys"])
        keys = [(f"JOB#{job_id}", self.run_size(runs.get((job_id, run_id)))) for job_id, run_id in pairs]
        if both:
            jobs = dict.fromkeys(job_id for job_id, _ in pairs)
            keys += [(_job_pk(job_id)[0], self.job_size(self.result[1].get(job_id))) for job_id in jobs]
        self.batches(keys, both)

    get_runs_and_jobs = get_runs

    def runs_before(self) -> None:
        """One request, ``Limit=limit+1``: the run itself if it exists, and those before (or after)."""
        limit, run_id, runs = self.p["limit"], self.p["run_id"], self.view.runs.get(self.p["job_id"], {})
        own = runs.get(run_id)
        read = ([own] if own is not None else []) + self.result
        if own is None and len(self.result) == limit:  # and one more beyond what it returns
            later = self.method == "runs_after"
            rest = [r for r in runs.values() if (r.run_id > run_id) is later]
            read = (heapq.nsmallest if later else heapq.nlargest)(limit + 1, rest, key=lambda r: r.run_id)
        pages = _pages(((self.run_size(r), True) for r in read), limit + 1, None)
        self.queries(f"JOB#{self.p['job_id']}", pages[:1], True)

    runs_after = runs_before

    def recent_runs(self) -> None:
        p, result = self.p, self.result
        if isinstance(result, BaseException):
            return  # a cursor of another listing: refused before any request
        pk, limit = f"JOB#{p['job_id']}", p["limit"]
        if self.method == "recent_runs" or (p["status"] is None and p["reason"] is None):
            returned = result if self.method == "recent_runs" else result[0]  # it read what it returns
            self.queries(pk, _pages(((self.run_size(r), True) for r in returned), None, limit), False)
            return
        ordered = sorted(self.view.runs.get(p["job_id"], {}).values(), key=lambda r: r.run_id)[::-1]
        if (start := decode_cursor(p["cursor"])) is not None:
            ordered = [r for r in ordered if f"RUN#{r.run_id}" < start[SK]["S"]]
        kept = {r.run_id for r in result[0]}
        items = ((self.run_size(r), r.run_id in kept) for r in ordered)
        self.queries(pk, _pages(items, max(limit, 25), limit), False)

    list_runs = recent_runs

    def put_run(self) -> None:
        if isinstance(self.result, BaseException) and not isinstance(self.result, ConflictError):
            return  # a transition the run cannot make: refused before any request
        run, b, method, result = self.p["run"], self.b, self.method, self.result
        pk, stored = f"JOB#{run.job_id}", self.view.runs.get(run.job_id, {}).get(run.run_id)
        if method == "put_run":
            self.write("PutItem", pk, self.run_size(b.run), self.run_size(stored if result else run))
            return
        ok = bool(result) and not isinstance(result, BaseException)  # start_attempt: the run, or raised
        if method == "finish_attempt":
            lease = run.lease_token or ""
            ok = b.run is not None and b.run.status is RunStatus.RUNNING and b.run.lease_token == lease
        retry = self.p.get("retry_trigger")
        update = _write(pk, self.run_size(b.run), self.run_size(stored) if ok else 0, retry is not None)
        if retry is None:
            self.send("UpdateItem", update)
        else:
            written = self.stored_trigger_size(retry) if ok else self.trigger_size(retry)
            self.send(
                "TransactWriteItems",
                update + _write(_tpk(retry), self.trigger_size(b.trigger), written, True),
            )
        if method == "finish_attempt" and not ok:  # did our write land after all? read back
            self.get(pk, self.run_size(stored))

    start_attempt = renew_lease = finish_attempt = mark_run = claim_alert = mark_waiting = put_run


# ----------------------------------------------------------------------------- the two calls

_READS = {"get_job", "name_holder", "get_idempotent_create", "list_jobs", "owner_jobs", "query_bucket"}
_READS |= {"get_cursor", "oldest_cursor", "get_run", "get_run_and_job", "get_runs_and_jobs", "get_runs"}
_READS |= {"list_runs", "recent_runs", "runs_before", "runs_after"}


def _signature(method: str) -> tuple[list[str], dict[str, Any]]:
    parameters = list(inspect.signature(getattr(Tables, method)).parameters.values())[1:]
    defaults = {q.name: q.default for q in parameters if q.default is not inspect.Parameter.empty}
    return [q.name for q in parameters], defaults


_SIGNATURES = {m: _signature(m) for m in vars(_Call) if not m.startswith("_") and hasattr(Tables, m)}


def _bind(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if method not in _SIGNATURES:
        raise ValueError(f"{method} is not a method of the Tables port")
    names, defaults = _SIGNATURES[method]
    return {**defaults, **dict(zip(names, args, strict=False)), **kwargs}


_NOTHING = Before()


def snapshot(store: StateView, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Before:
    """Just before the call: the items it may write, as they are (a few dict lookups)."""
    if method in _READS:
        return _NOTHING
    p = _bind(method, args, kwargs)
    job: Job | None = p.get("job") or p.get("before")
    trigger: Trigger | None = p.get("first_trigger") or p.get("trigger") or p.get("retry_trigger")
    run: Run | None = p.get("run")
    job_id = job.job_id if job is not None else trigger.job_id if trigger is not None else p.get("job_id")
    idem = p.get("idempotency")
    return Before(
        job=store.jobs.get(job_id) if job_id is not None else None,
        run=store.runs.get(run.job_id, {}).get(run.run_id) if run is not None else None,
        trigger=store.triggers.get(_tkey(trigger)) if trigger is not None else None,
        holders=tuple(store.names.get((j.owner, j.name or "")) for j in (job, p.get("after")) if j),
        record=store.idempotency.get((job.owner, idem[0])) if idem and job else None,
        cursor=store.cursors.get(p["shard"]) if method == "advance_cursor" else None,
    )


def requests_for(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Before, after: StateView
) -> list[TableRequest]:
    """The requests the DynamoDB adapter makes for one call of the port method ``method`` with
    ``args``/``kwargs`` that answered ``result`` (the exception it raised, if it did), in order, with
    the units each consumes per partition key value. ``before``: what :func:`snapshot` returned just
    before the call; ``after``: the store, after it."""
    call = _Call(method, _bind(method, args, kwargs), result, before, after)
    getattr(call, method)()
    return call.out


__all__ = ["Before", "PartitionUnits", "StateView", "TableRequest", "requests_for", "snapshot"]

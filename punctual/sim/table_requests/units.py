"""What the requests of ``sim.table_requests`` are made of: the request and its units per partition,
what a call's snapshot keeps, the items' sizes (memoized per store, runs and triggers by their shape,
with the owner index and where job items live), the read and write units by DynamoDB's rules and a
query loop's pages."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, Protocol

from punctual.scale.sizes import item_size
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.model import Job, Run, Trigger, home_of, to_ms
from punctual_functions.core.resources import PK, TTL_ATTRIBUTE
from punctual_functions.core.store.items import run_to_item
from punctual_functions.core.store.keys import (
    cursor_key,
    idempotency_key,
    job_key,
    name_key,
    owner_index_pk,
    trigger_pk,
)

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
    @property
    def calendars(self) -> Mapping[tuple[str, str], Calendar]: ...


@dataclass(frozen=True)
class Before:
    """What :func:`snapshot` keeps of the items a call may write: the fake's (immutable) objects."""

    job: Job | None = None
    run: Run | None = None
    trigger: Trigger | None = None  # the stored trigger at the key of the call's trigger
    holders: tuple[str | None, ...] = ()  # who holds the names it writes (its job's or before's, after's)
    record: tuple[str, str, int] | None = None  # the idempotency record: job id, fingerprint, expiry
    cursor: str | None = None
    calendar: Calendar | None = None  # the calendar a put or delete writes, as stored


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

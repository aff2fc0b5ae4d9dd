"""The requests of each port call: ``_Call`` has a method per ``Tables`` method that sends, in order,
the requests ``DynamoStore`` makes for it with their units per partition; ``snapshot`` keeps the
items a call may write just before it, ``requests_for`` gives the requests once it has answered."""

from __future__ import annotations

import heapq
from typing import Any

from punctual.scale.sizes import item_size
from punctual.sim.table_requests.units import (
    _FRONTIER_BYTES,
    _HOLD_BYTES,
    _SHAPES,
    BATCH,
    Before,
    StateView,
    TableRequest,
    _cursor_size,
    _gsi_sk,
    _job_pk,
    _memo,
    _n,
    _name_size,
    _pages,
    _Part,
    _rcu,
    _record_size,
    _request,
    _run_size,
    _tkey,
    _tpk,
    _write,
)
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.model import Job, JobStatus, Run, RunStatus, Trigger
from punctual_functions.core.ports import ConflictError
from punctual_functions.core.resources import GSI1_SK, PK, SK
from punctual_functions.core.store.calendars import calendar_to_item
from punctual_functions.core.store.deployment import allowed_targets_item, delivery_rights_item
from punctual_functions.core.store.items import embeds, job_to_item, trigger_to_item
from punctual_functions.core.store.jobs import IDEMPOTENCY_TTL
from punctual_functions.core.store.keys import (
    allowed_targets_key,
    calendar_pk,
    cursor_key,
    idempotency_key,
    name_key,
    owner_index_pk,
    trigger_pk,
)
from punctual_functions.core.store.limits import limit_to_item, summary_key, summary_text
from punctual_functions.core.store.pages import decode_cursor
from punctual_functions.core.store.trail import change_pk, change_to_item
from punctual_functions.core.trail import Change

# ------------------------------------------------------------------------------- the requests


# The allow-list's partition.
_DEPLOYMENT = str(allowed_targets_key()[PK]["S"])


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

    def change_size(self, change: Change) -> int:
        return item_size(change_to_item(change, change.at))

    def create_job(self) -> None:
        job, first, b, idem = self.p["job"], self.p["first_trigger"], self.b, self.p["idempotency"]
        if (change := self.p["change"]) is not None:  # the create's record, before the job
            size = self.change_size(change)
            self.write("PutItem", change_pk(change.job_id), 0, size)
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
        ok = b.job is not None and b.job.version == was.version and b.job.revision == was.revision
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
        if (change := self.p["change"]) is not None:
            parts += _write(change_pk(change.job_id), 0, self.change_size(change) if ok else 0, True)
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

    # ------------------------------------------------------------------------------- limits

    def list_limits(self) -> None:
        """One consistent Query of the owner's limits (a worker's, once per container and owner every
        few seconds; a job under no limit reads nothing else)."""
        items = ((item_size(limit_to_item(self.p["owner"], limit)), True) for limit in self.result)
        self.queries(f"LIMIT#{self.p['owner']}", _pages(items, None, None), True)

    # ---------------------------------------------------------------------------------- runs

    def get_run(self) -> None:
        self.get(f"JOB#{self.p['job_id']}", self.run_size(self.result))

    def get_run_and_job(self) -> None:
        job_id, (run, job) = self.p["job_id"], self.result
        self.batches([(f"JOB#{job_id}", self.run_size(run)), (_job_pk(job_id)[0], self.job_size(job))], True)

    def get_runs(self) -> None:  # eventually consistent
        both = self.method in ("get_runs_and_jobs", "get_runs_jobs_and_limits")  # and jobs, consistent
        runs, pairs = self.result[0] if both else self.result, dict.fromkeys(self.p["keys"])
        keys = [(f"JOB#{job_id}", self.run_size(runs.get((job_id, run_id)))) for job_id, run_id in pairs]
        if both:
            jobs = dict.fromkeys(job_id for job_id, _ in pairs)
            keys += [(_job_pk(job_id)[0], self.job_size(self.result[1].get(job_id))) for job_id in jobs]
        if self.method == "get_runs_jobs_and_limits":  # and the owners' summaries of their limits
            for owner in dict.fromkeys(self.p["owners"]):
                found = self.result[2].get(owner) or []
                size = item_size({**summary_key(owner), "limits": {"S": summary_text(found)}}) if found else 0
                keys.append((f"LIMIT#{owner}", size))
        self.batches(keys, both)

    get_runs_and_jobs = get_runs
    get_runs_jobs_and_limits = get_runs

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

    # ----------------------------------------------------------------------------- calendars

    def calendar_size(self, calendar: Calendar | None) -> int:
        return item_size(calendar_to_item(self.p["owner"], calendar)) if calendar is not None else 0

    def get_calendar(self) -> None:
        self.get(calendar_pk(self.p["owner"]), self.calendar_size(self.result))

    def get_calendars(self) -> None:  # consistent, a hundred keys to a request
        pk, found = calendar_pk(self.p["owner"]), self.result
        self.batches(
            [(pk, self.calendar_size(found.get(name))) for name in dict.fromkeys(self.p["names"])], True
        )

    # ---------------------------------------------------------------------------- the trail

    def put_change(self) -> None:
        change = self.p["change"]
        self.write("PutItem", change_pk(change.job_id), 0, self.change_size(change))

    def list_changes(self) -> None:
        if isinstance(self.result, BaseException):
            return  # a cursor refused before any request
        items = ((self.change_size(change), True) for change in self.result[0])
        self.queries(change_pk(self.p["job_id"]), _pages(items, None, None), True)

    def revision_changes(self) -> None:
        size = sum(self.change_size(change) for change in self.result)
        self.queries(change_pk(self.p["job_id"]), [size], True)

    def list_calendars(self) -> None:
        items = ((self.calendar_size(calendar), True) for calendar in self.result)
        self.queries(calendar_pk(self.p["owner"]), _pages(items, None, None), True)

    def put_calendar(self) -> None:  # refused or not: the larger of the item there and the one sent
        calendar = self.p["calendar"]
        self.write(
            "PutItem",
            calendar_pk(self.p["owner"]),
            self.calendar_size(self.b.calendar),
            self.calendar_size(calendar),
        )

    def delete_calendar(self) -> None:
        self.write("DeleteItem", calendar_pk(self.p["owner"]), self.calendar_size(self.b.calendar), 0)

    # ---------------------------------------------------------------------------- deployment

    def allowed_targets(self) -> None:
        self.get(_DEPLOYMENT, item_size(allowed_targets_item(",".join(self.result))))

    def put_allowed_targets(self) -> None:
        size = item_size(allowed_targets_item(",".join(self.p["patterns"])))
        self.write("PutItem", _DEPLOYMENT, size, size)

    def delivery_rights(self) -> None:
        self.get(_DEPLOYMENT, item_size(delivery_rights_item(self.result.to_json())))

    def put_delivery_rights(self) -> None:
        size = item_size(delivery_rights_item(self.p["rights"].to_json()))
        self.write("PutItem", _DEPLOYMENT, size, size)

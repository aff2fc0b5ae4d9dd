"""``MemoryStore``: the table's ports in memory, with DynamoDB's conditional semantics.

Every method does what its DynamoDB twin in ``punctual_functions/core/store`` does, condition by condition,
under one lock (a transaction is all or none, and dispatches run on several threads). Items are kept
as DynamoDB would return them: each is written through the same item conversion, so times have
millisecond precision and JSON fields are copies, exactly as a read from the table gives them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from punctual.testing.fakes.calendars import MemoryCalendars
from punctual.testing.fakes.deployment import MemoryDeployment
from punctual.testing.fakes.limits import MemoryLimits
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.frontier import Frontier, ms_up
from punctual_functions.core.model import (
    Attempt,
    Job,
    JobStatus,
    Reason,
    Run,
    RunStatus,
    Trigger,
    TriggerState,
    check_transition,
    from_ms,
    lateness_of,
    started_run,
    to_ms,
)
from punctual_functions.core.ports import (
    BadCursorError,
    ConflictError,
    IdempotencyKeyTaken,
    JobExists,
    NameTaken,
    PageFull,
    RunNotOurs,
    ShardState,
    VersionChanged,
)
from punctual_functions.core.resources import GSI1_PK, GSI1_SK, PK, SK
from punctual_functions.core.store.items import (
    as_stored_attempt,
    as_stored_job,
    embeds,
    run_from_item,
    run_to_item,
    trigger_from_item,
    trigger_to_item,
)
from punctual_functions.core.store.jobs import API_OWNED, IDEMPOTENCY_TTL, api_view
from punctual_functions.core.store.keys import in_job_listing, in_run_listing, job_key, owner_index_pk
from punctual_functions.core.store.pages import decode_cursor, encode_cursor

T = TypeVar("T")
_TriggerKey = tuple[str, int, str]  # bucket, shard, sort key


def _ms(moment: datetime) -> datetime:
    return from_ms(to_ms(moment))


_stored_job = as_stored_job


def _stored_run(run: Run) -> Run:
    """As read back: the item conversion leaves out the lease, which only updates write."""
    return replace(
        run_from_item(run_to_item(run, run.scheduled_for)),
        lease_until=_ms(run.lease_until) if run.lease_until else None,
        lease_token=run.lease_token,
    )


def _stored_trigger(trigger: Trigger) -> Trigger:
    stored = trigger_from_item(trigger_to_item(trigger), trigger.bucket, trigger.shard)
    assert stored is not None  # a trigger item always holds its trigger
    return stored


class _Triggers(dict[_TriggerKey, Trigger]):
    """The trigger items, with each partition's keys at hand: a bucket's query reads its partition,
    not the table (the simulator's table holds hundreds of thousands)."""

    def __init__(self) -> None:
        super().__init__()
        self.partitions: dict[tuple[str, int], set[_TriggerKey]] = {}

    def __setitem__(self, key: _TriggerKey, trigger: Trigger) -> None:
        super().__setitem__(key, trigger)
        self.partitions.setdefault(key[:2], set()).add(key)

    def pop(self, key: _TriggerKey, *default: Any) -> Any:
        if key in self:
            self.partitions[key[:2]].discard(key)
        return super().pop(key, *default)

    def in_partition(self, bucket: str, shard: int) -> list[Trigger]:
        return [self[key] for key in sorted(self.partitions.get((bucket, shard), ()))]


def _trigger_key(trigger: Trigger) -> _TriggerKey:
    return trigger.bucket, trigger.shard, f"{to_ms(trigger.fire_at):013d}#{trigger.run_id}"


def _job_index_key(job: Job) -> dict[str, Any]:
    return {
        **job_key(job.job_id),
        GSI1_PK: {"S": owner_index_pk(job.owner)},
        GSI1_SK: {"S": f"{to_ms(job.created_at):013d}#{job.job_id}"},
    }


def _run_index_key(run: Run) -> dict[str, Any]:
    return {PK: {"S": f"JOB#{run.job_id}"}, SK: {"S": f"RUN#{run.run_id}"}}


class MemoryStore(MemoryCalendars, MemoryLimits, MemoryDeployment):
    """Implements ``punctual_functions.core.ports.Tables`` (the calendars: ``calendars.py`` beside it;
    the limits: ``limits.py``; the allow-list: ``deployment.py``)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self.names: dict[tuple[str, str], str] = {}
        self.reserved: dict[tuple[str, str], datetime] = {}
        self.idempotency: dict[tuple[str, str], tuple[str, str, int]] = {}
        self.triggers = _Triggers()
        self.cursors: dict[int, str] = {}
        self.holds: dict[int, tuple[datetime, str]] = {}  # shard -> (held until, holder)
        self.frontiers: dict[int, Frontier] = {}
        self.taken_by: dict[int, str] = {}  # the token of the last sweep to take each shard
        self.swept_by: dict[int, str] = {}  # the token of the sweep that left its frontier
        self.runs: dict[str, dict[str, Run]] = {}
        self.calendars: dict[tuple[str, str], Calendar] = {}
        self.allowed_patterns: tuple[str, ...] = ()
        # Called before each write of ``create_job`` with what it writes (a test's crash point).
        self.before_write: Callable[[str], None] = lambda _what: None

    # -------------------------------------------------------------------------------------- jobs

    def create_job(
        self,
        job: Job,
        first_trigger: Trigger | None,
        idempotency: tuple[str, str] | None = None,
        *,
        replacing_name_of: str | None = None,
    ) -> None:
        # The table's steps, one conditional write each, in its order, the job last: each under the
        # lock on its own, as a reader of the table may come between two (and a crash, through
        # ``before_write``). A first trigger at the job's home is written with the job, in its item.
        if idempotency is not None:
            self.before_write("idempotency")
            with self.lock:
                key, fingerprint = idempotency
                record = self.idempotency.get((job.owner, key))
                taken = record is not None and not record[2] < int(job.created_at.timestamp())
                if taken and record is not None and record[0] != job.job_id:
                    raise IdempotencyKeyTaken()
                expires = int((job.created_at + IDEMPOTENCY_TTL).timestamp())
                self.idempotency[(job.owner, key)] = (job.job_id, fingerprint, expires)
        if job.name:
            self.before_write("name")
            with self.lock:
                holder = self.names.get((job.owner, job.name))
                taken = holder not in (None, job.job_id, replacing_name_of)
                if not taken:
                    self.names[(job.owner, job.name)] = job.job_id
                    self.reserved[(job.owner, job.name)] = _ms(job.updated_at)
            if taken:
                if idempotency is not None:  # nothing was created: the key may serve another request
                    self.before_write("idempotency")
                    with self.lock:
                        record = self.idempotency.get((job.owner, idempotency[0]))
                        if record is not None and record[0] == job.job_id:
                            del self.idempotency[(job.owner, idempotency[0])]
                raise NameTaken()
        inside = first_trigger if embeds(job, first_trigger) else None
        if first_trigger is not None and inside is None:
            self.before_write("trigger")
            with self.lock:
                self.triggers[_trigger_key(first_trigger)] = _stored_trigger(first_trigger)
        self.before_write("job")
        with self.lock:
            if job.job_id in self.jobs:
                stored = self.jobs[job.job_id]
                if stored.owner == job.owner and stored.created_at == _ms(job.created_at):
                    return  # our own earlier write
                raise JobExists()
            self.jobs[job.job_id] = _stored_job(job)
            if inside is not None:
                self.triggers[_trigger_key(inside)] = _stored_trigger(inside)

    def get_idempotent_create(self, owner: str, key: str, now: datetime) -> tuple[str, str] | None:
        with self.lock:
            record = self.idempotency.get((owner, key))
            if record is None or record[2] < int(now.timestamp()):
                return None
            return record[0], record[1]

    def update_job(
        self, before: Job, after: Job, *, trigger: Trigger | None = None, replacing_name_of: str | None = None
    ) -> None:
        with self.lock:
            stored = self.jobs.get(before.job_id)
            release = before.name and before.is_live and (after.name != before.name or not after.is_live)
            reserve = after.name and after.is_live and (after.name != before.name or not before.is_live)
            error: ConflictError | None = None
            if stored is None or stored.version != before.version:
                error = VersionChanged()
            elif (
                release and self.names.get((before.owner, before.name or ""), before.job_id) != before.job_id
            ) or (
                reserve
                and self.names.get((after.owner, after.name or ""), replacing_name_of) != replacing_name_of
            ):
                error = NameTaken()
            if error is not None:
                if stored is not None and api_view(before) != api_view(stored) == api_view(
                    _stored_job(after)
                ):
                    return  # our own earlier write
                raise error
            assert stored is not None
            owned = list(API_OWNED)
            if after.version != before.version:
                owned += ["next_trigger_at"]
            written = _stored_job(after)
            self.jobs[before.job_id] = replace(stored, **{name: getattr(written, name) for name in owned})
            if release:
                self.names.pop((before.owner, before.name or ""), None)
            if reserve:
                self.names[(after.owner, after.name or "")] = after.job_id
                self.reserved[(after.owner, after.name or "")] = _ms(after.updated_at)
            if trigger is not None:
                self.triggers[_trigger_key(trigger)] = _stored_trigger(trigger)

    def complete_job(self, job: Job, expires_at: datetime | None = None) -> bool:
        with self.lock:
            stored = self.jobs.get(job.job_id)
            if stored is None or stored.status is not JobStatus.ACTIVE or stored.version != job.version:
                return (
                    stored is not None
                    and stored.status is JobStatus.COMPLETED
                    and stored.version == job.version
                )
            self.jobs[job.job_id] = replace(
                stored, status=JobStatus.COMPLETED, next_trigger_at=None, expires_at=_seconds(expires_at)
            )
            if job.name:
                self._release_name(job)
            return True

    def expire_job(self, job_id: str, expires_at: datetime) -> None:
        with self.lock:
            stored = self.jobs.get(job_id)
            if stored is not None:
                self.jobs[job_id] = replace(stored, expires_at=_seconds(expires_at))

    def name_holder(self, owner: str, name: str) -> tuple[str, datetime | None] | None:
        with self.lock:
            holder = self.names.get((owner, name))
            return (holder, self.reserved.get((owner, name))) if holder is not None else None

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        with self.lock:
            return self.jobs.get(job_id)

    def list_jobs(
        self,
        owner: str,
        *,
        limit: int,
        cursor: str | None,
        statuses: frozenset[JobStatus] | None,
        name: str | None,
        keep: Callable[[Job], bool] | None = None,
        name_prefix: str | None = None,
    ) -> tuple[list[Job], str | None]:
        with self.lock:
            jobs = sorted(  # as the index's sort key orders them: created_at (ms), then the id
                (job for job in self.jobs.values() if job.owner == owner),
                key=lambda job: (to_ms(job.created_at), job.job_id),
                reverse=True,
            )
            return _page(
                jobs,
                _job_index_key,
                lambda job: (
                    (statuses is None or job.status in statuses)
                    and (name is None or job.name == name)
                    and (not name_prefix or (job.name or "").startswith(name_prefix))
                    and (keep is None or keep(job))
                ),
                limit,
                cursor,
                in_job_listing(owner),
                GSI1_SK,
                descending=True,
            )

    def owner_jobs(self, owner: str) -> list[Job]:
        with self.lock:
            return [job for job in self.jobs.values() if job.owner == owner]

    # ---------------------------------------------------------------------------------- triggers

    def query_bucket(self, bucket: str, shard: int, *, consistent: bool = True) -> list[Trigger]:
        """As the table's Query reads them: a one-off's first trigger is its job's item (``embeds``),
        read with the job."""
        with self.lock:
            listed = []
            for trigger in self.triggers.in_partition(bucket, shard):
                job = self.jobs.get(trigger.job_id)
                at_home = job is not None and embeds(job, trigger)
                listed.append(replace(trigger, embedded=True, job=job) if at_home else trigger)
            return listed

    def put_trigger(self, trigger: Trigger) -> None:
        with self.lock:
            self.triggers[_trigger_key(trigger)] = _stored_trigger(trigger)

    def claim_trigger_only(self, trigger: Trigger, *, token: str, now: datetime) -> bool:
        with self.lock:
            stored = self.triggers.get(_trigger_key(trigger))
            if stored is None or stored.state is not trigger.state:
                return False
            if trigger.state is TriggerState.CLAIMED and stored.claim_token != (trigger.claim_token or ""):
                return False
            self.triggers[_trigger_key(trigger)] = replace(
                stored, state=TriggerState.CLAIMED, claim_token=token, claimed_at=_ms(now)
            )
            return True

    def delete_trigger(self, trigger: Trigger) -> None:
        with self.lock:
            self.triggers.pop(_trigger_key(trigger), None)

    def get_cursor(self, shard: int) -> str | None:
        with self.lock:
            return self.cursors.get(shard)

    def hold_shard(self, shard: int, *, token: str, now: datetime, until: datetime) -> ShardState:
        with self.lock:
            held = self.holds.get(shard)
            if held is not None and held[0] > _ms(now) and held[1] != token:
                return ShardState(False)
            renewal = held is not None and held[1] == token
            clean = held is None and self.taken_by.get(shard) == self.swept_by.get(shard, "")
            self.holds[shard] = (_ms(until), token)
            self.taken_by[shard] = token
            return ShardState(True, self.cursors.get(shard), self.frontiers.get(shard), clean and not renewal)

    def release_shard(self, shard: int, *, token: str, frontier: Frontier | None = None) -> None:
        with self.lock:
            if self.holds.get(shard, (None, None))[1] == token:
                del self.holds[shard]
                if frontier is not None:  # as stored: to the millisecond
                    self.frontiers[shard] = Frontier(
                        _ms(frontier.until), _ms(frontier.read_at), from_ms(ms_up(frontier.horizon))
                    )
                    self.swept_by[shard] = token

    def advance_cursor(self, shard: int, old: str | None, new: str) -> bool:
        with self.lock:
            current = self.cursors.get(shard)
            if current is not None and not current < new:
                return False
            self.cursors[shard] = new
            return True

    def oldest_cursor(self, shards: Iterable[int]) -> str | None:
        with self.lock:
            buckets = [self.cursors[shard] for shard in shards if shard in self.cursors]
            return min(buckets) if buckets else None

    # -------------------------------------------------------------------------------------- runs

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        with self.lock:
            return self.runs.get(job_id, {}).get(run_id)

    def get_run_and_job(self, job_id: str, run_id: str) -> tuple[Run | None, Job | None]:
        with self.lock:
            return self.get_run(job_id, run_id), self.get_job(job_id)

    def get_runs_and_jobs(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job]]:
        with self.lock:
            runs = {key: run for key in keys if (run := self.get_run(*key)) is not None}
            jobs = {job_id: job for job_id, _ in keys if (job := self.get_job(job_id)) is not None}
            return runs, jobs

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int,
        cursor: str | None = None,
        status: RunStatus | None = None,
        reason: Reason | None = None,
    ) -> tuple[list[Run], str | None]:
        with self.lock:
            runs = sorted(self.runs.get(job_id, {}).values(), key=lambda run: run.run_id, reverse=True)
            return _page(
                runs,
                _run_index_key,
                lambda run: (
                    (status is None or run.status is status) and (reason is None or run.reason is reason)
                ),
                limit,
                cursor,
                in_run_listing(job_id),
                SK,
                descending=True,
            )

    def get_runs(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Run]:
        with self.lock:
            found = {(job_id, run_id): self.runs.get(job_id, {}).get(run_id) for job_id, run_id in keys}
            return {key: run for key, run in found.items() if run is not None}

    def put_run(self, run: Run) -> bool:
        with self.lock:
            existing = self.runs.get(run.job_id, {}).get(run.run_id)
            if existing is not None and not (
                existing.job_version < run.job_version
                and existing.status in (RunStatus.QUEUED, RunStatus.SKIPPED)
            ):
                return False
            self.runs.setdefault(run.job_id, {})[run.run_id] = _stored_run(run)
            return True

    def recent_runs(self, job_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            return sorted(self.runs.get(job_id, {}).values(), key=lambda run: run.run_id, reverse=True)[
                :limit
            ]

    def runs_before(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            earlier = sorted(
                (run for run in self.runs.get(job_id, {}).values() if run.run_id <= run_id),
                key=lambda run: run.run_id,
                reverse=True,
            )[: limit + 1]
            return [run for run in earlier if run.run_id != run_id][:limit]

    def runs_after(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            later = sorted(
                (run for run in self.runs.get(job_id, {}).values() if run.run_id > run_id),
                key=lambda run: run.run_id,
            )
            return later[:limit]

    def start_attempt(
        self, run: Run, *, token: str, now: datetime, lease_until: datetime, create: bool = False
    ) -> Run:
        check_transition(run.status, RunStatus.RUNNING)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None and create and run.status is RunStatus.QUEUED:
                stored = _stored_run(run)  # the message overtook the dispatcher's write: create it
            holds = (
                stored is not None
                and stored.status is run.status
                and stored.attempt == run.attempt
                and (run.status is not RunStatus.RUNNING or stored.lease_until == run.lease_until)
            )
            if not holds:
                raise RunNotOurs(f"run {run.run_id} was started by someone else")
            assert stored is not None
            started = started_run(run, token=token, now=now, lease_until=lease_until)
            self.runs.setdefault(run.job_id, {})[run.run_id] = replace(
                stored,
                status=RunStatus.RUNNING,
                attempt=started.attempt,
                lease_token=token,
                lease_until=_ms(lease_until),
                started_at=_ms(started.started_at or now),
                lateness_ms=started.lateness_ms,
                executions=stored.executions + 1,
                reason=started.reason if run.reason is Reason.LIMITED else stored.reason,
                limited_ms=started.limited_ms if run.reason is Reason.LIMITED else stored.limited_ms,
            )
            return started

    def renew_lease(self, run: Run, lease_until: datetime) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None or not self._holds_lease(stored, run):
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, lease_until=_ms(lease_until))
            return True

    @staticmethod
    def _holds_lease(stored: Run, run: Run) -> bool:
        return stored.lease_token == (run.lease_token or "") and stored.status is RunStatus.RUNNING

    def finish_attempt(
        self,
        run: Run,
        attempt: Attempt,
        *,
        status: RunStatus,
        now: datetime,
        next_attempt_at: datetime | None = None,
        retry_trigger: Trigger | None = None,
        started_late: datetime | None = None,
    ) -> None:
        check_transition(RunStatus.RUNNING, status)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            holds = stored is not None and self._holds_lease(stored, run)
            ours = as_stored_attempt(attempt)
            if not holds:
                if stored is not None and stored.status is status and stored.attempts[-1:] == (ours,):
                    return  # our own earlier write
                raise RunNotOurs(f"run {run.run_id} is no longer ours to finish")
            assert stored is not None
            recorded = replace(stored, attempts=(*stored.attempts, ours))
            if started_late is not None:
                recorded = replace(
                    recorded,
                    started_at=_ms(started_late),
                    lateness_ms=lateness_of(stored, started_late),
                )
            self.runs[run.job_id][run.run_id] = replace(
                recorded,
                status=status,
                error=attempt.error or None,
                lease_until=None,
                lease_token=None,
                finished_at=_ms(now) if status.is_terminal else stored.finished_at,
                next_attempt_at=_ms(next_attempt_at) if next_attempt_at else stored.next_attempt_at,
            )
            if retry_trigger is not None:
                self.triggers[_trigger_key(retry_trigger)] = _stored_trigger(retry_trigger)

    def mark_run(
        self,
        run: Run,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None,
        create: bool = False,
        reason: Reason | None = None,
        overlap_with: str | None = None,
    ) -> bool:
        check_transition(run.status, status)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None and create and run.status is RunStatus.QUEUED:
                stored = _stored_run(run)  # the message overtook the dispatcher's write: create it
            if stored is None or stored.status is not run.status or stored.job_version != run.job_version:
                return False
            self.runs.setdefault(run.job_id, {})[run.run_id] = replace(
                stored,
                status=status,
                finished_at=_ms(now),
                error=error or stored.error,
                reason=reason or stored.reason,
                overlap_with=overlap_with or stored.overlap_with,
            )
            return True

    def claim_alert(self, run: Run, kind: str) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None or kind in stored.alerts_sent:
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, alerts_sent=stored.alerts_sent | {kind})
            return True

    def mark_waiting(self, run: Run, behind: str) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if (
                stored is None
                or stored.status is not RunStatus.QUEUED
                or stored.job_version != run.job_version
            ):
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, overlap_with=behind)
            return True

    # ----------------------------------------------------------------------------------- helpers

    def _name_free_or_ours(self, job: Job | None) -> bool:
        assert job is not None and job.name
        return self.names.get((job.owner, job.name), job.job_id) == job.job_id

    def _release_name(self, job: Job) -> None:
        assert job.name
        if self.names.get((job.owner, job.name)) == job.job_id:
            del self.names[(job.owner, job.name)]


def _page(
    items: list[T],
    key_of: Any,
    matches: Any,
    limit: int,
    cursor: str | None,
    belongs: Any,
    sort_attribute: str,
    *,
    descending: bool,
) -> tuple[list[T], str | None]:
    """A listing page as DynamoDB's query gives it: from just past the cursor's key, ``limit``
    matching items, and a cursor when the page filled up (even if nothing follows)."""
    start: Mapping[str, Any] | None = decode_cursor(cursor)
    if start is not None and not belongs(start):
        raise BadCursorError("not a cursor of this listing")
    if start is not None:
        boundary = start[sort_attribute]["S"]

        def after_cursor(item: T) -> bool:
            position = key_of(item)[sort_attribute]["S"]
            return bool(position < boundary if descending else position > boundary)

        items = [item for item in items if after_cursor(item)]
    found: list[T] = []
    for item in items:  # one at a time, as a query stops
        try:
            if not matches(item):
                continue
        except PageFull:
            if found:
                return found, encode_cursor(key_of(found[-1]))
        found.append(item)
        if len(found) == limit:
            return found, encode_cursor(key_of(item))
    return found, None


def _seconds(moment: datetime | None) -> datetime | None:
    """A TTL as the table keeps it: whole seconds."""
    return None if moment is None else moment.replace(microsecond=0)

"""``MemoryStore``: the table's ports in memory, with DynamoDB's conditional semantics.

Every method does what its DynamoDB twin in ``punctual_functions/core/store`` does, condition by condition,
under one lock (a transaction is all or none, and dispatches run on several threads). Items are kept
as DynamoDB would return them: each is written through the same item conversion, so times have
millisecond precision and JSON fields are copies, exactly as a read from the table gives them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime

from punctual.testing.fakes.calendars import MemoryCalendars
from punctual.testing.fakes.deployment import MemoryDeployment
from punctual.testing.fakes.items import (
    Triggers,
    job_index_key,
    ms,
    page,
    stored_trigger,
    trigger_key,
)
from punctual.testing.fakes.limits import MemoryLimits
from punctual.testing.fakes.runs import MemoryRuns
from punctual.testing.fakes.trail import MemoryTrail
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.frontier import Frontier, ms_up
from punctual_functions.core.model import (
    Job,
    JobStatus,
    Run,
    Trigger,
    TriggerState,
    from_ms,
    to_ms,
)
from punctual_functions.core.ports import (
    ConflictError,
    IdempotencyKeyTaken,
    JobExists,
    NameTaken,
    ShardState,
    VersionChanged,
)
from punctual_functions.core.resources import GSI1_SK
from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.store.items import (
    as_stored_job,
    embeds,
)
from punctual_functions.core.store.jobs import API_OWNED, IDEMPOTENCY_TTL, api_view
from punctual_functions.core.store.keys import in_job_listing
from punctual_functions.core.trail import Change


class MemoryStore(MemoryRuns, MemoryTrail, MemoryCalendars, MemoryLimits, MemoryDeployment):
    """Implements ``punctual_functions.core.ports.Tables`` (the runs: ``runs.py`` beside it; the
    calendars: ``calendars.py``; the limits: ``limits.py``; the allow-list: ``deployment.py``)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self.names: dict[tuple[str, str], str] = {}
        self.reserved: dict[tuple[str, str], datetime] = {}
        self.idempotency: dict[tuple[str, str], tuple[str, str, int]] = {}
        self.triggers = Triggers()
        self.cursors: dict[int, str] = {}
        self.holds: dict[int, tuple[datetime, str]] = {}  # shard -> (held until, holder)
        self.frontiers: dict[int, Frontier] = {}
        self.taken_by: dict[int, str] = {}  # the token of the last sweep to take each shard
        self.swept_by: dict[int, str] = {}  # the token of the sweep that left its frontier
        self.runs: dict[str, dict[str, Run]] = {}
        self.calendars: dict[tuple[str, str], Calendar] = {}
        self.allowed_patterns: tuple[str, ...] = ()
        self.rights = DeliveryRights()
        self.changes: dict[str, dict[str, Change]] = {}
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
        change: Change | None = None,
    ) -> None:
        if change is not None:
            self.before_write("change")
            self.put_change(change)
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
                    self.reserved[(job.owner, job.name)] = ms(job.updated_at)
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
                self.triggers[trigger_key(first_trigger)] = stored_trigger(first_trigger)
        self.before_write("job")
        with self.lock:
            if job.job_id in self.jobs:
                stored = self.jobs[job.job_id]
                if stored.owner == job.owner and stored.created_at == ms(job.created_at):
                    return  # our own earlier write
                raise JobExists()
            self.jobs[job.job_id] = as_stored_job(job)
            if inside is not None:
                self.triggers[trigger_key(inside)] = stored_trigger(inside)

    def get_idempotent_create(self, owner: str, key: str, now: datetime) -> tuple[str, str] | None:
        with self.lock:
            record = self.idempotency.get((owner, key))
            if record is None or record[2] < int(now.timestamp()):
                return None
            return record[0], record[1]

    def update_job(
        self,
        before: Job,
        after: Job,
        *,
        trigger: Trigger | None = None,
        replacing_name_of: str | None = None,
        change: Change | None = None,
    ) -> None:
        after = replace(after, revision=before.revision + 1)
        if change is not None and change.revision != after.revision:
            raise ValueError(f"the change's revision {change.revision} is not the job's {after.revision}")
        with self.lock:
            stored = self.jobs.get(before.job_id)
            release = before.name and before.is_live and (after.name != before.name or not after.is_live)
            reserve = after.name and after.is_live and (after.name != before.name or not before.is_live)
            error: ConflictError | None = None
            if stored is None or stored.version != before.version or stored.revision != before.revision:
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
                    as_stored_job(after)
                ):
                    return  # our own earlier write
                raise error
            assert stored is not None
            if change is not None and not self.put_change_with_job(change):
                raise VersionChanged()  # its revision's record is there: another change took it
            owned = list(API_OWNED)
            if after.version != before.version:
                owned += ["next_trigger_at"]
            written = as_stored_job(after)
            self.jobs[before.job_id] = replace(stored, **{name: getattr(written, name) for name in owned})
            if release:
                self.names.pop((before.owner, before.name or ""), None)
            if reserve:
                self.names[(after.owner, after.name or "")] = after.job_id
                self.reserved[(after.owner, after.name or "")] = ms(after.updated_at)
            if trigger is not None:
                self.triggers[trigger_key(trigger)] = stored_trigger(trigger)

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
            return page(
                jobs,
                job_index_key,
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
            self.triggers[trigger_key(trigger)] = stored_trigger(trigger)

    def claim_trigger_only(self, trigger: Trigger, *, token: str, now: datetime) -> bool:
        with self.lock:
            stored = self.triggers.get(trigger_key(trigger))
            if stored is None or stored.state is not trigger.state:
                return False
            if trigger.state is TriggerState.CLAIMED and stored.claim_token != (trigger.claim_token or ""):
                return False
            self.triggers[trigger_key(trigger)] = replace(
                stored, state=TriggerState.CLAIMED, claim_token=token, claimed_at=ms(now)
            )
            return True

    def delete_trigger(self, trigger: Trigger) -> None:
        with self.lock:
            self.triggers.pop(trigger_key(trigger), None)

    def get_cursor(self, shard: int) -> str | None:
        with self.lock:
            return self.cursors.get(shard)

    def hold_shard(self, shard: int, *, token: str, now: datetime, until: datetime) -> ShardState:
        with self.lock:
            held = self.holds.get(shard)
            if held is not None and held[0] > ms(now) and held[1] != token:
                return ShardState(False)
            renewal = held is not None and held[1] == token
            clean = held is None and self.taken_by.get(shard) == self.swept_by.get(shard, "")
            self.holds[shard] = (ms(until), token)
            self.taken_by[shard] = token
            return ShardState(True, self.cursors.get(shard), self.frontiers.get(shard), clean and not renewal)

    def release_shard(self, shard: int, *, token: str, frontier: Frontier | None = None) -> None:
        with self.lock:
            if self.holds.get(shard, (None, None))[1] == token:
                del self.holds[shard]
                if frontier is not None:  # as stored: to the millisecond
                    self.frontiers[shard] = Frontier(
                        ms(frontier.until), ms(frontier.read_at), from_ms(ms_up(frontier.horizon))
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

    # ----------------------------------------------------------------------------------- helpers

    def _name_free_or_ours(self, job: Job | None) -> bool:
        assert job is not None and job.name
        return self.names.get((job.owner, job.name), job.job_id) == job.job_id

    def _release_name(self, job: Job) -> None:
        assert job.name
        if self.names.get((job.owner, job.name)) == job.job_id:
            del self.names[(job.owner, job.name)]


def _seconds(moment: datetime | None) -> datetime | None:
    """A TTL as the table keeps it: whole seconds."""
    return None if moment is None else moment.replace(microsecond=0)

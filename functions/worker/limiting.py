"""Target limits as an attempt would start (docs/architecture.md, "Target limits"): before the call,
a slot of each limit covering the job's target (and of the job's own ``max_concurrent``) and a token
of each rate; refused, the run waits its turn (``QUEUED``/``RETRYING`` with reason ``limited``) and its
message comes back in a second or two. Slots are leases: released on the outcome, or lapsed.

A job under no limit pays no request: the owner's limits come with the batch's read of its runs and
jobs (one summary item per owner, in the same BatchGetItem), once per container every
``LIMITS_CACHE_SECONDS``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NoReturn

from functions.core import limits as rules
from functions.core.alerts import AlertSender
from functions.core.limits import Limit
from functions.core.model import AlertKind, Job, Reason, Run
from functions.core.observability import logger
from functions.core.queue import WorkMessage
from functions.worker.context import ReturnLater, WorkerContext

# How long a container trusts the owner's limits it read: a limit's change reaches every worker
# within this, and a job under no limit costs its owner one Query per container this often.
LIMITS_CACHE_SECONDS = 10.0
# A slot's lease: the job's timeout and a run lease's length beyond it, and this margin for the start
# and outcome writes. A worker that dies holding a slot keeps it from others that long at most; an
# outcome's write slower than the margin (a throttled table) may let one more attempt start meanwhile.
SLOT_MARGIN_SECONDS = 10
HOLDER_SEPARATOR = rules.HOLDER_SEPARATOR
# A released slot wakes one of the limit's this many longest-waiting runs.
WAKE_AMONG = 5


@dataclass(frozen=True)
class Gate:
    """What one attempt must pass: a limit covering its target, or its job's own ``max_concurrent``."""

    name: str
    max_concurrent: int | None
    per_second: float | None = None
    burst: int = 0


@dataclass
class Held:
    """The slots an attempt holds, released when its outcome is written."""

    owner: str
    holder: str  # the run id and this delivery's token: a duplicate delivery holds a slot of its own
    run_id: str = ""
    names: list[str] = field(default_factory=list)


class LimitsCache:
    """The owners' limits, per container, each re-read after ``LIMITS_CACHE_SECONDS``: read with a
    batch, before its records' threads start (``refresh``), so that they find them here."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context
        self.owners: dict[str, tuple[datetime, list[Limit]]] = {}

    def stale(self, owners: Iterable[str]) -> list[str]:
        """Those of ``owners`` whose limits this container read more than ``LIMITS_CACHE_SECONDS`` ago
        (or never): a batch reads them with its runs and jobs."""
        now = self.context.clock()
        return sorted(owner for owner in set(owners) if not self._fresh(owner, now))

    def put(self, limits: Mapping[str, list[Limit]]) -> None:
        now = self.context.clock()
        for owner, found in limits.items():
            self.owners[owner] = (now, found)

    def _fresh(self, owner: str, now: datetime) -> bool:
        seen = self.owners.get(owner)
        return seen is not None and timedelta(0) <= now - seen[0] < timedelta(seconds=LIMITS_CACHE_SECONDS)

    def of(self, owner: str) -> list[Limit]:
        """The owner's limits: as read with the batch, or (a message that did not name its owner: a
        retry's, a wake-up's) read now, once per container every few seconds."""
        now = self.context.clock()
        if self._fresh(owner, now):
            return self.owners[owner][1]
        limits = self.context.store.list_limits(owner)
        self.owners[owner] = (now, limits)
        return limits

    def forget(self) -> None:
        self.owners.clear()


class Limiting:
    def __init__(self, context: WorkerContext, alerts: AlertSender) -> None:
        self.context = context
        self.alerts = alerts
        self.cache = LimitsCache(context)

    def gates(self, job: Job) -> list[Gate]:
        """The limits the job's attempts pass, by name, its own ``max_concurrent`` last."""
        gates = [
            Gate(limit.name, limit.max_concurrent, limit.per_second, limit.bucket_size)
            for limit in rules.matching(self.cache.of(job.owner), job.target)
        ]
        if job.max_concurrent is not None:
            gates.append(Gate(rules.job_limit_name(job.job_id), job.max_concurrent))
        return gates

    def enter(self, job: Job, run: Run, *, create: bool) -> Held | None:
        """Take what the attempt needs; None for a job under no limit. Raises ``ReturnLater`` when a
        limit refuses it (the run waits its turn)."""
        gates = self.gates(job)
        if not gates:
            return None
        store, now = self.context.store, self.context.clock()
        # Two deliveries of one run (a duplicate, a wake-up) may pass here together: each holds a
        # slot of its own and frees only its own, so the one whose start loses never frees the slot
        # of the one whose call is under way.
        held = Held(job.owner, f"{run.run_id}{HOLDER_SEPARATOR}{uuid.uuid4().hex[:12]}", run.run_id)
        # The slot outlives the attempt's course (the last moment before its second, its call, its
        # outcome's write): a worker that dies holding it loses it then.
        lease_until = now + timedelta(
            seconds=job.timeout_seconds + self.context.settings.lease_seconds + SLOT_MARGIN_SECONDS
        )
        for gate in gates:
            if gate.max_concurrent is None:
                continue
            if not store.take_slot(
                job.owner,
                gate.name,
                gate.max_concurrent,
                holder=held.holder,
                job_id=job.job_id,
                now=now,
                lease_until=lease_until,
            ):
                self.release(held)
                self._wait(job, run, gate, now, create=create)
            held.names.append(gate.name)
        for gate in gates:  # tokens last: a slot refused wastes none
            if gate.per_second is None:
                continue
            wait = store.take_token(job.owner, gate.name, gate.per_second, gate.burst, now=now)
            if wait > 0:
                self.release(held)
                self._wait(job, run, gate, now, create=create, token_wait=wait)
        if run.reason is Reason.LIMITED and run.limited_by is not None:
            try:
                store.remove_waiter(job.owner, run.limited_by, run)
            except Exception:  # it expires on its own: the attempt goes on
                logger.exception("waiter not removed", extra={"job_id": job.job_id, "run_id": run.run_id})
        return held

    def release(self, held: Held | None) -> None:
        """Free the attempt's slots (after its outcome's write; a slot not freed lapses with its lease),
        and wake a run waiting on each: a fresh message, so that it takes the slot now rather than at
        its own message's return (which then finds it started: a duplicate, as ``buffer_all``'s)."""
        if held is None:
            return
        wake: dict[tuple[str, str], None] = {}
        for name in held.names:
            try:
                waiting = self.context.store.release_slot(held.owner, name, holder=held.holder)
            except Exception:
                logger.exception("slot not released: it lapses", extra={"run_id": held.holder, "limit": name})
                continue
            others = [w for w in waiting[:WAKE_AMONG] if w.run_id != held.run_id]
            if others:  # one of the longest waiting, so that releases at once mostly wake different runs
                chosen = others[self.context.rng.randrange(len(others))]
                wake[(chosen.job_id, chosen.run_id)] = None
        held.names.clear()
        if wake:
            try:
                self.context.queue.send([(WorkMessage(job_id, run_id), 0) for job_id, run_id in wake])
            except Exception:  # its own message comes back within seconds all the same
                logger.exception("waiting run not woken", extra={"run_id": held.holder})

    def _wait(
        self, job: Job, run: Run, gate: Gate, now: datetime, *, create: bool, token_wait: float | None = None
    ) -> NoReturn:
        """The run waits on ``gate``: recorded once (on the run, and as a waiter of the limit), its
        message given back for a second or two (or until the bucket's next token)."""
        shown = "the job's max_concurrent" if gate.name.startswith(rules.JOB_LIMIT_PREFIX) else gate.name
        log = {"job_id": job.job_id, "run_id": run.run_id, "limit": gate.name}
        waiting = run.reason is Reason.LIMITED and run.limited_since is not None
        since = run.limited_since if waiting and run.limited_since is not None else now
        if create:
            raise ReturnLater(f"limited by {shown}; the run of this dispatch is not written yet", 1)
        store = self.context.store
        if (run.limited_by != gate.name or not waiting) and store.mark_limited(run, gate.name, since=since):
            if waiting and run.limited_by is not None and run.limited_by != gate.name:
                store.remove_waiter(job.owner, run.limited_by, run)
            store.add_waiter(job.owner, gate.name, run, since=since)
            logger.info("run waits on a limit", extra=log)
        waited = now - since
        wanted = job.alerts.limited_seconds if job.alerts is not None else None
        if (
            wanted is not None
            and waited > timedelta(seconds=wanted)
            and AlertKind.LIMITED not in run.alerts_sent
        ):
            detail = f"waited {waited.total_seconds():.0f} s on limit {shown}"
            self.alerts.send(AlertKind.LIMITED, job, run, detail, now)
        seconds = rules.retry_in(waited, self.context.rng.random(), token_wait)
        raise ReturnLater(f"limited by {shown}", seconds)

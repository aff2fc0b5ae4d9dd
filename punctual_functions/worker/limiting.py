"""Target limits as an attempt would start (docs/architecture.md, "Target limits"): before the call,
a slot of each limit covering the job's target (and of the job's own ``max_concurrent``) and a token
of each rate; refused, the run waits its turn (``QUEUED``/``RETRYING`` with reason ``limited``, on the
limit's list of waiting runs). Slots are leases: released on the outcome, or lapsed. A released slot
is handed over to the run waiting longest, which a fresh message wakes; a waiting run's own message
comes back after 10 to 20 s all the same, for a slot nobody hands over (its holder died).

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

from punctual_functions.core import limits as rules
from punctual_functions.core.alerts import AlertSender
from punctual_functions.core.limits import Limit
from punctual_functions.core.model import AlertKind, Job, Reason, Run
from punctual_functions.core.observability import logger
from punctual_functions.core.queue import WorkMessage
from punctual_functions.worker.context import ReturnLater, WorkerContext

# How long a container trusts the owner's limits it read: a limit's change reaches every worker
# within this, and a job under no limit costs its owner one Query per container this often.
LIMITS_CACHE_SECONDS = 10.0
# A slot's lease: the job's timeout and a run lease's length beyond it, and this margin for the start
# and outcome writes. A worker that dies holding a slot keeps it from others that long at most; an
# outcome's write slower than the margin (a throttled table) may let one more attempt start meanwhile.
SLOT_MARGIN_SECONDS = 10
HOLDER_SEPARATOR = rules.HOLDER_SEPARATOR


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
    gates: list[Gate] = field(default_factory=list)


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

    def of(self, owner: str, read_with: datetime | None = None) -> list[Limit]:
        """The owner's limits: as read with the batch, or (a message that did not name its owner: a
        retry's, a wake-up's) read now, once per container every few seconds. ``read_with`` is when
        the record's batch was read: a record held for its second uses the limits that were fresh
        then, however long it waited (as it uses the run and job read then)."""
        now = self.context.clock()
        seen = self.owners.get(owner)
        if seen is not None and self._fresh(owner, now):
            return seen[1]
        if (
            seen is not None
            and read_with is not None
            and read_with - seen[0] < timedelta(seconds=LIMITS_CACHE_SECONDS)
        ):
            return seen[1]
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

    def gates(self, job: Job, read_with: datetime | None = None) -> list[Gate]:
        """The limits the job's attempts pass, by name, its own ``max_concurrent`` last
        (``read_with``: ``LimitsCache.of``)."""
        gates = [
            Gate(limit.name, limit.max_concurrent, limit.per_second, limit.bucket_size)
            for limit in rules.matching(self.cache.of(job.owner, read_with), job.target)
        ]
        if job.max_concurrent is not None:
            gates.append(Gate(rules.job_limit_name(job.job_id), job.max_concurrent))
        return gates

    def enter(
        self,
        job: Job,
        run: Run,
        *,
        create: bool,
        read_with: datetime | None = None,
        handed: str | None = None,
    ) -> Held | None:
        """Take what the attempt needs; None for a job under no limit. Raises ``ReturnLater`` when a
        limit refuses it (the run waits its turn). ``handed``: the limit whose release woke this
        delivery (its hand-over took the run out of that limit's line already)."""
        gates = self.gates(job, read_with)
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
        # The limit it was in line for, as it leaves (a hand-over took it out of that line already).
        lined_up = run.limited_by if run.reason is Reason.LIMITED and run.limited_by != handed else None
        for gate in gates:
            if gate.max_concurrent is None:
                continue
            if not self._take_slot(job, gate, held.holder, now, lease_until):
                # A holder that releases between this refusal and the run's waiter item finds
                # nobody in line: the next release hands its free slot over, or the run's own
                # message finds it (``retry_in``). A second look after lining up would close that
                # window at a Query per refusal (docs/architecture.md, "Target limits").
                self.release(held)
                self._line_up(job, run, gate, now, create=create)
                self._wait(job, run, gate, now)
            held.gates.append(gate)
        for gate in gates:  # tokens last: a slot refused wastes none
            if gate.per_second is None:
                continue
            wait = store.take_token(job.owner, gate.name, gate.per_second, gate.burst, now=now)
            if wait > 0:
                self.release(held)
                self._line_up(job, run, gate, now, create=create)
                self._wait(job, run, gate, now, token_wait=wait)
        if lined_up is not None:
            try:
                store.remove_waiter(job.owner, lined_up, run)
            except Exception:  # it expires on its own: the attempt goes on
                logger.exception("waiter not removed", extra={"job_id": job.job_id, "run_id": run.run_id})
        return held

    def _take_slot(self, job: Job, gate: Gate, holder: str, now: datetime, lease_until: datetime) -> bool:
        assert gate.max_concurrent is not None
        return self.context.store.take_slot(
            job.owner,
            gate.name,
            gate.max_concurrent,
            holder=holder,
            job_id=job.job_id,
            now=now,
            lease_until=lease_until,
        )

    def release(self, held: Held | None) -> None:
        """Free the attempt's slots (after its outcome's write; a slot not freed lapses with its lease).
        Each goes to the run waiting longest on its limit, with any free or lapsed slots the limit has
        room for to the next in line (a raised limit, a holder that died, a hand-over nobody claimed),
        and a fresh message wakes each: it starts now rather than at its own message's return (which
        then finds it started: a duplicate)."""
        if held is None:
            return
        wake: list[tuple[str, str, str]] = []
        for gate in held.gates:
            try:
                handed = self.context.store.release_slot(
                    held.owner,
                    gate.name,
                    holder=held.holder,
                    max_concurrent=gate.max_concurrent,
                    now=self.context.clock(),
                )
            except Exception:
                logger.exception(
                    "slot not released: it lapses", extra={"run_id": held.holder, "limit": gate.name}
                )
                continue
            wake += [(to.job_id, to.run_id, gate.name) for to in handed]
        held.gates.clear()
        self._wake(wake, held.holder)

    def pass_on(self, job: Job, run: Run, limit: str) -> None:
        """A delivery woken by a hand-over of ``limit`` that will not start its run (it ended, or the
        job was cancelled, meanwhile): the slot handed to the run goes on to the next waiting, at once
        rather than when the hand-over lapses (``HANDOFF_SECONDS``)."""
        gate = next((gate for gate in self.gates(job) if gate.name == limit), None)
        try:
            handed = self.context.store.release_slot(
                job.owner,
                limit,
                holder=rules.any_handed(run.run_id),
                max_concurrent=None if gate is None else gate.max_concurrent,
                now=self.context.clock(),
            )
        except Exception:  # it lapses with its hand-over
            logger.exception("handed slot not passed on", extra={"run_id": run.run_id, "limit": limit})
            return
        self._wake([(to.job_id, to.run_id, limit) for to in handed], run.run_id)

    def _wake(self, wake: list[tuple[str, str, str]], by: str) -> None:
        if not wake:
            return
        try:
            self.context.queue.send(
                [(WorkMessage(job_id, run_id, handed=limit), 0) for job_id, run_id, limit in wake]
            )
        except Exception:  # its own message comes back (and claims the slot if still handed to it)
            logger.exception("waiting run not woken", extra={"run_id": by})

    def _line_up(self, job: Job, run: Run, gate: Gate, now: datetime, *, create: bool) -> None:
        """The run waits on ``gate``: recorded on the run once (reason ``limited``) and as a waiter of
        the limit (again at each refusal: a hand-over takes the item away, and a run that could not
        claim its slot in time would otherwise be out of line for good). A message that overtook its
        dispatch's write of the run comes back in a second, unrecorded."""
        if create:
            raise ReturnLater(f"limited by {_shown(gate)}; the run of this dispatch is not written yet", 1)
        store = self.context.store
        waiting = run.reason is Reason.LIMITED and run.limited_since is not None
        since = _waits_from(run, now)
        if run.limited_by != gate.name or not waiting:
            if store.mark_limited(run, gate.name, since=since):
                if waiting and run.limited_by is not None and run.limited_by != gate.name:
                    store.remove_waiter(job.owner, run.limited_by, run)
                store.add_waiter(job.owner, gate.name, run, since=since)
                logger.info(
                    "run waits on a limit",
                    extra={"job_id": job.job_id, "run_id": run.run_id, "limit": gate.name},
                )
        elif gate.max_concurrent is not None:
            store.add_waiter(job.owner, gate.name, run, since=since)

    def _wait(
        self, job: Job, run: Run, gate: Gate, now: datetime, token_wait: float | None = None
    ) -> NoReturn:
        """Its message given back (``limits.retry_in``): a release hands it a slot and wakes it
        sooner. Past ``alerts.limited_seconds`` of waiting, the ``limited`` alert, once."""
        since = _waits_from(run, now)
        waited = now - since
        wanted = job.alerts.limited_seconds if job.alerts is not None else None
        if (
            wanted is not None
            and waited > timedelta(seconds=wanted)
            and AlertKind.LIMITED not in run.alerts_sent
        ):
            detail = f"waited {waited.total_seconds():.0f} s on limit {_shown(gate)}"
            self.alerts.send(AlertKind.LIMITED, job, run, detail, now)
        seconds = rules.retry_in(waited, self.context.rng.random(), token_wait)
        raise ReturnLater(f"limited by {_shown(gate)}", seconds)


def _waits_from(run: Run, now: datetime) -> datetime:
    """When a refused run's wait began: as recorded, for a run waiting already; else now, or its due
    time for a run refused as its attempt was about to start, half a second before its second (it
    was never to start before it): what it waited (``limited_ms``) is never more than how late it was."""
    if run.reason is Reason.LIMITED and run.limited_since is not None:
        return run.limited_since
    return max(now, run.next_attempt_at or run.scheduled_for)


def _shown(gate: Gate) -> str:
    return "the job's max_concurrent" if gate.name.startswith(rules.JOB_LIMIT_PREFIX) else gate.name

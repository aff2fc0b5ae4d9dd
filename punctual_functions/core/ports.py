"""What the logic needs from the outside, as small ``Protocol``s, and what a lost write means.

``JobService``, ``Dispatcher`` and ``RunExecutor`` depend on these, never on boto3. The real
implementations are the AWS edge (``punctual_functions/core/store``, ``punctual_functions/core/queue.py``,
``punctual_functions/core/targets``); the in-memory ones in ``tests/fakes`` keep the same conditional
semantics,
and one contract suite (``tests/contract``) holds both to them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from punctual_functions.core.frontier import Frontier
from punctual_functions.core.model import Attempt, Job, JobStatus, Reason, Run, RunStatus, Trigger

if TYPE_CHECKING:
    from punctual_functions.core.calendars import Calendar
    from punctual_functions.core.limits import Limit, LimitUse, Waiter
    from punctual_functions.core.queue import WorkMessage
    from punctual_functions.core.rights import DeliveryRights
    from punctual_functions.core.targets.outcome import Delivery, TargetOutcome
    from punctual_functions.core.trail import Change


# ----------------------------------------------------------------------------- what a write lost to


class ConflictError(Exception):
    """A conditional write lost: another writer got there first, or the item changed."""


class JobExists(ConflictError):
    """A job with this id exists already (ids are random: in practice never)."""

    def __init__(self, message: str = "job") -> None:
        super().__init__(message)


class NameTaken(ConflictError):
    """Another live job of the owner has this name."""

    def __init__(self, message: str = "name") -> None:
        super().__init__(message)


class IdempotencyKeyTaken(ConflictError):
    """An earlier create used this ``Idempotency-Key`` (and its record has not expired)."""

    def __init__(self, message: str = "idempotency") -> None:
        super().__init__(message)


class VersionChanged(ConflictError):
    """The job changed since it was read (its version moved on)."""

    def __init__(self, message: str = "version") -> None:
        super().__init__(message)


class RunNotOurs(ConflictError):
    """The run is not in the state we read: another worker started it, or it was cancelled or taken
    over while we held it."""


class BadCursorError(ValueError):
    """A pagination cursor this API did not hand out for this listing."""


class PageFull(Exception):
    """Raised by a listing's ``keep``, for an item it would keep, to end the page before that item:
    the page's cursor goes on from the last item kept, so the next page starts with this one. For
    the page's first item it is not honoured: the item is kept (a page holds at least one)."""


# ------------------------------------------------------------------------------------- the table


class JobStore(Protocol):
    """Jobs, with their name reservations and idempotency records."""

    def create_job(
        self,
        job: Job,
        first_trigger: Trigger | None,
        idempotency: tuple[str, str] | None = None,
        *,
        replacing_name_of: str | None = None,
        change: Change | None = None,
    ) -> None:
        """``change`` (the create's record in the audit trail) first, then the idempotency record
        (key, request fingerprint), name, first trigger, then the job, one
        conditional write each in that order (a first trigger at the job's home is no write of its
        own: it is written inside the job's item): not all or none, but nothing a reader acts on
        before the job exists (a record, name or trigger whose job never appeared is taken over, or
        deleted, after the orphan grace: docs/architecture.md, "The write path"). A retry of the same
        create (the same job id) takes over what an earlier one left. ``replacing_name_of`` takes
        the name over from that ended job. Raises ``IdempotencyKeyTaken``, ``NameTaken`` or
        ``JobExists``."""

    def get_idempotent_create(self, owner: str, key: str, now: datetime) -> tuple[str, str] | None:
        """(job_id, fingerprint) of an earlier create with this key, if its record is still valid."""

    def update_job(
        self,
        before: Job,
        after: Job,
        *,
        trigger: Trigger | None = None,
        replacing_name_of: str | None = None,
        change: Change | None = None,
    ) -> None:
        """An API change, guarded by ``before.version`` and ``before.revision`` (written at the next
        revision, which ``change`` carries); moves or frees the name (taking it over from the ended job
        ``replacing_name_of``); writes ``trigger`` and ``change`` (its record in the audit trail) with
        it, all or none. Raises ``VersionChanged`` or ``NameTaken``."""

    def name_holder(self, owner: str, name: str) -> tuple[str, datetime | None] | None:
        """(job id, when reserved) of the job holding the owner's ``name``, if any."""

    def complete_job(self, job: Job, expires_at: datetime | None = None) -> bool:
        """End a recurring job whose schedule ran out (or reached ``max_runs``) and free its name, if
        its version is unchanged; ``expires_at``: gone from then on (``on_complete: delete``)."""

    def expire_job(self, job_id: str, expires_at: datetime) -> None:
        """A one-off job's ``on_complete: delete``: gone from ``expires_at`` on."""

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        """The job; ``consistent=False``: eventually consistent, at half the read units (a change of
        the last second or so may not show)."""

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
        """The owner's jobs with one of the stored ``statuses`` (and the ``name``, or a name starting
        with ``name_prefix``), newest first, less those ``keep`` refuses; raises ``BadCursorError`` for
        a cursor of another listing."""

    def owner_jobs(self, owner: str) -> list[Job]:
        """All of an owner's jobs."""


class ShardState(NamedTuple):
    """A shard as a sweep taking its hold finds it."""

    held: bool
    cursor: str | None = None
    frontier: Frontier | None = None
    # The sweep that left the frontier was the last to take the shard, and released it.
    clean: bool = False


class TriggerStore(Protocol):
    """Minute-bucket triggers, their claims, and each shard's sweep cursor."""

    def query_bucket(self, bucket: str, shard: int, *, consistent: bool = True) -> list[Trigger]:
        """The bucket's triggers; ``consistent=False``: an eventually consistent read (half the read
        units; a write of the last second or so may be missing)."""

    def put_trigger(self, trigger: Trigger) -> None: ...

    def claim_trigger_only(self, trigger: Trigger, *, token: str, now: datetime) -> bool:
        """Claim a retry wake-up (PENDING, or CLAIMED by a dispatcher that died) by its state and token."""

    def delete_trigger(self, trigger: Trigger) -> None: ...

    def get_cursor(self, shard: int) -> str | None: ...

    def hold_shard(self, shard: int, *, token: str, now: datetime, until: datetime) -> ShardState:
        """Hold the shard for a sweep until ``until`` (a hold that ended by ``now``, or is ``token``'s
        own, may be taken); whether it is held, and the shard's cursor and frontier. One request."""

    def release_shard(self, shard: int, *, token: str, frontier: Frontier | None = None) -> None:
        """End ``token``'s hold of the shard, recording the sweep's ``frontier`` if it has one
        (nothing if the hold is someone else's by now)."""

    def advance_cursor(self, shard: int, old: str | None, new: str) -> bool:
        """Move the shard's cursor forward to ``new``; False when someone moved it as far already."""

    def oldest_cursor(self, shards: Iterable[int]) -> str | None: ...


class RunStore(Protocol):
    """Runs: the history, and the conditional steps of an attempt."""

    def get_run(self, job_id: str, run_id: str) -> Run | None: ...

    def get_run_and_job(self, job_id: str, run_id: str) -> tuple[Run | None, Job | None]: ...

    def get_runs_and_jobs(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job]]:
        """The runs of these (job_id, run_id) pairs and their jobs that exist, read consistently in
        as few round trips as the table allows: a worker's first read of a batch."""

    def get_runs(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Run]:
        """The existing runs of these (job_id, run_id) pairs (may lag a write by a moment)."""

    def put_run(self, run: Run) -> bool:
        """Write a dispatched occurrence's run; False if it exists (unless it is a never-started
        run of an older job version, which is replaced)."""

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int,
        cursor: str | None = None,
        status: RunStatus | None = None,
        reason: Reason | None = None,
    ) -> tuple[list[Run], str | None]: ...

    def recent_runs(self, job_id: str, *, limit: int) -> list[Run]:
        """The job's newest ``limit`` runs, newest first."""

    def runs_before(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        """The runs scheduled just before ``run_id``, newest first (consistent: the overlap policy)."""

    def runs_after(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        """The runs scheduled just after ``run_id``, oldest first (consistent: the one waiting behind it)."""

    def claim_alert(self, run: Run, kind: str) -> bool:
        """Record that an alert of ``kind`` goes out for ``run``: True once per run and kind (the
        caller then sends it), False if it was sent already or the run is gone."""

    def mark_waiting(self, run: Run, behind: str) -> bool:
        """Record on a ``QUEUED`` run that it waits behind run ``behind`` (``overlap_with``), unless
        it changed since it was read (its status or job version)."""

    def start_attempt(
        self, run: Run, *, token: str, now: datetime, lease_until: datetime, create: bool = False
    ) -> Run:
        """Start the next attempt or take over a lapsed one; raises ``RunNotOurs`` if it changed.
        ``create``: the run was not in the table when read (its message came before the dispatcher's
        write): the start creates it, unless it appeared meanwhile as read."""

    def renew_lease(self, run: Run, lease_until: datetime) -> bool: ...

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
        """Record an attempt's outcome on the run under our lease; raises ``RunNotOurs`` if we lost it.

        ``started_late``: when the attempt that set the run's lateness called its target later than
        its start write said (the write is made ahead of the second and records the second), the
        moment it did: the run's ``started_at`` and ``lateness_ms`` become that moment's.
        """

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
        """End a run that has no attempt running (cancelled, skipped), guarded by what was read; or
        cancel one that has (its worker's heartbeat notices). ``overlap_with``: the run it was
        skipped or cancelled for (the overlap policy)."""


class CalendarExists(ConflictError):
    """The owner has a calendar of this name already (a create, not a replace)."""

    def __init__(self, message: str = "calendar") -> None:
        super().__init__(message)


class CalendarStore(Protocol):
    """An owner's business calendars (``punctual_functions/core/calendars.py``), one item each."""

    def get_calendar(self, owner: str, name: str) -> Calendar | None: ...

    def get_calendars(self, owner: str, names: Collection[str]) -> dict[str, Calendar]:
        """The calendars of these names that exist, in one round trip: what a dispatch reads."""

    def list_calendars(self, owner: str) -> list[Calendar]:
        """All of the owner's calendars, by name."""

    def put_calendar(self, owner: str, calendar: Calendar, *, expected_version: int | None) -> None:
        """Write ``calendar`` (its ``version`` as given). ``expected_version`` None: a create, refused
        with ``CalendarExists`` if the name is taken; else a replace of that version, refused with
        ``VersionChanged`` if the stored one is another (or gone)."""

    def delete_calendar(self, owner: str, name: str, *, expected_version: int | None = None) -> bool:
        """Delete the calendar (of that version, if given); False if there was none (or another version)."""


class LimitExists(ConflictError):
    """The owner has a limit of this name already (a create, not a replace)."""

    def __init__(self, message: str = "limit") -> None:
        super().__init__(message)


class LimitStore(Protocol):
    """An owner's target limits (``punctual_functions/core/limits.py``), one item each, with their slots
    (lease
    items), token buckets and the runs waiting on them (docs/architecture.md, "Target limits").
    ``name`` is a limit's name, or a job's own (``limits.job_limit_name``) for its slots."""

    def get_runs_jobs_and_limits(
        self, keys: list[tuple[str, str]], owners: Collection[str]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job], dict[str, list[Limit]]]:
        """``get_runs_and_jobs``, and in the same round trips the limits of ``owners`` (each owner's
        in one summary item; [] for an owner without limits): a worker's first read of a batch, so
        that knowing a job is under no limit costs no request."""

    def get_limit(self, owner: str, name: str) -> Limit | None: ...

    def list_limits(self, owner: str) -> list[Limit]:
        """All of the owner's limits, by name, in one Query (what a worker caches)."""

    def put_limit(self, owner: str, limit: Limit, *, expected_version: int | None) -> None:
        """Write ``limit`` (its ``version`` as given). ``expected_version`` None: a create, refused
        with ``LimitExists`` if the name is taken; else a replace of that version, refused with
        ``VersionChanged`` if the stored one is another (or gone)."""

    def delete_limit(self, owner: str, name: str) -> bool:
        """Delete the limit (its slots lapse on their own leases); False if there was none."""

    def limit_use(self, owner: str, name: str) -> LimitUse:
        """Its slots (held or lapsed), its bucket and the runs waiting on it: one Query."""

    def take_slot(
        self,
        owner: str,
        name: str,
        max_concurrent: int,
        *,
        holder: str,
        job_id: str,
        now: datetime,
        lease_until: datetime,
    ) -> bool:
        """Take one of the limit's ``max_concurrent`` slots for ``holder`` (a run) until
        ``lease_until``: a free one, one whose lease ended, or the holder's own (a retake). False when
        all are held. Two takers never get the same slot (a conditional write)."""

    def release_slot(
        self, owner: str, name: str, *, holder: str, max_concurrent: int | None, now: datetime
    ) -> list[Waiter]:
        """Free ``holder``'s slot (``limits.holds``; nothing if it is no longer the holder's: its
        lease lapsed and someone took it), handing it to the run waiting longest, and as many more
        free or lapsed slots as the limit has room for to the runs next in line
        (``limits.hand_over_places``, ``limits.in_turn``). Each hand-over is one write: the slot
        becomes the run's (``limits.handed_holder``, for ``limits.HANDOFF_SECONDS``) and the run's
        waiter item goes, so two releases never hand over to one run. Returns the runs handed slots,
        for the caller to wake; the releaser's slot is deleted when nobody takes it."""

    def take_token(self, owner: str, name: str, per_second: float, burst: int, *, now: datetime) -> float:
        """Take a token of the limit's bucket: 0 when taken, else the seconds until the next one."""

    def add_waiter(self, owner: str, name: str, run: Run, *, since: datetime) -> None:
        """Record that ``run`` waits on the limit (what the API lists; expires on its own)."""

    def remove_waiter(self, owner: str, name: str, run: Run) -> None: ...

    def mark_limited(self, run: Run, limit: str, *, since: datetime) -> bool:
        """Record on a ``QUEUED`` or ``RETRYING`` run that it waits on ``limit`` (reason ``limited``),
        unless it changed since it was read (its status or job version)."""


class TrailStore(Protocol):
    """The audit trail: a job's changes (``core/trail.py``), each put once, never changed."""

    def put_change(self, change: Change) -> None:
        """Record a change made apart from a write of its job (a create, a run now, a backfill)."""

    def list_changes(self, job_id: str, limit: int, cursor: str | None) -> tuple[list[Change], str | None]:
        """The job's changes, newest first, a page at a time. Raises ``BadCursorError``."""

    def revision_changes(self, job_id: str, revision: int) -> list[Change]:
        """The changes that made the job's ``revision`` and the next (which keeps the definition
        ``revision`` had), those still kept."""


class DeploymentStore(Protocol):
    """What the deployment writes for the API and the worker to read: the allow-list of AWS targets
    and the delivery rights."""

    def allowed_targets(self) -> tuple[str, ...]:
        """The ARN patterns jobs may target, as last written (none if never written)."""

    def put_allowed_targets(self, patterns: Sequence[str]) -> None:
        """Replace the allow-list (the deployment's, at deploy time)."""

    def delivery_rights(self) -> DeliveryRights:
        """Which owners may deliver where, as last written (no rights if never written)."""

    def put_delivery_rights(self, rights: DeliveryRights) -> None:
        """Replace the delivery rights (the deployment's, at deploy time)."""


class Tables(
    JobStore, TrailStore, TriggerStore, RunStore, CalendarStore, LimitStore, DeploymentStore, Protocol
):
    """The whole table: what a role's logic is given (each uses the parts it needs)."""


# ------------------------------------------------------------------------------- queue and the rest


class Queue(Protocol):
    """The work queue and its dead-letter queue."""

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        """Send (message, delay in seconds) pairs; raise if any was refused."""

    def change_visibility(self, receipt_handle: str, seconds: int) -> None: ...

    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]:
        """Set the visibility of several received messages, ten to a request; returns the receipt
        handles refused (a message deleted or received again meanwhile)."""

    def delete_messages(self, receipt_handles: list[str]) -> None:
        """Delete received messages (a worker's records that ended before their batch did)."""

    def send_to_dlq(self, body: str, reason: str) -> None: ...

    def depth(self) -> dict[str, int]:
        """queued, in_flight, delayed, dlq: for stats."""


class Targets(Protocol):
    """Delivers one attempt to a job's target. Never raises for a target failure."""

    def prepare(self, spec: Mapping[str, Any], timeout_seconds: float) -> None:
        """A delivery to ``spec`` is due within a moment: open what can be opened before it (its
        connection), without waiting and without failing."""

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
        *,
        wait: Callable[[], None] | None = None,
    ) -> TargetOutcome:
        """Deliver once. ``wait`` is called just before the request goes out (the wait for the run's
        second), after everything that can be done before it."""


class Invoker(Protocol):
    """Starts more dispatcher invocations, each sweeping its group of shards (the fan-out)."""

    def start_sweeps(self, groups: list[list[int]], starts: list[datetime]) -> list[list[int]]:
        """Hand each group of shards to an invocation of its own, to start sweeping at its moment of
        ``starts``; return the groups it could not."""

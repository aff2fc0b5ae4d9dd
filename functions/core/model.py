"""The domain: jobs, runs, triggers, the run state machine and the retry policy.

Plain Python with no AWS imports, so every rule here is tested in microseconds. The store turns these
objects into DynamoDB items and back; nothing else knows the item layout.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, overload

from functions.core.schedule import Schedule


class JobStatus(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class RunStatus(StrEnum):
    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    RETRYING = "RETRYING"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_RUN_STATUSES


TERMINAL_RUN_STATUSES = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.SKIPPED}
)

# The run state machine: which status may follow which. RUNNING -> RUNNING is a takeover of an attempt
# whose worker died (its lease expired).
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.SCHEDULED: frozenset({RunStatus.QUEUED, RunStatus.SKIPPED, RunStatus.CANCELLED}),
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.SKIPPED, RunStatus.CANCELLED}),
    RunStatus.RUNNING: frozenset(
        {RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.RETRYING, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.RETRYING: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
    RunStatus.SKIPPED: frozenset(),
}


class InvalidTransitionError(ValueError):
    pass


def check_transition(current: RunStatus, new: RunStatus) -> None:
    if new not in RUN_TRANSITIONS[current]:
        raise InvalidTransitionError(f"a {current} run cannot become {new}")


class MisfirePolicy(StrEnum):
    RUN_ONCE = "run_once"
    SKIP = "skip"
    RUN_ALL = "run_all"


class OverlapPolicy(StrEnum):
    """What an occurrence does when it falls due while an earlier run is under way (Temporal's names;
    ``lifecycle.overlap_decision``)."""

    ALLOW = "allow"
    SKIP = "skip"
    BUFFER_ONE = "buffer_one"
    BUFFER_ALL = "buffer_all"
    CANCEL_OTHER = "cancel_other"

    @property
    def buffers(self) -> bool:
        return self in (OverlapPolicy.BUFFER_ONE, OverlapPolicy.BUFFER_ALL)


class OnComplete(StrEnum):
    """What becomes of a job that ends (a one-off run done, a schedule run out, ``max_runs`` reached)."""

    KEEP = "keep"
    DELETE = "delete"  # gone ``delete_after_days`` after its end, its history with it


class TriggerState(StrEnum):
    """An occurrence's trigger is written PENDING, or CLAIMED (``claimed_at``, no token) when its
    writer dispatches it itself at once (``make_trigger(held=True)``); it is never updated after: it
    counts as dispatched once its run exists, and expires by TTL (``TRIGGER_RETENTION``). A sweep
    leaves a CLAIMED trigger alone until ``claim_timeout``. A retry wake-up is claimed (CLAIMED, with
    the claim's token) and deleted once sent; a claimed one whose dispatcher died is claimed again
    after ``claim_timeout``."""

    PENDING = "PENDING"
    CLAIMED = "CLAIMED"


class RunKind(StrEnum):
    SCHEDULED = "scheduled"
    MANUAL = "manual"
    PAUSE = "pause"  # a row standing for a pause span: the occurrences not run while paused
    BACKFILL = "backfill"  # a past occurrence run again on request (POST /v1/jobs/{job_id}/backfill)


class Reason(StrEnum):
    """Why a run did not run (SKIPPED, CANCELLED): the history of non-runs (docs/architecture.md)."""

    PAUSED = "paused"
    SUPERSEDED = "superseded"
    OVERLAP = "overlap"
    MISFIRE_SKIPPED = "misfire_skipped"
    MISFIRE_COLLAPSED = "misfire_collapsed"
    JOB_CANCELLED = "job_cancelled"
    CANCELLED = "cancelled"


# ---------------------------------------------------------------------------------------------- time


def to_ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@overload
def iso(moment: datetime) -> str: ...
@overload
def iso(moment: None) -> None: ...
def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds, the one time format of every response."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


# ----------------------------------------------------------------------------------------------- ids


def new_job_id(home_bucket: str | None = None, shard_count: int = 1) -> str:
    """A fresh job id. With ``home_bucket``: the id of a one-off job whose item lives in the trigger
    partition of that minute (and of the shard its random part hashes to), as its own first trigger
    (docs/architecture.md, "The table"); the id names that home, so readers find the item from it."""
    job_id = "job_" + uuid.uuid4().hex[:24]
    if home_bucket is None:
        return job_id
    shard = shard_of(job_id, shard_count)
    return f"{job_id}_{bucket_start(home_bucket).strftime('%Y%m%d%H%M')}s{shard}"


def home_of(job_id: str) -> tuple[str, int] | None:
    """The (bucket, shard) a job id names as its item's home, or None (the item is ``JOB#<id>``)."""
    parts = job_id.split("_")
    if len(parts) != 3:
        return None
    minute, separator, shard = parts[2].partition("s")
    if not separator or len(minute) != 12 or not minute.isdigit() or not shard.isdigit():
        return None
    moment = datetime.strptime(minute, "%Y%m%d%H%M").replace(tzinfo=UTC)
    return bucket_of(moment), int(shard)


def run_id_for(job_id: str, scheduled_for: datetime, kind: RunKind = RunKind.SCHEDULED) -> str:
    """A run's id is derived from its job and occurrence, so duplicates of one occurrence collapse.

    The time prefix makes run items sort chronologically under their job.
    """
    stamp = (
        scheduled_for.astimezone(UTC).strftime("%Y%m%dT%H%M%S.") + f"{scheduled_for.microsecond // 1000:03d}Z"
    )
    digest = hashlib.sha256(f"{job_id}|{to_ms(scheduled_for)}|{kind.value}".encode()).hexdigest()[:8]
    return f"{stamp}-{digest}"


def scheduled_for_of(run_id: str) -> datetime:
    stamp = run_id.split("-", 1)[0]
    return datetime.strptime(stamp, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)


# ------------------------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: spreads the retries of runs that failed together."""

    max_attempts: int = 3
    backoff_seconds: float = 5.0
    max_backoff_seconds: float = 600.0

    def has_attempts_left(self, attempts_made: int) -> bool:
        return attempts_made < self.max_attempts

    def delay_after(self, failed_attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt ``failed_attempt`` (1-based) before the next one."""
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (failed_attempt - 1))
        return (rng or random).uniform(0, ceiling)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_attempts": self.max_attempts,
            "backoff_seconds": self.backoff_seconds,
            "max_backoff_seconds": self.max_backoff_seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RetryPolicy:
        data = data or {}
        return cls(
            max_attempts=int(data.get("max_attempts", 3)),
            backoff_seconds=float(data.get("backoff_seconds", 5.0)),
            max_backoff_seconds=float(data.get("max_backoff_seconds", 600.0)),
        )


# ------------------------------------------------------------------------------------------- alerts


class AlertKind(StrEnum):
    """What a job's alerts tell of (docs/architecture.md, "Per-job alerts")."""

    FAILED = "failed"
    LATE = "late"
    RUNNING_LONG = "running_long"
    MISSED = "missed"


# The rows of occurrences that did not run which count as missed (a pause or a cancel was chosen).
MISSED_REASONS = frozenset({Reason.MISFIRE_SKIPPED, Reason.MISFIRE_COLLAPSED, Reason.OVERLAP})


@dataclass(frozen=True)
class Alerts:
    """A job's alerts: where they go (an SNS topic or a webhook, as a target) and on what."""

    target: dict[str, Any]
    failed: bool = False
    missed: bool = False
    late_seconds: int | None = None  # late: the first attempt started more than this after its due time
    running_seconds: int | None = None  # running_long: an attempt still running this long after its start

    def wants(self, kind: AlertKind) -> bool:
        return {
            AlertKind.FAILED: self.failed,
            AlertKind.MISSED: self.missed,
            AlertKind.LATE: self.late_seconds is not None,
            AlertKind.RUNNING_LONG: self.running_seconds is not None,
        }[kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "failed": self.failed,
            "missed": self.missed,
            "late_seconds": self.late_seconds,
            "running_seconds": self.running_seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alerts:
        return cls(
            target=dict(data["target"]),
            failed=bool(data.get("failed")),
            missed=bool(data.get("missed")),
            late_seconds=data.get("late_seconds"),
            running_seconds=data.get("running_seconds"),
        )


# ---------------------------------------------------------------------------------------- the model

# Who paused a job that Punctual paused itself (pause_on_failures).
PAUSED_BY_PUNCTUAL = "punctual"


@dataclass(frozen=True)
class Job:
    job_id: str
    owner: str
    schedule: Schedule
    target: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    name: str | None = None
    status: JobStatus = JobStatus.ACTIVE
    version: int = 1
    payload: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_seconds: int = 30
    tags: dict[str, str] = field(default_factory=dict)
    secret: str | None = None
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    catchup_seconds: int | None = None
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    next_trigger_at: datetime | None = None  # the chain's frontier: the latest occurrence with a trigger
    paused_at: datetime | None = None
    jitter_seconds: int = 0  # each scheduled occurrence fires up to this much after its time (jitter_of)
    pause_note: str | None = None  # why it is paused, as its pauser said
    paused_by: str | None = None  # who paused it: a caller, or "punctual" (pause_on_failures)
    pause_until: datetime | None = None  # active again from then on (Job.as_of); written so later
    pause_on_failures: int | None = None  # pause after this many consecutive FAILED runs
    max_runs: int | None = None  # a recurring job ends once this many occurrences were set off
    on_complete: OnComplete = OnComplete.KEEP
    delete_after_days: int = 7  # on_complete delete: how long an ended job stays readable
    expires_at: datetime | None = None  # on_complete delete: gone from then on (the item's TTL)
    alerts: Alerts | None = None
    # An SQS target (of the allow-list) that receives each run that ended FAILED, with its error.
    dead_letter: dict[str, Any] | None = None

    def alerts_on(self, kind: AlertKind) -> bool:
        """Whether this job wants an alert of ``kind``."""
        return self.alerts is not None and self.alerts.wants(kind)

    def gone(self, moment: datetime) -> bool:
        """Deleted by ``on_complete: delete`` (DynamoDB's TTL may not have removed the item yet)."""
        return self.expires_at is not None and self.expires_at <= moment

    def expiry_after_end(self, end: datetime) -> datetime | None:
        """When this job, ending at ``end``, is to be gone: None unless ``on_complete: delete``."""
        if self.on_complete is not OnComplete.DELETE:
            return None
        return end + timedelta(days=self.delete_after_days)

    def paused(self, now: datetime, by: str, note: str | None, until: datetime | None) -> Job:
        """This job paused at ``now`` (a new version: its triggers must not fire), or its pause
        re-noted (still at its first ``paused_at``)."""
        return replace(
            self,
            status=JobStatus.PAUSED,
            version=self.version + 1,
            paused_at=self.paused_at or now,
            pause_note=note,
            paused_by=by,
            pause_until=until,
            next_trigger_at=None,
            updated_at=now,
        )

    def resumed(self, now: datetime, first: datetime | None, *, new_version: bool = True) -> Job:
        """This job active again from ``first`` (COMPLETED when nothing is left to run)."""
        return replace(
            self,
            status=JobStatus.ACTIVE if first is not None else JobStatus.COMPLETED,
            version=self.version + 1 if new_version else self.version,
            paused_at=None,
            pause_note=None,
            paused_by=None,
            pause_until=None,
            next_trigger_at=first,
            updated_at=now,
        )

    def pause_ended(self, moment: datetime) -> bool:
        """Paused with an ``until`` that has come: active from then on, whether or not the dispatcher
        has written it so yet (it does when it next dispatches the job)."""
        return self.status is JobStatus.PAUSED and self.pause_until is not None and self.pause_until <= moment

    def as_of(self, moment: datetime) -> Job:
        """The job as it stands at ``moment``: a pause whose ``until`` has come has ended."""
        if not self.pause_ended(moment):
            return self
        return replace(
            self, status=JobStatus.ACTIVE, paused_at=None, pause_note=None, paused_by=None, pause_until=None
        )

    def first_after_pause(self) -> datetime | None:
        """The first occurrence a pause with ``until`` resumes with: the first at or after ``until``
        (nothing due while it was paused runs); a one-off's own time (it runs at ``until`` if that was
        earlier)."""
        if self.pause_until is None:
            return None
        if self.schedule.is_recurring:
            return self.schedule.next_after(self.pause_until - timedelta(microseconds=1))
        return self.schedule.first_fire_time()

    def resume_point(self, now: datetime) -> datetime | None:
        """The first occurrence a resume at ``now`` continues with: the first at or after it (nothing
        that fell due while paused runs: the pause's row in the history says what); a one-off's own
        time (it runs, however late)."""
        if self.schedule.is_recurring:
            return self.schedule.next_after(now - timedelta(microseconds=1))
        return self.schedule.first_fire_time()

    def pause_row(
        self, end: datetime, now: datetime, own_rows: Collection[datetime] = frozenset()
    ) -> Run | None:
        """The history's row for this job's pause, from ``paused_at`` to ``end``: the occurrences due
        in it, which did not run, with the pause's note and who paused (None if it was not paused).
        ``own_rows``: the times of occurrences that have a row of their own (dispatched ahead before
        the pause, then skipped), which the span does not count again."""
        if self.paused_at is None:
            return None
        # After the pause began (one due at that very moment was dispatched already) and before its end;
        # a one-off's time that passed while paused still runs, so it is none of them.
        due: list[datetime] = []
        if self.schedule.is_recurring:
            before = end - timedelta(microseconds=1)
            due = self.schedule.occurrences_between(self.paused_at, before, limit=MAX_ROW_COVERS)
            due = [moment for moment in due if moment not in own_rows]
        return replace(
            not_run_row(
                self,
                self.paused_at,
                due,
                Reason.PAUSED,
                now,
                kind=RunKind.PAUSE,
                error="not run while paused",
                note=self.pause_note,
                by=self.paused_by,
            ),
            finished_at=end,
        )

    @property
    def is_live(self) -> bool:
        return self.status in (JobStatus.ACTIVE, JobStatus.PAUSED)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a run, as recorded in its history."""

    number: int
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str | None = None  # SUCCEEDED | FAILED | RETRIABLE | CANCELLED | TAKEN_OVER
    duration_ms: int | None = None
    status_code: int | None = None
    error: str | None = None
    response: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "outcome": self.outcome,
            "duration_ms": self.duration_ms,
            "status_code": self.status_code,
            "error": self.error,
            "response": self.response,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            number=int(data["attempt"]),
            started_at=parse_iso(data["started_at"]),
            finished_at=parse_iso(data["finished_at"]) if data.get("finished_at") else None,
            outcome=data.get("outcome"),
            duration_ms=data.get("duration_ms"),
            status_code=data.get("status_code"),
            error=data.get("error"),
            response=data.get("response") or "",
        )


@dataclass(frozen=True)
class Run:
    job_id: str
    run_id: str
    owner: str
    scheduled_for: datetime
    status: RunStatus
    kind: RunKind = RunKind.SCHEDULED
    attempt: int = 0
    queued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    lateness_ms: int | None = None
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    lease_token: str | None = None
    executions: int = 0  # attempt starts including takeovers: more than `attempt` only after a crash
    job_version: int = 1  # the job version it was dispatched for: a later schedule change supersedes it
    error: str | None = None
    attempts: tuple[Attempt, ...] = ()
    jitter_ms: int = 0  # its first attempt is due this long after scheduled_for (the job's jitter)
    reason: Reason | None = None  # why it did not run (SKIPPED, CANCELLED without an attempt)
    covers: int = 1  # a row standing for several occurrences that did not run (a pause, a misfire stretch)
    covers_until: datetime | None = None  # the last of them
    note: str | None = None  # a pause span's note
    by: str | None = None  # who paused, for a pause span
    overlap_with: str | None = None  # the run it was skipped for, waits behind, or was cancelled for
    alerts_sent: frozenset[str] = frozenset()  # the alert kinds sent for it (once each)
    # A buffered backfill's run: its end dispatches the next occurrence, up to this one.
    backfill_until: datetime | None = None

    @property
    def due_at(self) -> datetime:
        """When its first attempt is due: the scheduled time plus the occurrence's jitter."""
        return self.scheduled_for + timedelta(milliseconds=self.jitter_ms)

    def summary(self) -> dict[str, Any]:
        """What the job view shows as its ``last_run``."""
        return {
            "run_id": self.run_id,
            "status": self.status.value,
            "scheduled_for": iso(self.scheduled_for),
            "finished_at": iso(self.finished_at),
            "lateness_ms": self.lateness_ms,
            "attempt": self.attempt,
            "error": self.error,
        }


@dataclass(frozen=True)
class Trigger:
    """ "Run ``run_id`` of job ``job_id`` is due at ``fire_at``": what the dispatcher sweeps."""

    job_id: str
    run_id: str
    scheduled_for: datetime
    fire_at: datetime
    job_version: int
    shard: int
    bucket: str
    kind: RunKind = RunKind.SCHEDULED
    # A retry trigger wakes an existing RETRYING run whose backoff was too long for SQS.
    is_retry: bool = False
    written_at: datetime | None = None  # an orphan (its job never written) is deleted after ORPHAN_GRACE
    state: TriggerState = TriggerState.PENDING
    claim_token: str | None = None
    claimed_at: datetime | None = None
    backfill_until: datetime | None = None  # a buffered backfill (see Run.backfill_until)
    runs_before: int = 0  # the scheduled occurrences set off before this one (max_runs)
    # Carried by the one-off job's item rather than an item of its own (the store's layout; removing
    # it removes the map, never the job).
    embedded: bool = False
    # An embedded trigger's job, as its bucket's read found the item: the dispatcher reads no job of
    # its own for it (a GetItem per one-off was 40% of the dispatcher's CPU: docs/scale.md).
    job: Job | None = field(default=None, compare=False, repr=False)


def bucket_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def bucket_start(bucket: str) -> datetime:
    return datetime.strptime(bucket, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)


def next_bucket(bucket: str) -> str:
    return bucket_of(bucket_start(bucket) + timedelta(minutes=1))


def shard_of(job_id: str, shard_count: int) -> int:
    """A job's triggers all live in one shard, so a fast recurring chain (each claim writes the next
    occurrence) is followed within the same sweep of that shard; jobs spread evenly over shards. A
    job whose id names a home keeps that shard (its item is there, whatever ``shard_count`` became)."""
    home = home_of(job_id)
    if home is not None:
        return home[1]
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:4], "big") % shard_count


def jitter_of(job: Job, scheduled_for: datetime, kind: RunKind = RunKind.SCHEDULED) -> int:
    """Milliseconds a scheduled occurrence of ``job`` fires after its time: spread evenly over
    ``0..jitter_seconds`` and fixed per occurrence (derived from the job and the time, as the run id
    is), so a retry, a second dispatch or a crash never draws it again. Manual runs are not delayed."""
    if job.jitter_seconds <= 0 or kind is not RunKind.SCHEDULED:
        return 0
    digest = hashlib.sha256(f"{job.job_id}|{to_ms(scheduled_for)}|jitter".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (job.jitter_seconds * 1000 + 1)


def fire_time(job: Job, scheduled_for: datetime, kind: RunKind = RunKind.SCHEDULED) -> datetime:
    """When an occurrence is due: its scheduled time plus its jitter."""
    return scheduled_for + timedelta(milliseconds=jitter_of(job, scheduled_for, kind))


def make_trigger(
    job: Job,
    scheduled_for: datetime,
    *,
    now: datetime,
    shard_count: int,
    kind: RunKind = RunKind.SCHEDULED,
    fire_at: datetime | None = None,
    held: bool = False,
    runs_before: int = 0,
) -> Trigger:
    """A trigger for one occurrence, in the bucket of ``max(fire_at, now)``: never in a passed bucket.

    ``held``: its writer dispatches it itself right after writing it (an API request for a job due
    within the look-ahead, a dispatcher following a fast cron's chain). It is written CLAIMED, so a
    sweep that lists it meanwhile leaves it alone until ``claim_timeout`` instead of sending it too;
    if the writer dies first, that sweep is the safety net."""
    run_id = run_id_for(job.job_id, scheduled_for, kind)
    fire = fire_at or fire_time(job, scheduled_for, kind)
    return Trigger(
        job_id=job.job_id,
        run_id=run_id,
        scheduled_for=scheduled_for,
        fire_at=fire,
        job_version=job.version,
        shard=shard_of(job.job_id, shard_count),
        bucket=bucket_of(max(fire, now)),
        kind=kind,
        written_at=now,
        state=TriggerState.CLAIMED if held else TriggerState.PENDING,
        claimed_at=now if held else None,
        runs_before=runs_before,
    )


# How long a trigger stays after its time before DynamoDB's TTL deletes it: as long as an SQS
# message can live. The sweep counts a trigger as done once its run exists; one never dispatched in
# that time (the dispatcher down for two weeks) is lost with it.
TRIGGER_RETENTION = timedelta(days=14)


# A create writes its idempotency record, name and trigger before the job itself; one whose job has
# not appeared this long after is an orphan of a create that died (longer than an API request lives).
ORPHAN_GRACE = timedelta(seconds=60)


def is_orphan(written_at: datetime | None, now: datetime) -> bool:
    """Whether an item written ahead of its job, at ``written_at``, is past the grace of a create
    still under way (items written before issue 13 carry no time: they are)."""
    return written_at is None or now - written_at > ORPHAN_GRACE


def is_dispatched(trigger: Trigger, run: Run | None) -> bool:
    """Whether ``trigger``'s occurrence has been dispatched: its run exists for this job version or a
    newer one, or has started (a never-started run of an older version is replaced by a resume or a
    new schedule landing on the same occurrence)."""
    if run is None:
        return False
    return run.job_version >= trigger.job_version or run.status not in (RunStatus.QUEUED, RunStatus.SKIPPED)


# --------------------------------------------------------------------------------------- misfires


@dataclass(frozen=True)
class ClaimPlan:
    """What claiming a trigger does: which occurrence runs (if any) and which one comes next."""

    run_scheduled_for: datetime | None  # None: nothing runs for this trigger
    skipped: datetime | None  # an occurrence recorded as SKIPPED
    next_occurrence: datetime | None


def plan_claim(job: Job, scheduled_for: datetime, now: datetime, misfire_threshold: timedelta) -> ClaimPlan:
    """Apply the job's misfire policy to an occurrence being claimed at ``now``; a jittered occurrence
    is missed only once its own due time is more than the threshold ago."""
    threshold = misfire_threshold + timedelta(milliseconds=jitter_of(job, scheduled_for))
    return plan_occurrence(job.schedule, job.misfire, job.catchup_seconds, scheduled_for, now, threshold)


def plan_occurrence(
    schedule: Schedule,
    misfire: MisfirePolicy,
    catchup_seconds: int | None,
    scheduled_for: datetime,
    now: datetime,
    misfire_threshold: timedelta,
) -> ClaimPlan:
    """Apply a misfire policy to an occurrence being claimed at ``now``: the dispatcher's decision,
    and the schedule preview's replay of an outage (``functions/core/preview.py``).

    On time (not later than the threshold) the occurrence runs and the chain continues after it. A
    missed recurring occurrence is handled by the policy; one-off jobs always run.
    """
    if not schedule.is_recurring:
        return ClaimPlan(scheduled_for, None, None)
    if now - scheduled_for <= misfire_threshold:
        return ClaimPlan(scheduled_for, None, schedule.next_after(scheduled_for))
    horizon = now - timedelta(seconds=catchup_seconds) if catchup_seconds is not None else None
    in_window = horizon is None or scheduled_for >= horizon
    if misfire is MisfirePolicy.RUN_ALL:
        if in_window:
            return ClaimPlan(scheduled_for, None, schedule.next_after(scheduled_for))
        # Jump to the first occurrence still inside the catch-up window.
        assert horizon is not None
        return ClaimPlan(None, scheduled_for, schedule.next_after(horizon - timedelta(microseconds=1)))
    following = schedule.next_after(now)
    if misfire is MisfirePolicy.SKIP:
        return ClaimPlan(None, scheduled_for, following)
    # run_once: only the latest missed occurrence runs.
    latest = scheduled_for
    for occurrence in schedule.occurrences_between(scheduled_for, now, limit=100_000):
        latest = occurrence
    if horizon is not None and latest < horizon:
        return ClaimPlan(None, scheduled_for, following)
    return ClaimPlan(latest, None, following)


def lateness_of(run: Run, started: datetime) -> int:
    """Milliseconds from the run's due time (its scheduled time, plus its jitter; for a backfill, its
    dispatch) to ``started``, when its first attempt called its target (never negative: the worker
    waits for the second)."""
    due = run.queued_at if run.kind is RunKind.BACKFILL and run.queued_at is not None else run.due_at
    return to_ms(started) - to_ms(due)


def started_run(run: Run, *, token: str, now: datetime, lease_until: datetime) -> Run:
    """The run as ``start_attempt`` leaves it: the next attempt RUNNING under our lease, or the same
    attempt taken over when its worker's lease lapsed. Lateness is the first attempt's, kept."""
    takeover = run.status is RunStatus.RUNNING
    return replace(
        run,
        status=RunStatus.RUNNING,
        attempt=run.attempt if takeover else run.attempt + 1,
        lease_token=token,
        lease_until=lease_until,
        started_at=run.started_at or now,
        lateness_ms=(run.lateness_ms if run.lateness_ms is not None else lateness_of(run, now)),
        executions=run.executions + 1,
    )


# How many of a job's newest runs its view reads to derive ``last_run`` and ``run_counts``.
RUN_COUNT_WINDOW = 1000


# Rows of scheduled occurrences that do not count against max_runs: the misfire policy's (never set
# off) and those a pause or a change of schedule stopped (the chain that follows counts again).
_NOT_COUNTED = (Reason.MISFIRE_SKIPPED, Reason.MISFIRE_COLLAPSED, Reason.PAUSED, Reason.SUPERSEDED)


def runs_made(runs: list[Run]) -> int:
    """How many of ``runs`` count against ``max_runs``: the scheduled occurrences the dispatcher set
    off, whatever became of them (an overlap skip or a failure counts), except those a pause or a
    schedule change stopped; not run now or backfills, nor the misfire policy's rows."""
    return sum(1 for run in runs if run.kind is RunKind.SCHEDULED and run.reason not in _NOT_COUNTED)


@dataclass(frozen=True)
class JobHistory:
    """What a job's view derives from its newest runs. None of it is written on the job item: the
    worker records an outcome on the run alone (docs/architecture.md, "The write path")."""

    status: JobStatus
    last_run: Run | None  # the newest finished run
    run_counts: dict[str, int]  # finished runs by status, over the newest RUN_COUNT_WINDOW runs


def job_history(job: Job, runs: list[Run]) -> JobHistory:
    """Derive the job's view from ``runs``, its newest runs, newest first.

    A one-off job follows its run: ``COMPLETED`` once the run of its ``at`` time succeeded, ``FAILED``
    once it failed for good. A paused or cancelled job keeps the status it was given.
    """
    # A pause span is a row of the history, not a run: it is neither the last run nor counted.
    finished = [run for run in runs if run.status.is_terminal and run.kind is not RunKind.PAUSE]
    counts: dict[str, int] = {}
    for run in finished:
        counts[run.status.value] = counts.get(run.status.value, 0) + 1
    status = job.status
    if status is JobStatus.ACTIVE and not job.schedule.is_recurring:
        at = job.schedule.first_fire_time()
        due = to_ms(at) if at is not None else None
        own = next((r for r in runs if r.kind is RunKind.SCHEDULED and to_ms(r.scheduled_for) == due), None)
        if own is not None and own.status is RunStatus.SUCCEEDED:
            status = JobStatus.COMPLETED
        elif own is not None and own.status is RunStatus.FAILED:
            status = JobStatus.FAILED
        elif own is not None and own.status is RunStatus.CANCELLED:
            status = JobStatus.CANCELLED  # its one run was cancelled: nothing is left to run
    return JobHistory(status, finished[0] if finished else None, counts)


# The most occurrences one row of the history of non-runs counts (run_once's own bound).
MAX_ROW_COVERS = 100_000


def not_run_row(
    job: Job,
    start: datetime,
    occurrences: list[datetime],
    reason: Reason,
    now: datetime,
    *,
    kind: RunKind = RunKind.SCHEDULED,
    error: str,
    note: str | None = None,
    by: str | None = None,
) -> Run:
    """One SKIPPED row for a stretch of occurrences that did not run, at ``start`` (its first one, or
    for a pause span the pause's start): ``covers`` them, up to ``covers_until``."""
    return Run(
        job_id=job.job_id,
        run_id=run_id_for(job.job_id, start, kind),
        owner=job.owner,
        scheduled_for=start,
        status=RunStatus.SKIPPED,
        kind=kind,
        queued_at=now,
        finished_at=now,
        job_version=job.version,
        error=error,
        reason=reason,
        covers=len(occurrences),
        covers_until=occurrences[-1] if occurrences else None,
        note=note,
        by=by,
    )

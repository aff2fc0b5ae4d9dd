"""Triggers: "this occurrence is due then", in minute buckets and shards, with the occurrence's jitter."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from punctual_functions.core.model.ids import bucket_of, run_id_for, shard_of, to_ms
from punctual_functions.core.model.job import Job
from punctual_functions.core.model.run import Run
from punctual_functions.core.model.status import RunKind, RunStatus, TriggerState


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
    still under way (an item that carries no time is)."""
    return written_at is None or now - written_at > ORPHAN_GRACE


def is_dispatched(trigger: Trigger, run: Run | None) -> bool:
    """Whether ``trigger``'s occurrence has been dispatched: its run exists for this job version or a
    newer one, or has started (a never-started run of an older version is replaced by a resume or a
    new schedule landing on the same occurrence)."""
    if run is None:
        return False
    return run.job_version >= trigger.job_version or run.status not in (RunStatus.QUEUED, RunStatus.SKIPPED)

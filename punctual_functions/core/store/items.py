"""Items ↔ domain objects: how a job, a run and a trigger are written as DynamoDB attributes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import (
    TRIGGER_RETENTION,
    Alerts,
    Attempt,
    Job,
    JobStatus,
    MisfirePolicy,
    OnComplete,
    OverlapPolicy,
    Reason,
    RetryPolicy,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    TriggerState,
    from_ms,
    home_of,
    run_id_for,
    to_ms,
)
from punctual_functions.core.resources import GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE
from punctual_functions.core.schedule import Schedule
from punctual_functions.core.store.keys import job_key, owner_index_pk, trigger_key

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values as DynamoDB attribute values; ``None`` means "no such attribute"."""
    return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}


def from_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _deserializer.deserialize(value) for key, value in item.items()}


def optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def optional_time(value: Any) -> datetime | None:
    return None if value is None else from_ms(int(value))


def optional_ms(value: datetime | None) -> int | None:
    return None if value is None else to_ms(value)


def job_to_item(job: Job, first_trigger: Trigger | None = None) -> dict[str, Any]:
    """The job's item; with ``first_trigger``, that trigger inside it (a one-off job at its home:
    ``embeds``)."""
    key = job_key(job.job_id)
    values: dict[str, Any] = {
        PK: key[PK]["S"],
        SK: key[SK]["S"],
        "type": "job",
        "job_id": job.job_id,
        "owner": job.owner,
        "name": job.name,
        "status": job.status.value,
        "version": job.version,
        "revision": job.revision or None,
        "schedule": json.dumps(job.schedule.to_dict()),
        "target": json.dumps(job.target),
        "payload": json.dumps(job.payload),
        "retry": json.dumps(job.retry.to_dict()),
        "timeout_seconds": job.timeout_seconds,
        "tags": json.dumps(job.tags),
        "secret": job.secret,
        "misfire": job.misfire.value,
        "catchup_seconds": job.catchup_seconds,
        "overlap": job.overlap.value,
        "created_at": to_ms(job.created_at),
        "updated_at": to_ms(job.updated_at),
        "next_trigger_at": optional_ms(job.next_trigger_at),
        "paused_at": optional_ms(job.paused_at),
        "jitter_seconds": job.jitter_seconds or None,
        "pause_note": job.pause_note,
        "paused_by": job.paused_by,
        "pause_until": optional_ms(job.pause_until),
        "pause_on_failures": job.pause_on_failures,
        "max_runs": job.max_runs,
        "max_concurrent": job.max_concurrent,
        "alerts": json.dumps(job.alerts.to_dict()) if job.alerts is not None else None,
        "dead_letter": json.dumps(job.dead_letter) if job.dead_letter is not None else None,
        "calendar": job.calendar,
        "on_excluded": job.on_excluded.value if job.calendar is not None else None,
        "on_complete": job.on_complete.value if job.on_complete is not OnComplete.KEEP else None,
        "delete_after_days": job.delete_after_days if job.on_complete is not OnComplete.KEEP else None,
        TTL_ATTRIBUTE: int(job.expires_at.timestamp()) if job.expires_at is not None else None,
        GSI1_PK: owner_index_pk(job.owner),
        GSI1_SK: f"{to_ms(job.created_at):013d}#{job.job_id}",
        EMBEDDED_TRIGGER: _embedded(first_trigger) if first_trigger is not None else None,
    }
    return to_attributes(values)


# The attribute of a one-off job's item that holds its first trigger (docs/architecture.md).
EMBEDDED_TRIGGER = "trigger"


def embeds(job: Job, trigger: Trigger | None) -> bool:
    """Whether ``trigger`` goes inside ``job``'s item: the job's first scheduled occurrence, in the
    bucket and shard its id names as home (a create retried after that minute writes a trigger of
    its own in the current one)."""
    return (
        trigger is not None
        and home_of(job.job_id) == (trigger.bucket, trigger.shard)
        and trigger.kind is RunKind.SCHEDULED
        and not trigger.is_retry
        and trigger.runs_before == 0
    )


def _embedded(trigger: Trigger) -> dict[str, Any]:
    """Only what the job item does not say already: the trigger is the job's first occurrence."""
    values = {
        "scheduled_for": to_ms(trigger.scheduled_for),
        "fire_at": to_ms(trigger.fire_at),
        "job_version": trigger.job_version,
        "state": trigger.state.value,
        "claimed_at": optional_ms(trigger.claimed_at),
    }
    return {key: value for key, value in values.items() if value is not None}


def job_from_item(item: Mapping[str, Any]) -> Job:
    return _job_from_data(from_attributes(item))


def _job_from_data(data: Mapping[str, Any]) -> Job:
    return Job(
        job_id=data["job_id"],
        owner=data["owner"],
        name=data.get("name"),
        status=JobStatus(data["status"]),
        version=int(data["version"]),
        revision=int(data.get("revision") or 0),
        schedule=Schedule.from_dict(json.loads(data["schedule"])),
        target=json.loads(data["target"]),
        payload=json.loads(data["payload"]),
        retry=RetryPolicy.from_dict(json.loads(data["retry"])),
        timeout_seconds=int(data["timeout_seconds"]),
        tags=json.loads(data["tags"]),
        secret=data.get("secret"),
        misfire=MisfirePolicy(data["misfire"]),
        catchup_seconds=optional_int(data.get("catchup_seconds")),
        overlap=OverlapPolicy(data["overlap"]),
        created_at=from_ms(int(data["created_at"])),
        updated_at=from_ms(int(data["updated_at"])),
        next_trigger_at=optional_time(data.get("next_trigger_at")),
        paused_at=optional_time(data.get("paused_at")),
        jitter_seconds=int(data.get("jitter_seconds") or 0),
        pause_note=data.get("pause_note"),
        paused_by=data.get("paused_by"),
        pause_until=optional_time(data.get("pause_until")),
        pause_on_failures=optional_int(data.get("pause_on_failures")),
        max_runs=optional_int(data.get("max_runs")),
        max_concurrent=optional_int(data.get("max_concurrent")),
        alerts=Alerts.from_dict(json.loads(data["alerts"])) if data.get("alerts") else None,
        dead_letter=json.loads(data["dead_letter"]) if data.get("dead_letter") else None,
        calendar=data.get("calendar"),
        on_excluded=OnExcluded(data.get("on_excluded") or OnExcluded.SKIP.value),
        on_complete=OnComplete(data.get("on_complete") or OnComplete.KEEP.value),
        delete_after_days=int(data.get("delete_after_days") or 7),
        expires_at=from_ms(int(data[TTL_ATTRIBUTE]) * 1000) if data.get(TTL_ATTRIBUTE) is not None else None,
    )


def run_to_item(run: Run, expires_at: datetime) -> dict[str, Any]:
    item = to_attributes(
        {
            PK: f"JOB#{run.job_id}",
            SK: f"RUN#{run.run_id}",
            "type": "run",
            "job_id": run.job_id,
            "run_id": run.run_id,
            "owner": run.owner,
            "scheduled_for": to_ms(run.scheduled_for),
            "status": run.status.value,
            "kind": run.kind.value,
            "attempt": run.attempt,
            "executions": run.executions,
            "job_version": run.job_version,
            "queued_at": optional_ms(run.queued_at),
            "started_at": optional_ms(run.started_at),
            "finished_at": optional_ms(run.finished_at),
            "lateness_ms": run.lateness_ms,
            "next_attempt_at": optional_ms(run.next_attempt_at),
            "jitter_ms": run.jitter_ms or None,
            "reason": run.reason.value if run.reason else None,
            "covers": run.covers if run.covers != 1 else None,
            "covers_until": optional_ms(run.covers_until),
            "note": run.note,
            "by": run.by,
            "backfill_until": optional_ms(run.backfill_until),
            "overlap_with": run.overlap_with,
            "calendar": run.calendar,
            "moved_from": [to_ms(moment) for moment in run.moved_from] or None,
            "limited_by": run.limited_by,
            "limited_since": optional_ms(run.limited_since),
            "limited_ms": run.limited_ms,
            "alerts_sent": set(run.alerts_sent) or None,
            "error": run.error,
            TTL_ATTRIBUTE: int(expires_at.timestamp()),
        }
    )
    item["attempts"] = {"L": [{"S": json.dumps(a.to_dict())} for a in run.attempts]}
    return item


def run_from_item(item: Mapping[str, Any]) -> Run:
    data = from_attributes(item)
    return Run(
        job_id=data["job_id"],
        run_id=data["run_id"],
        owner=data["owner"],
        scheduled_for=from_ms(int(data["scheduled_for"])),
        status=RunStatus(data["status"]),
        kind=RunKind(data.get("kind", RunKind.SCHEDULED.value)),
        attempt=int(data.get("attempt", 0)),
        executions=int(data.get("executions", 0)),
        job_version=int(data.get("job_version", 1)),
        queued_at=optional_time(data.get("queued_at")),
        started_at=optional_time(data.get("started_at")),
        finished_at=optional_time(data.get("finished_at")),
        lateness_ms=optional_int(data.get("lateness_ms")),
        next_attempt_at=optional_time(data.get("next_attempt_at")),
        lease_until=optional_time(data.get("lease_until")),
        lease_token=data.get("lease_token"),
        jitter_ms=int(data.get("jitter_ms") or 0),
        reason=Reason(data["reason"]) if data.get("reason") else None,
        covers=int(data["covers"]) if data.get("covers") is not None else 1,
        covers_until=optional_time(data.get("covers_until")),
        note=data.get("note"),
        by=data.get("by"),
        backfill_until=optional_time(data.get("backfill_until")),
        overlap_with=data.get("overlap_with"),
        calendar=data.get("calendar"),
        moved_from=tuple(from_ms(int(moment)) for moment in data.get("moved_from") or ()),
        limited_by=data.get("limited_by"),
        limited_since=optional_time(data.get("limited_since")),
        limited_ms=optional_int(data.get("limited_ms")),
        alerts_sent=frozenset(data.get("alerts_sent") or ()),
        error=data.get("error"),
        attempts=tuple(Attempt.from_dict(json.loads(a)) for a in data.get("attempts") or []),
    )


def attempt_to_attribute(attempt: Attempt) -> dict[str, Any]:
    return {"S": json.dumps(attempt.to_dict())}


def trigger_to_item(trigger: Trigger) -> dict[str, Any]:
    item = trigger_key(trigger)
    item.update(
        to_attributes(
            {
                "type": "trigger",
                "job_id": trigger.job_id,
                "run_id": trigger.run_id,
                "scheduled_for": to_ms(trigger.scheduled_for),
                "fire_at": to_ms(trigger.fire_at),
                "job_version": trigger.job_version,
                "kind": trigger.kind.value,
                "is_retry": trigger.is_retry or None,
                "state": trigger.state.value,
                "claim_token": trigger.claim_token,
                "claimed_at": optional_ms(trigger.claimed_at),
                "written_at": optional_ms(trigger.written_at),
                "backfill_until": optional_ms(trigger.backfill_until),
                "runs_before": trigger.runs_before or None,
                TTL_ATTRIBUTE: int((trigger.fire_at + TRIGGER_RETENTION).timestamp()),
            }
        )
    )
    return item


def trigger_from_item(item: Mapping[str, Any], bucket: str, shard: int) -> Trigger | None:
    """The trigger an item of a bucket holds: a trigger item, or a one-off job's item carrying its
    first trigger (None when it carries none: removed as stale, or never embedded)."""
    data = from_attributes(item)
    if data.get("type") == "job":
        embedded = data.get(EMBEDDED_TRIGGER)
        if not embedded:
            return None
        job_id = str(data["job_id"])
        scheduled_for = from_ms(int(embedded["scheduled_for"]))
        return Trigger(
            job_id=job_id,
            run_id=run_id_for(job_id, scheduled_for),
            scheduled_for=scheduled_for,
            fire_at=from_ms(int(embedded["fire_at"])),
            job_version=int(embedded["job_version"]),
            shard=shard,
            bucket=bucket,
            state=TriggerState(embedded["state"]),
            claimed_at=optional_time(embedded.get("claimed_at")),
            written_at=from_ms(int(data["created_at"])),
            embedded=True,
            job=_job_from_data(data),
        )
    return Trigger(
        job_id=data["job_id"],
        run_id=data["run_id"],
        scheduled_for=from_ms(int(data["scheduled_for"])),
        fire_at=from_ms(int(data["fire_at"])),
        job_version=int(data["job_version"]),
        shard=shard,
        bucket=bucket,
        kind=RunKind(data.get("kind", RunKind.SCHEDULED.value)),
        is_retry=bool(data.get("is_retry", False)),
        state=TriggerState(data["state"]),
        claim_token=data.get("claim_token"),
        claimed_at=optional_time(data.get("claimed_at")),
        written_at=optional_time(data.get("written_at")),
        backfill_until=optional_time(data.get("backfill_until")),
        runs_before=int(data.get("runs_before") or 0),
    )


def as_stored_job(job: Job) -> Job:
    """The job as the table gives it back: times to the millisecond, JSON fields as copies. What a
    "did our write land" check compares with (a freshly made job has microseconds)."""
    return job_from_item(job_to_item(job))


def as_stored_attempt(attempt: Attempt) -> Attempt:
    """The attempt as the run's history gives it back (times to the millisecond)."""
    return Attempt.from_dict(attempt.to_dict())

"""Instants as the table and the API write them; the ids of jobs and runs (a run's id names its
occurrence, so every dispatch of one occurrence names the same run); minute buckets and shards."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import overload

from punctual_functions.core.model.status import RunKind


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


def bucket_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def bucket_start(bucket: str) -> datetime:
    return datetime.strptime(bucket, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)


def next_bucket(bucket: str) -> str:
    return bucket_of(bucket_start(bucket) + timedelta(minutes=1))


def shard_of(job_id: str, shard_count: int) -> int:
    """A job's triggers all live in one shard, so a fast recurring chain (each dispatch writes the next
    occurrence) is followed within the same sweep of that shard; jobs spread evenly over shards. A
    job whose id names a home keeps that shard (its item is there, whatever ``shard_count`` became)."""
    home = home_of(job_id)
    if home is not None:
        return home[1]
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:4], "big") % shard_count

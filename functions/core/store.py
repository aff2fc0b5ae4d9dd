"""DynamoDB access: the item layout of docs/architecture.md and every conditional write.

This is the only module that knows keys and attribute names. Conditional writes here are what make
the system correct with several dispatchers and workers: a claim, an attempt start and an outcome each
succeed for exactly one writer.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from functions.core.definitions import GSI1, GSI1_PK, GSI1_SK, PK, SK, TTL_ATTRIBUTE
from functions.core.model import (
    Attempt,
    Job,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    RetryPolicy,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    from_ms,
    to_ms,
)
from functions.core.schedule import Schedule

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

T = TypeVar("T")
IDEMPOTENCY_TTL = timedelta(hours=24)

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _ser(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}


def _de(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _deserializer.deserialize(value) for key, value in item.items()}


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _time(value: Any) -> datetime | None:
    return None if value is None else from_ms(int(value))


def _ms(value: datetime | None) -> int | None:
    return None if value is None else to_ms(value)


def job_key(job_id: str) -> dict[str, Any]:
    return {PK: {"S": f"JOB#{job_id}"}, SK: {"S": "JOB"}}


def run_key(job_id: str, run_id: str) -> dict[str, Any]:
    return {PK: {"S": f"JOB#{job_id}"}, SK: {"S": f"RUN#{run_id}"}}


def name_key(owner: str, name: str) -> dict[str, Any]:
    return {PK: {"S": f"NAME#{owner}#{name}"}, SK: {"S": "NAME"}}


def trigger_pk(bucket: str, shard: int) -> str:
    return f"T#{bucket}#{shard:03d}"


def trigger_key(trigger: Trigger) -> dict[str, Any]:
    return {
        PK: {"S": trigger_pk(trigger.bucket, trigger.shard)},
        SK: {"S": f"{to_ms(trigger.fire_at):013d}#{trigger.run_id}"},
    }


def idempotency_key(owner: str, key: str) -> dict[str, Any]:
    return {PK: {"S": f"IDEMPOTENCY#{owner}#{key}"}, SK: {"S": "IDEMPOTENCY"}}


def _key_of(item: Mapping[str, Any], index: str | None) -> dict[str, Any]:
    """The pagination key of an item (with the index keys when reading an index)."""
    names = [PK, SK] + ([GSI1_PK, GSI1_SK] if index == GSI1 else [])
    return {name: item[name] for name in names}


def cursor_key(shard: int) -> dict[str, Any]:
    return {PK: {"S": f"CURSOR#{shard:03d}"}, SK: {"S": "CURSOR"}}


# ------------------------------------------------------------------------------------- conversions


def job_to_item(job: Job) -> dict[str, Any]:
    values: dict[str, Any] = {
        PK: f"JOB#{job.job_id}",
        SK: "JOB",
        "type": "job",
        "job_id": job.job_id,
        "owner": job.owner,
        "name": job.name,
        "status": job.status.value,
        "version": job.version,
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
        "next_trigger_at": _ms(job.next_trigger_at),
        "last_run": json.dumps(job.last_run) if job.last_run is not None else None,
        "paused_at": _ms(job.paused_at),
        GSI1_PK: f"OWNER#{job.owner}",
        GSI1_SK: f"{to_ms(job.created_at):013d}#{job.job_id}",
    }
    item = _ser(values)
    item["run_counts"] = {"M": {k: {"N": str(v)} for k, v in job.run_counts.items()}}
    return item


def job_from_item(item: Mapping[str, Any]) -> Job:
    data = _de(item)
    return Job(
        job_id=data["job_id"],
        owner=data["owner"],
        name=data.get("name"),
        status=JobStatus(data["status"]),
        version=int(data["version"]),
        schedule=Schedule.from_dict(json.loads(data["schedule"])),
        target=json.loads(data["target"]),
        payload=json.loads(data["payload"]),
        retry=RetryPolicy.from_dict(json.loads(data["retry"])),
        timeout_seconds=int(data["timeout_seconds"]),
        tags=json.loads(data["tags"]),
        secret=data.get("secret"),
        misfire=MisfirePolicy(data["misfire"]),
        catchup_seconds=_int(data.get("catchup_seconds")),
        overlap=OverlapPolicy(data["overlap"]),
        created_at=from_ms(int(data["created_at"])),
        updated_at=from_ms(int(data["updated_at"])),
        next_trigger_at=_time(data.get("next_trigger_at")),
        last_run=json.loads(data["last_run"]) if data.get("last_run") else None,
        paused_at=_time(data.get("paused_at")),
        run_counts={k: int(v) for k, v in (data.get("run_counts") or {}).items()},
    )


def run_to_item(run: Run, expires_at: datetime) -> dict[str, Any]:
    item = _ser(
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
            "queued_at": _ms(run.queued_at),
            "started_at": _ms(run.started_at),
            "finished_at": _ms(run.finished_at),
            "lateness_ms": run.lateness_ms,
            "next_attempt_at": _ms(run.next_attempt_at),
            "error": run.error,
            TTL_ATTRIBUTE: int(expires_at.timestamp()),
        }
    )
    item["attempts"] = {"L": [{"S": json.dumps(a.to_dict())} for a in run.attempts]}
    return item


def run_from_item(item: Mapping[str, Any]) -> Run:
    data = _de(item)
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
        queued_at=_time(data.get("queued_at")),
        started_at=_time(data.get("started_at")),
        finished_at=_time(data.get("finished_at")),
        lateness_ms=_int(data.get("lateness_ms")),
        next_attempt_at=_time(data.get("next_attempt_at")),
        lease_until=_time(data.get("lease_until")),
        lease_token=data.get("lease_token"),
        error=data.get("error"),
        attempts=tuple(Attempt.from_dict(json.loads(a)) for a in data.get("attempts") or []),
    )


def trigger_to_item(trigger: Trigger) -> dict[str, Any]:
    item = trigger_key(trigger)
    item.update(
        _ser(
            {
                "type": "trigger",
                "job_id": trigger.job_id,
                "run_id": trigger.run_id,
                "scheduled_for": to_ms(trigger.scheduled_for),
                "fire_at": to_ms(trigger.fire_at),
                "job_version": trigger.job_version,
                "kind": trigger.kind.value,
                "is_retry": trigger.is_retry or None,
                "state": trigger.state,
                "claim_token": trigger.claim_token,
                "claimed_at": _ms(trigger.claimed_at),
            }
        )
    )
    return item


def trigger_from_item(item: Mapping[str, Any], bucket: str, shard: int) -> Trigger:
    data = _de(item)
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
        state=data["state"],
        claim_token=data.get("claim_token"),
        claimed_at=_time(data.get("claimed_at")),
    )


# ---------------------------------------------------------------------------------------- results


class ConflictError(Exception):
    """A conditional write lost: another writer got there first, or the item changed."""


@dataclass(frozen=True)
class ClaimResult:
    claimed: bool
    stale: bool  # the job changed (version, status) or is gone: the trigger must not fire


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def encode_cursor(key: Mapping[str, Any] | None) -> str | None:
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


class BadCursorError(ValueError):
    pass


def decode_cursor(cursor: str | None) -> dict[str, Any] | None:
    if not cursor:
        return None
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError) as error:
        raise BadCursorError("not a cursor this API returned") from error
    if not isinstance(decoded, dict) or not all(
        isinstance(value, dict) and set(value) == {"S"} and isinstance(value["S"], str)
        for value in decoded.values()
    ):
        raise BadCursorError("not a cursor this API returned")
    return decoded


def _cancellation_codes(error: ClientError) -> list[str]:
    reasons = error.response.get("CancellationReasons") or []
    return [str(reason.get("Code", "None")) for reason in reasons]


class Store:
    """The table, through the low-level client (cheaper to import and to call than the resource API)."""

    def __init__(self, client: DynamoDBClient, table_name: str, run_retention: timedelta) -> None:
        self.client = client
        self.table = table_name
        self.run_retention = run_retention

    # -------------------------------------------------------------------------------------- jobs

    def create_job(
        self, job: Job, first_trigger: Trigger | None, idempotency: tuple[str, str] | None = None
    ) -> None:
        """Job, name reservation, idempotency record and first trigger in one transaction.

        ``idempotency`` is (key, request fingerprint). Raises ``ConflictError`` naming what collided:
        ``"name"`` or ``"idempotency"``.
        """
        items: list[TransactWriteItemTypeDef] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": job_to_item(job),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ]
        parts = ["job"]
        if job.name:
            items.append(self._put_name(job))
            parts.append("name")
        if idempotency is not None:
            key, fingerprint = idempotency
            expires = int((job.created_at + IDEMPOTENCY_TTL).timestamp())
            items.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": {
                            **idempotency_key(job.owner, key),
                            "job_id": {"S": job.job_id},
                            "fingerprint": {"S": fingerprint},
                            TTL_ATTRIBUTE: {"N": str(expires)},
                        },
                        "ConditionExpression": "attribute_not_exists(pk) OR #expires < :now",
                        "ExpressionAttributeNames": {"#expires": TTL_ATTRIBUTE},
                        "ExpressionAttributeValues": {":now": {"N": str(int(job.created_at.timestamp()))}},
                    }
                }
            )
            parts.append("idempotency")
        if first_trigger is not None:
            items.append({"Put": {"TableName": self.table, "Item": trigger_to_item(first_trigger)}})
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            if self._already_written(job):
                return
            codes = _cancellation_codes(error)
            # Report the idempotency record first: a retried create also collides on its name.
            for part in ("idempotency", "name", "job"):
                position = parts.index(part) if part in parts else len(codes)
                if position < len(codes) and codes[position] == "ConditionalCheckFailed":
                    raise ConflictError(part) from error
            raise

    def _already_written(self, job: Job) -> bool:
        """True when this very write is in the table: the SDK retried a transaction whose answer was
        lost after it took effect (job ids are random, so nobody else writes this job)."""
        stored = self.get_job(job.job_id)
        return stored is not None and stored.owner == job.owner and stored.created_at == job.created_at

    def _put_name(self, job: Job) -> TransactWriteItemTypeDef:
        assert job.name is not None
        return {
            "Put": {
                "TableName": self.table,
                "Item": {**name_key(job.owner, job.name), "job_id": {"S": job.job_id}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _release_name(self, job: Job) -> TransactWriteItemTypeDef:
        assert job.name is not None
        return {
            "Delete": {
                "TableName": self.table,
                "Key": name_key(job.owner, job.name),
                "ConditionExpression": "attribute_not_exists(pk) OR job_id = :job_id",
                "ExpressionAttributeValues": {":job_id": {"S": job.job_id}},
            }
        }

    def get_idempotent_create(self, owner: str, key: str, now: datetime) -> tuple[str, str] | None:
        """(job_id, fingerprint) of an earlier create with this ``Idempotency-Key``, if still valid."""
        response = self.client.get_item(
            TableName=self.table, Key=idempotency_key(owner, key), ConsistentRead=True
        )
        item = response.get("Item")
        if not item or int(item[TTL_ATTRIBUTE]["N"]) < int(now.timestamp()):
            return None
        return item["job_id"]["S"], item["fingerprint"]["S"]

    def update_job(
        self,
        before: Job,
        after: Job,
        *,
        trigger: Trigger | None = None,
        extra_sets: Mapping[str, Any] | None = None,
    ) -> None:
        """Write a change made through the API, guarded by the version that was read.

        Only the fields the API owns are written (the dispatcher and worker update ``next_trigger_at``,
        ``last_run`` and counters concurrently). A changed name moves its reservation; a job that
        stops being live releases it; ``trigger`` is the first trigger of a new schedule.
        """
        item = job_to_item(after)
        owned = [
            "name",
            "status",
            "version",
            "schedule",
            "target",
            "payload",
            "retry",
            "timeout_seconds",
            "tags",
            "secret",
            "misfire",
            "catchup_seconds",
            "overlap",
            "updated_at",
        ]
        if after.version != before.version:
            # The dispatcher maintains next_trigger_at for the current version; a new version resets it.
            owned += ["next_trigger_at", "paused_at"]
        names: dict[str, str] = {}
        values: dict[str, Any] = {":seen_version": {"N": str(before.version)}}
        sets: list[str] = []
        removes: list[str] = []
        for index, attribute in enumerate(owned):
            names[f"#a{index}"] = attribute
            if attribute in item:
                sets.append(f"#a{index} = :v{index}")
                values[f":v{index}"] = item[attribute]
            else:
                removes.append(f"#a{index}")
        for index, (attribute, value) in enumerate((extra_sets or {}).items()):
            names[f"#x{index}"] = attribute
            if value is None:
                removes.append(f"#x{index}")
            else:
                sets.append(f"#x{index} = :x{index}")
                values[f":x{index}"] = _serializer.serialize(value)
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": job_key(before.job_id),
                    "UpdateExpression": expression,
                    "ConditionExpression": "version = :seen_version",
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if before.name and before.is_live and (after.name != before.name or not after.is_live):
            items.append(self._release_name(before))
        if after.name and after.is_live and (after.name != before.name or not before.is_live):
            items.append(self._put_name(after))
        if trigger is not None:
            items.append({"Put": {"TableName": self.table, "Item": trigger_to_item(trigger)}})
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            stored = self.get_job(after.job_id)
            if (
                stored is not None
                and _api_view(stored) != _api_view(before)
                and _api_view(stored) == _api_view(after)
            ):
                return  # our own write, whose answer was lost and retried
            codes = _cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise ConflictError("version") from error
            raise ConflictError("name") from error

    def list_jobs(
        self, owner: str, *, limit: int, cursor: str | None, status: JobStatus | None, name: str | None
    ) -> tuple[list[Job], str | None]:
        """The owner's jobs, newest first, from the owner index (eventually consistent on AWS)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": GSI1,
            "KeyConditionExpression": "#gpk = :owner",
            "ExpressionAttributeNames": {"#gpk": GSI1_PK},
            "ExpressionAttributeValues": {":owner": {"S": f"OWNER#{owner}"}},
            "ScanIndexForward": False,
        }
        filters = []
        if status is not None:
            filters.append("#status = :status")
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
            kwargs["ExpressionAttributeValues"][":status"] = {"S": status.value}
        if name is not None:
            filters.append("#name = :name")
            kwargs["ExpressionAttributeNames"]["#name"] = "name"
            kwargs["ExpressionAttributeValues"][":name"] = {"S": name}
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        owner_key = f"OWNER#{owner}"
        return self._filtered_page(
            kwargs,
            limit,
            cursor,
            job_from_item,
            lambda key: (
                set(key) == {PK, SK, GSI1_PK, GSI1_SK}
                and key[GSI1_PK]["S"] == owner_key
                and key[PK]["S"].startswith("JOB#")
            ),
        )

    def _filtered_page(
        self,
        kwargs: dict[str, Any],
        limit: int,
        cursor: str | None,
        convert: Callable[[Mapping[str, Any]], T],
        belongs: Callable[[dict[str, Any]], bool],
    ) -> tuple[list[T], str | None]:
        """Read until ``limit`` matching items (a filter may drop items from a page) or the end.

        ``belongs`` checks that a cursor points into this very listing: DynamoDB refuses a start key
        from elsewhere, and a forged one must not read another owner's items.
        """
        start = decode_cursor(cursor)
        if start is not None and not belongs(start):
            raise BadCursorError("not a cursor of this listing")
        found: list[T] = []
        while True:
            if start:
                kwargs["ExclusiveStartKey"] = start
            kwargs["Limit"] = limit - len(found) if "FilterExpression" not in kwargs else max(limit, 25)
            response = self.client.query(**kwargs)
            for item in response.get("Items", []):
                found.append(convert(item))
                if len(found) == limit:
                    return found, encode_cursor(_key_of(item, kwargs.get("IndexName")))
            start = response.get("LastEvaluatedKey")
            if not start:
                return found, None

    def owner_jobs_summary(self, owner: str) -> tuple[dict[str, int], dict[str, int]]:
        """(jobs by status, runs by outcome) over all of an owner's jobs."""
        jobs: dict[str, int] = {}
        runs: dict[str, int] = {}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": GSI1,
            "KeyConditionExpression": "#gpk = :owner",
            "ExpressionAttributeNames": {"#gpk": GSI1_PK, "#status": "status", "#counts": "run_counts"},
            "ExpressionAttributeValues": {":owner": {"S": f"OWNER#{owner}"}},
            "ProjectionExpression": "#status, #counts",
        }
        while True:
            response = self.client.query(**kwargs)
            for item in response.get("Items", []):
                status = item["status"]["S"]
                jobs[status] = jobs.get(status, 0) + 1
                for outcome, count in item.get("run_counts", {}).get("M", {}).items():
                    runs[outcome] = runs.get(outcome, 0) + int(count["N"])
            last = response.get("LastEvaluatedKey")
            if not last:
                return jobs, runs
            kwargs["ExclusiveStartKey"] = last

    def get_job(self, job_id: str) -> Job | None:
        response = self.client.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=True)
        item = response.get("Item")
        return job_from_item(item) if item else None

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        response = self.client.get_item(
            TableName=self.table, Key=run_key(job_id, run_id), ConsistentRead=True
        )
        item = response.get("Item")
        return run_from_item(item) if item else None

    def get_run_and_job(self, job_id: str, run_id: str) -> tuple[Run | None, Job | None]:
        """Both in one round trip: the worker's first read."""
        keys = [run_key(job_id, run_id), job_key(job_id)]
        response = self.client.batch_get_item(
            RequestItems={self.table: {"Keys": keys, "ConsistentRead": True}}
        )
        run: Run | None = None
        job: Job | None = None
        for item in response.get("Responses", {}).get(self.table, []):
            if item[SK]["S"] == "JOB":
                job = job_from_item(item)
            else:
                run = run_from_item(item)
        unprocessed = response.get("UnprocessedKeys") or {}
        if unprocessed:
            # Throttled: fall back to single reads rather than report a missing item.
            return self.get_run(job_id, run_id), self.get_job(job_id)
        return run, job

    def list_runs(
        self, job_id: str, *, limit: int, cursor: str | None = None, status: RunStatus | None = None
    ) -> tuple[list[Run], str | None]:
        """A job's history, newest first (run ids sort by scheduled time)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": f"JOB#{job_id}"}, ":prefix": {"S": "RUN#"}},
            "ScanIndexForward": False,
        }
        if status is not None:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"] = {"#status": "status"}
            kwargs["ExpressionAttributeValues"][":status"] = {"S": status.value}
        return self._filtered_page(
            kwargs,
            limit,
            cursor,
            run_from_item,
            lambda key: (
                set(key) == {PK, SK} and key[PK]["S"] == f"JOB#{job_id}" and key[SK]["S"].startswith("RUN#")
            ),
        )

    def runs_before(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        """The runs scheduled just before ``run_id``, newest first (for the overlap policy)."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": {"S": f"JOB#{job_id}"},
                ":low": {"S": "RUN#"},
                ":high": {"S": f"RUN#{run_id}"},
            },
            ScanIndexForward=False,
            Limit=limit + 1,
            ConsistentRead=True,
        )
        runs = [run_from_item(item) for item in response.get("Items", [])]
        return [run for run in runs if run.run_id != run_id][:limit]

    # ---------------------------------------------------------------------------------- triggers

    def query_bucket(self, bucket: str, shard: int) -> list[Trigger]:
        triggers: list[Trigger] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": trigger_pk(bucket, shard)}},
            "ConsistentRead": True,
        }
        while True:
            response = self.client.query(**kwargs)
            triggers.extend(trigger_from_item(item, bucket, shard) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return triggers
            kwargs["ExclusiveStartKey"] = last

    def put_trigger(self, trigger: Trigger) -> None:
        self.client.put_item(TableName=self.table, Item=trigger_to_item(trigger))

    def claim(
        self,
        trigger: Trigger,
        job: Job,
        *,
        token: str,
        now: datetime,
        run: Run | None,
        next_trigger: Trigger | None,
        job_status: JobStatus | None = None,
    ) -> ClaimResult:
        """Claim a PENDING trigger: trigger, job, run and next occurrence in one transaction.

        ``run`` is the run item to create (QUEUED, or SKIPPED by the misfire policy); ``next_trigger``
        keeps a recurring job's chain going. The job condition (status and version) is what keeps a
        paused, changed or cancelled job's old triggers from firing.
        """
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": trigger_key(trigger),
                    "UpdateExpression": "SET #state = :claimed, claim_token = :token, claimed_at = :now",
                    "ConditionExpression": "#state = :pending",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": {
                        ":claimed": {"S": "CLAIMED"},
                        ":pending": {"S": "PENDING"},
                        ":token": {"S": token},
                        ":now": {"N": str(to_ms(now))},
                    },
                }
            },
            self._job_claim_update(trigger, job, next_trigger, job_status),
        ]
        if run is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": run_to_item(run, self._expiry(run.scheduled_for)),
                        # An occurrence runs once. A run of an older job version that never started
                        # (queued before a pause or a schedule change, or skipped for it) is replaced:
                        # resuming or rescheduling onto the same occurrence brings it back.
                        "ConditionExpression": (
                            "attribute_not_exists(pk)"
                            " OR (job_version < :version AND #run_status IN (:queued, :skipped))"
                        ),
                        "ExpressionAttributeNames": {"#run_status": "status"},
                        "ExpressionAttributeValues": {
                            ":queued": {"S": RunStatus.QUEUED.value},
                            ":skipped": {"S": RunStatus.SKIPPED.value},
                            ":version": {"N": str(run.job_version)},
                        },
                    }
                }
            )
        if next_trigger is not None:
            items.append({"Put": {"TableName": self.table, "Item": trigger_to_item(next_trigger)}})
        if job_status is not None and job.name:
            items.append(self._release_name(job))
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            codes = _cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                # Lost to another dispatcher, or our own claim took effect and only its answer was lost.
                return ClaimResult(claimed=self._claimed_by(trigger, token), stale=False)
            if "TransactionConflict" in codes:
                # Another transaction held one of the items (a concurrent claim of the same job's
                # other trigger): nothing was written, the trigger stays PENDING and the sweep's next
                # round of the bucket claims it.
                return ClaimResult(claimed=False, stale=False)
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                return ClaimResult(claimed=False, stale=True)
            if len(codes) > 2 and codes[2] == "ConditionalCheckFailed":
                # The run already exists: this occurrence was dispatched before (a PATCH wrote a
                # trigger for an occurrence already claimed). Never fire it twice.
                return ClaimResult(claimed=False, stale=True)
            raise
        return ClaimResult(claimed=True, stale=False)

    def _claimed_by(self, trigger: Trigger, token: str) -> bool:
        response = self.client.get_item(TableName=self.table, Key=trigger_key(trigger), ConsistentRead=True)
        item = response.get("Item")
        return item is not None and item.get("claim_token", {}).get("S") == token

    def _job_claim_update(
        self, trigger: Trigger, job: Job, next_trigger: Trigger | None, job_status: JobStatus | None
    ) -> TransactWriteItemTypeDef:
        names = {"#status": "status"}
        if trigger.kind is RunKind.MANUAL:
            # "Run now" fires even while the job is paused, but never for a cancelled job.
            return {
                "ConditionCheck": {
                    "TableName": self.table,
                    "Key": job_key(job.job_id),
                    "ConditionExpression": "#status <> :cancelled",
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": {":cancelled": {"S": JobStatus.CANCELLED.value}},
                }
            }
        values: dict[str, Any] = {":version": {"N": str(trigger.job_version)}}
        condition = "#status = :active AND version = :version"
        values[":active"] = {"S": JobStatus.ACTIVE.value}
        sets = []
        removes = []
        if next_trigger is not None:
            sets.append("next_trigger_at = :next")
            values[":next"] = {"N": str(to_ms(next_trigger.scheduled_for))}
        else:
            removes.append("next_trigger_at")
        if job_status is not None:
            sets.append("#status = :new_status")
            values[":new_status"] = {"S": job_status.value}
        expression = ""
        if sets:
            expression += "SET " + ", ".join(sets)
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        return {
            "Update": {
                "TableName": self.table,
                "Key": job_key(job.job_id),
                "UpdateExpression": expression.strip(),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def claim_trigger_only(self, trigger: Trigger, *, token: str, now: datetime) -> bool:
        """Claim a trigger whose run already exists: a retry wake-up, or a CLAIMED trigger whose
        dispatcher died before sending it (after ``claim_timeout``)."""
        values: dict[str, Any] = {
            ":token": {"S": token},
            ":now": {"N": str(to_ms(now))},
            ":seen_state": {"S": trigger.state},
            ":claimed": {"S": "CLAIMED"},
        }
        condition = "#state = :seen_state"
        if trigger.state == "CLAIMED":
            condition += " AND claim_token = :old"
            values[":old"] = {"S": trigger.claim_token or ""}
        try:
            self.client.update_item(
                TableName=self.table,
                Key=trigger_key(trigger),
                UpdateExpression="SET #state = :claimed, claim_token = :token, claimed_at = :now",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def delete_trigger(self, trigger: Trigger) -> None:
        self.client.delete_item(TableName=self.table, Key=trigger_key(trigger))

    def delete_triggers(self, triggers: Iterable[Trigger]) -> None:
        """Unconditional deletes, batched: only called for triggers whose message was sent."""
        pending = [{"DeleteRequest": {"Key": trigger_key(t)}} for t in triggers]
        for chunk in _chunks(pending, 25):
            request: dict[str, Any] = {self.table: chunk}
            while request:
                response = self.client.batch_write_item(RequestItems=request)
                request = response.get("UnprocessedItems") or {}

    # ----------------------------------------------------------------------------------- cursors

    def get_cursor(self, shard: int) -> str | None:
        response = self.client.get_item(TableName=self.table, Key=cursor_key(shard), ConsistentRead=True)
        item = response.get("Item")
        return item["bucket"]["S"] if item else None

    def advance_cursor(self, shard: int, old: str | None, new: str) -> bool:
        """Move the cursor forward; a concurrent dispatcher that moved it already wins."""
        try:
            self.client.put_item(
                TableName=self.table,
                Item={**cursor_key(shard), "bucket": {"S": new}},
                ConditionExpression="attribute_not_exists(pk) OR #bucket < :new",
                ExpressionAttributeNames={"#bucket": "bucket"},
                ExpressionAttributeValues={":new": {"S": new}},
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def oldest_cursor(self, shards: Iterable[int]) -> str | None:
        keys = [cursor_key(shard) for shard in shards]
        buckets: list[str] = []
        for chunk in _chunks(keys, 100):
            response = self.client.batch_get_item(RequestItems={self.table: {"Keys": chunk}})
            buckets.extend(item["bucket"]["S"] for item in response.get("Responses", {}).get(self.table, []))
        return min(buckets) if buckets else None

    # -------------------------------------------------------------------------------------- runs

    def start_attempt(self, run: Run, *, token: str, now: datetime, lease_until: datetime) -> Run:
        """Start the next attempt, or take over one whose worker died: exactly one caller wins.

        The condition pins the status, attempt count and lease we read, so a duplicate delivery or a
        second worker finds it false and does nothing.
        """
        takeover = run.status is RunStatus.RUNNING
        attempt = run.attempt if takeover else run.attempt + 1
        started_at = run.started_at or now
        lateness_ms = (
            run.lateness_ms if run.lateness_ms is not None else to_ms(now) - to_ms(run.scheduled_for)
        )
        values: dict[str, Any] = {
            ":running": {"S": RunStatus.RUNNING.value},
            ":seen_status": {"S": run.status.value},
            ":seen_attempt": {"N": str(run.attempt)},
            ":attempt": {"N": str(attempt)},
            ":token": {"S": token},
            ":lease": {"N": str(to_ms(lease_until))},
            ":started": {"N": str(to_ms(started_at))},
            ":lateness": {"N": str(lateness_ms)},
            ":one": {"N": "1"},
        }
        condition = "#status = :seen_status AND attempt = :seen_attempt"
        if takeover:
            condition += " AND lease_until = :seen_lease"
            values[":seen_lease"] = {"N": str(_ms(run.lease_until))}
        try:
            self.client.update_item(
                TableName=self.table,
                Key=run_key(run.job_id, run.run_id),
                UpdateExpression=(
                    "SET #status = :running, attempt = :attempt, lease_token = :token, lease_until = :lease,"
                    " started_at = :started, lateness_ms = :lateness ADD executions :one"
                ),
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConflictError(f"run {run.run_id} was started by someone else") from error
            raise
        return replace(
            run,
            status=RunStatus.RUNNING,
            attempt=attempt,
            lease_token=token,
            lease_until=lease_until,
            started_at=started_at,
            lateness_ms=lateness_ms,
            executions=run.executions + 1,
        )

    def renew_lease(self, run: Run, lease_until: datetime) -> bool:
        try:
            self.client.update_item(
                TableName=self.table,
                Key=run_key(run.job_id, run.run_id),
                UpdateExpression="SET lease_until = :lease",
                ConditionExpression="lease_token = :token AND #status = :running",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":lease": {"N": str(to_ms(lease_until))},
                    ":token": {"S": run.lease_token or ""},
                    ":running": {"S": RunStatus.RUNNING.value},
                },
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def finish_attempt(
        self,
        run: Run,
        attempt: Attempt,
        *,
        status: RunStatus,
        now: datetime,
        next_attempt_at: datetime | None = None,
        retry_trigger: Trigger | None = None,
        job_status: JobStatus | None = None,
        job: Job | None = None,
    ) -> None:
        """Record an attempt's outcome, guarded by our lease token, with the job's summary.

        ``job_status`` ends a one-off job with its run (and frees its name: ``job`` is then required).
        """
        terminal = status.is_terminal
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":token": {"S": run.lease_token or ""},
            ":running": {"S": RunStatus.RUNNING.value},
            ":attempt": {"L": [{"S": json.dumps(attempt.to_dict())}]},
            ":empty": {"L": []},
        }
        sets = ["#status = :status", "attempts = list_append(if_not_exists(attempts, :empty), :attempt)"]
        removes = ["lease_until", "lease_token"]
        if attempt.error:
            sets.append("#error = :error")
            values[":error"] = {"S": attempt.error}
        else:
            removes.append("#error")
        if terminal:
            sets.append("finished_at = :finished")
            values[":finished"] = {"N": str(to_ms(now))}
            sets.append(f"{TTL_ATTRIBUTE} = :expires")
            values[":expires"] = {"N": str(int(self._expiry(now).timestamp()))}
        if next_attempt_at is not None:
            sets.append("next_attempt_at = :next")
            values[":next"] = {"N": str(to_ms(next_attempt_at))}
        expression = "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes)
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": run_key(run.job_id, run.run_id),
                    "UpdateExpression": expression,
                    "ConditionExpression": "lease_token = :token AND #status = :running",
                    "ExpressionAttributeNames": {"#status": "status", "#error": "error"},
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if terminal:
            items.append(self._job_outcome_update(run, status, now, attempt, job_status))
        if job_status is not None and job is not None and job.name:
            items.append(self._release_name(job))
        if retry_trigger is not None:
            items.append({"Put": {"TableName": self.table, "Item": trigger_to_item(retry_trigger)}})
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response["Error"]["Code"] == "TransactionCanceledException":
                stored = self.get_run(run.job_id, run.run_id)
                if (
                    stored is not None
                    and stored.status is status
                    and stored.attempts
                    and stored.attempts[-1] == attempt
                ):
                    return  # our own write, whose answer was lost and retried
                raise ConflictError(f"run {run.run_id} is no longer ours to finish") from error
            raise

    def _job_outcome_update(
        self, run: Run, status: RunStatus, now: datetime, attempt: Attempt, job_status: JobStatus | None
    ) -> TransactWriteItemTypeDef:
        summary = {
            "run_id": run.run_id,
            "status": status.value,
            "scheduled_for": to_ms(run.scheduled_for),
            "finished_at": to_ms(now),
            "lateness_ms": run.lateness_ms,
            "attempt": run.attempt,
            "error": attempt.error,
        }
        values: dict[str, Any] = {
            ":summary": {"S": json.dumps(summary)},
            ":one": {"N": "1"},
            ":finished": {"N": str(to_ms(now))},
        }
        sets = ["last_run = :summary", "updated_at = :finished"]
        condition = "attribute_exists(pk)"
        if job_status is not None:
            # A one-off job follows its run, unless it was cancelled meanwhile.
            sets.append("#status = :job_status")
            values[":job_status"] = {"S": job_status.value}
            values[":cancelled"] = {"S": JobStatus.CANCELLED.value}
            condition = "attribute_exists(pk) AND #status <> :cancelled"
        return {
            "Update": {
                "TableName": self.table,
                "Key": job_key(run.job_id),
                "UpdateExpression": "SET " + ", ".join(sets) + " ADD run_counts.#outcome :one",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {
                    "#outcome": status.value,
                    **({"#status": "status"} if job_status else {}),
                },
                "ExpressionAttributeValues": values,
            }
        }

    def mark_run(self, run: Run, status: RunStatus, *, now: datetime, error: str | None) -> bool:
        """Finish a run that never started an attempt (cancelled, skipped): guarded by its status."""
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":seen": {"S": run.status.value},
            ":seen_version": {"N": str(run.job_version)},
            ":now": {"N": str(to_ms(now))},
            ":expires": {"N": str(int(self._expiry(now).timestamp()))},
        }
        sets = ["#status = :status", "finished_at = :now", f"{TTL_ATTRIBUTE} = :expires"]
        if error:
            sets.append("#error = :error")
            values[":error"] = {"S": error}
        try:
            self.client.update_item(
                TableName=self.table,
                Key=run_key(run.job_id, run.run_id),
                UpdateExpression="SET " + ", ".join(sets),
                # The version pins the run we read: a resume may have replaced it with a newer one.
                ConditionExpression="#status = :seen AND job_version = :seen_version",
                ExpressionAttributeNames={"#status": "status", **({"#error": "error"} if error else {})},
                ExpressionAttributeValues=values,
            )
        except ClientError as error_:
            if error_.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _expiry(self, moment: datetime) -> datetime:
        return moment + self.run_retention


def _api_view(job: Job) -> Job:
    """A job without the fields the dispatcher and worker maintain (compare what the API writes)."""
    return replace(job, next_trigger_at=None, last_run=None, run_counts={})


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

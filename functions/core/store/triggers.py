"""Triggers and cursors: the minute buckets the dispatcher sweeps, the claim, and each shard's cursor.

The claim is the one write that spans the table: trigger, job, run and next occurrence in one
transaction (docs/architecture.md, "Claim → dispatch → execute").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from functions.core.model import Job, JobStatus, Run, RunKind, RunStatus, Trigger, TriggerState, to_ms
from functions.core.ports import ClaimResult
from functions.core.store.base import TableBase, chunks
from functions.core.store.items import run_to_item, trigger_from_item, trigger_to_item
from functions.core.store.jobs import put_trigger_item, release_name
from functions.core.store.keys import cursor_key, job_key, trigger_key, trigger_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

# Positions of the claim transaction's items (their cancellation codes come in this order).
_TRIGGER, _JOB, _RUN = 0, 1, 2


class TriggerTable(TableBase):
    def query_bucket(self, bucket: str, shard: int) -> list[Trigger]:
        triggers: list[Trigger] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": trigger_pk(bucket, shard)}},
            "ConsistentRead": True,
        }
        while True:
            response = self.client.query(**request)
            triggers.extend(trigger_from_item(item, bucket, shard) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return triggers
            request["ExclusiveStartKey"] = last

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
                        ":claimed": {"S": TriggerState.CLAIMED.value},
                        ":pending": {"S": TriggerState.PENDING.value},
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
                        "Item": run_to_item(run, self.expiry(run.scheduled_for)),
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
            items.append(put_trigger_item(self.table, next_trigger))
        if job_status is not None and job.name:
            items.append(release_name(self.table, job))
        refused = self.transact(items)
        if refused is None:
            return ClaimResult.CLAIMED
        if refused.failed(_TRIGGER):
            # Lost to another dispatcher, or our own claim took effect and only its answer was lost.
            if self.landed(lambda: self._claim_token(trigger), lambda stored: stored == token):
                return ClaimResult.CLAIMED
            return ClaimResult.LOST
        if refused.conflicted:
            # Another transaction held one of the items (a concurrent claim of the same job's other
            # trigger): nothing was written, the trigger stays PENDING and the sweep's next round of
            # the bucket claims it.
            return ClaimResult.LOST
        if refused.failed(_JOB):
            return ClaimResult.STALE
        if run is not None and refused.failed(_RUN):
            # The run already exists: this occurrence was dispatched before (a PATCH wrote a trigger
            # for an occurrence already claimed). Never fire it twice.
            return ClaimResult.STALE
        raise refused.error

    def _claim_token(self, trigger: Trigger) -> str | None:
        response = self.client.get_item(TableName=self.table, Key=trigger_key(trigger), ConsistentRead=True)
        item = response.get("Item")
        return item.get("claim_token", {}).get("S") if item is not None else None

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
        values: dict[str, Any] = {
            ":version": {"N": str(trigger.job_version)},
            ":active": {"S": JobStatus.ACTIVE.value},
        }
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
                "ConditionExpression": "#status = :active AND version = :version",
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
            ":seen_state": {"S": trigger.state.value},
            ":claimed": {"S": TriggerState.CLAIMED.value},
        }
        condition = "#state = :seen_state"
        if trigger.state is TriggerState.CLAIMED:
            condition += " AND claim_token = :old"
            values[":old"] = {"S": trigger.claim_token or ""}
        return self.conditional(
            self.client.update_item,
            Key=trigger_key(trigger),
            UpdateExpression="SET #state = :claimed, claim_token = :token, claimed_at = :now",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=values,
        )

    def delete_trigger(self, trigger: Trigger) -> None:
        self.client.delete_item(TableName=self.table, Key=trigger_key(trigger))

    def delete_triggers(self, triggers: Iterable[Trigger]) -> None:
        """Unconditional deletes, batched: only called for triggers whose message was sent."""
        pending = [{"DeleteRequest": {"Key": trigger_key(t)}} for t in triggers]
        for chunk in chunks(pending, 25):
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
        return self.conditional(
            self.client.put_item,
            Item={**cursor_key(shard), "bucket": {"S": new}},
            ConditionExpression="attribute_not_exists(pk) OR #bucket < :new",
            ExpressionAttributeNames={"#bucket": "bucket"},
            ExpressionAttributeValues={":new": {"S": new}},
        )

    def oldest_cursor(self, shards: Iterable[int]) -> str | None:
        keys = [cursor_key(shard) for shard in shards]
        buckets: list[str] = []
        for chunk in chunks(keys, 100):
            response = self.client.batch_get_item(RequestItems={self.table: {"Keys": chunk}})
            buckets.extend(item["bucket"]["S"] for item in response.get("Responses", {}).get(self.table, []))
        return min(buckets) if buckets else None

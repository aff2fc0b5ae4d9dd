"""Triggers and cursors: the minute buckets the dispatcher sweeps, and each shard's cursor.

An occurrence's trigger is written once and left in place: it counts as dispatched once its run
exists, and expires by TTL (docs/architecture.md, "The write path"). Only a retry wake-up is claimed
and deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from punctual_functions.core.frontier import Frontier, ms_up
from punctual_functions.core.model import Trigger, TriggerState, from_ms, to_ms
from punctual_functions.core.ports import ShardState
from punctual_functions.core.store.base import TableBase, chunks
from punctual_functions.core.store.items import EMBEDDED_TRIGGER, trigger_from_item, trigger_to_item
from punctual_functions.core.store.keys import cursor_key, trigger_key, trigger_pk

if TYPE_CHECKING:
    pass


class TriggerTable(TableBase):
    def query_bucket(self, bucket: str, shard: int, *, consistent: bool = True) -> list[Trigger]:
        triggers: list[Trigger] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": trigger_pk(bucket, shard)}},
            "ConsistentRead": consistent,
        }
        while True:
            response = self.client.query(**request)
            for item in response.get("Items", []):
                trigger = trigger_from_item(item, bucket, shard)
                if trigger is not None:
                    triggers.append(trigger)
            last = response.get("LastEvaluatedKey")
            if not last:
                return triggers
            request["ExclusiveStartKey"] = last

    def put_trigger(self, trigger: Trigger) -> None:
        self.client.put_item(TableName=self.table, Item=trigger_to_item(trigger))

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
        if not trigger.embedded:
            self.client.delete_item(TableName=self.table, Key=trigger_key(trigger))
            return
        # A one-off job's own trigger: the map goes, the job stays (and an item gone stays gone).
        self.conditional(
            self.client.update_item,
            Key=trigger_key(trigger),
            UpdateExpression="REMOVE #trigger",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#trigger": EMBEDDED_TRIGGER},
        )

    def get_cursor(self, shard: int) -> str | None:
        response = self.client.get_item(TableName=self.table, Key=cursor_key(shard), ConsistentRead=True)
        bucket = response.get("Item", {}).get("bucket")  # a held shard's item may have none yet
        return bucket["S"] if bucket else None

    def hold_shard(self, shard: int, *, token: str, now: datetime, until: datetime) -> ShardState:
        """The cursor item carries the hold and the frontier: one conditional update takes the hold
        and reads them back."""
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=cursor_key(shard),
                UpdateExpression="SET #until = :until, #holder = :token, taken_by = :token",
                ConditionExpression="attribute_not_exists(#until) OR #until <= :now OR #holder = :token",
                ExpressionAttributeNames={"#until": "held_until", "#holder": "holder"},
                ExpressionAttributeValues={
                    ":until": {"N": str(to_ms(until))},
                    ":now": {"N": str(to_ms(now))},
                    ":token": {"S": token},
                },
                ReturnValues="ALL_OLD",  # nothing read is changed by the update but the hold
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return ShardState(False)
            raise
        item = response.get("Attributes", {})
        bucket = item.get("bucket")  # a held shard's item may have none yet
        frontier = None
        if all(name in item for name in ("swept_until", "swept_read_at", "swept_horizon")):
            frontier = Frontier(
                until=from_ms(int(item["swept_until"]["N"])),
                read_at=from_ms(int(item["swept_read_at"]["N"])),
                horizon=from_ms(int(item["swept_horizon"]["N"])),
            )
        # Clean: the last sweep to take the shard released it and left the frontier.
        last = item.get("taken_by", {}).get("S")
        clean = "holder" not in item and last is not None and last == item.get("swept_by", {}).get("S")
        return ShardState(True, bucket["S"] if bucket else None, frontier, clean)

    def release_shard(self, shard: int, *, token: str, frontier: Frontier | None = None) -> None:
        update = "REMOVE #until, #holder"
        values: dict[str, Any] = {":token": {"S": token}}
        if frontier is not None:
            update = (
                "SET swept_until = :swept_until, swept_read_at = :swept_read_at,"
                f" swept_horizon = :swept_horizon, swept_by = :token {update}"
            )
            values[":swept_until"] = {"N": str(to_ms(frontier.until))}
            values[":swept_read_at"] = {"N": str(to_ms(frontier.read_at))}
            values[":swept_horizon"] = {"N": str(ms_up(frontier.horizon))}
        self.conditional(
            self.client.update_item,
            Key=cursor_key(shard),
            UpdateExpression=update,
            ConditionExpression="#holder = :token",
            ExpressionAttributeNames={"#until": "held_until", "#holder": "holder"},
            ExpressionAttributeValues=values,
        )

    def advance_cursor(self, shard: int, old: str | None, new: str) -> bool:
        """Move the cursor forward (an update: a sweep's hold on the item stays); a concurrent
        dispatcher that moved it already wins."""
        return self.conditional(
            self.client.update_item,
            Key=cursor_key(shard),
            UpdateExpression="SET #bucket = :new",
            ConditionExpression="attribute_not_exists(#bucket) OR #bucket < :new",
            ExpressionAttributeNames={"#bucket": "bucket"},
            ExpressionAttributeValues={":new": {"S": new}},
        )

    def oldest_cursor(self, shards: Iterable[int]) -> str | None:
        keys = [cursor_key(shard) for shard in shards]
        buckets: list[str] = []
        for chunk in chunks(keys, 100):
            response = self.client.batch_get_item(RequestItems={self.table: {"Keys": chunk}})
            items = response.get("Responses", {}).get(self.table, [])
            buckets.extend(item["bucket"]["S"] for item in items if "bucket" in item)
        return min(buckets) if buckets else None

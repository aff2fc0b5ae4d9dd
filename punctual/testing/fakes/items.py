"""What the in-memory store's parts share: items as DynamoDB gives them back, the trigger items by
partition, and a listing's page as a query reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from punctual_functions.core.model import Job, Run, Trigger, from_ms, to_ms
from punctual_functions.core.ports import BadCursorError, PageFull
from punctual_functions.core.resources import GSI1_PK, GSI1_SK, PK, SK
from punctual_functions.core.store.items import run_from_item, run_to_item, trigger_from_item, trigger_to_item
from punctual_functions.core.store.keys import job_key, owner_index_pk
from punctual_functions.core.store.pages import decode_cursor, encode_cursor

T = TypeVar("T")
TriggerKey = tuple[str, int, str]  # bucket, shard, sort key


def ms(moment: datetime) -> datetime:
    return from_ms(to_ms(moment))


def stored_run(run: Run) -> Run:
    """As read back: the item conversion leaves out the lease, which only updates write."""
    return replace(
        run_from_item(run_to_item(run, run.scheduled_for)),
        lease_until=ms(run.lease_until) if run.lease_until else None,
        lease_token=run.lease_token,
    )


def stored_trigger(trigger: Trigger) -> Trigger:
    stored = trigger_from_item(trigger_to_item(trigger), trigger.bucket, trigger.shard)
    assert stored is not None  # a trigger item always holds its trigger
    return stored


class Triggers(dict[TriggerKey, Trigger]):
    """The trigger items, with each partition's keys at hand: a bucket's query reads its partition,
    not the table (the simulator's table holds hundreds of thousands)."""

    def __init__(self) -> None:
        super().__init__()
        self.partitions: dict[tuple[str, int], set[TriggerKey]] = {}

    def __setitem__(self, key: TriggerKey, trigger: Trigger) -> None:
        super().__setitem__(key, trigger)
        self.partitions.setdefault(key[:2], set()).add(key)

    def pop(self, key: TriggerKey, *default: Any) -> Any:
        if key in self:
            self.partitions[key[:2]].discard(key)
        return super().pop(key, *default)

    def in_partition(self, bucket: str, shard: int) -> list[Trigger]:
        return [self[key] for key in sorted(self.partitions.get((bucket, shard), ()))]


def trigger_key(trigger: Trigger) -> TriggerKey:
    return trigger.bucket, trigger.shard, f"{to_ms(trigger.fire_at):013d}#{trigger.run_id}"


def job_index_key(job: Job) -> dict[str, Any]:
    return {
        **job_key(job.job_id),
        GSI1_PK: {"S": owner_index_pk(job.owner)},
        GSI1_SK: {"S": f"{to_ms(job.created_at):013d}#{job.job_id}"},
    }


def run_index_key(run: Run) -> dict[str, Any]:
    return {PK: {"S": f"JOB#{run.job_id}"}, SK: {"S": f"RUN#{run.run_id}"}}


def page(
    items: list[T],
    key_of: Any,
    matches: Any,
    limit: int,
    cursor: str | None,
    belongs: Any,
    sort_attribute: str,
    *,
    descending: bool,
) -> tuple[list[T], str | None]:
    """A listing page as DynamoDB's query gives it: from just past the cursor's key, ``limit``
    matching items, and a cursor when the page filled up (even if nothing follows)."""
    start: Mapping[str, Any] | None = decode_cursor(cursor)
    if start is not None and not belongs(start):
        raise BadCursorError("not a cursor of this listing")
    if start is not None:
        boundary = start[sort_attribute]["S"]

        def after_cursor(item: T) -> bool:
            position = key_of(item)[sort_attribute]["S"]
            return bool(position < boundary if descending else position > boundary)

        items = [item for item in items if after_cursor(item)]
    found: list[T] = []
    for item in items:  # one at a time, as a query stops
        try:
            if not matches(item):
                continue
        except PageFull:
            if found:
                return found, encode_cursor(key_of(found[-1]))
        found.append(item)
        if len(found) == limit:
            return found, encode_cursor(key_of(item))
    return found, None

"""The table's keys: every item's partition and sort key (docs/architecture.md, "The table")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from punctual_functions.core.model import Trigger, home_of, to_ms
from punctual_functions.core.resources import GSI1, GSI1_PK, GSI1_SK, PK, SK


def job_key(job_id: str) -> dict[str, Any]:
    """``JOB#<id>``, or for a one-off job whose id names a home, its place among the triggers of its
    due minute (the item is its own first trigger: docs/architecture.md, "The table")."""
    home = home_of(job_id)
    if home is not None:
        return {PK: {"S": trigger_pk(*home)}, SK: {"S": f"JOB#{job_id}"}}
    return {PK: {"S": f"JOB#{job_id}"}, SK: {"S": "JOB"}}


def run_key(job_id: str, run_id: str) -> dict[str, Any]:
    return {PK: {"S": f"JOB#{job_id}"}, SK: {"S": f"RUN#{run_id}"}}


def name_key(owner: str, name: str) -> dict[str, Any]:
    return {PK: {"S": f"NAME#{owner}#{name}"}, SK: {"S": "NAME"}}


def trigger_pk(bucket: str, shard: int) -> str:
    return f"T#{bucket}#{shard:03d}"


def trigger_key(trigger: Trigger) -> dict[str, Any]:
    """The item holding ``trigger``: its own, or for an embedded one its job's."""
    if trigger.embedded:
        return job_key(trigger.job_id)
    return {
        PK: {"S": trigger_pk(trigger.bucket, trigger.shard)},
        SK: {"S": f"{to_ms(trigger.fire_at):013d}#{trigger.run_id}"},
    }


def idempotency_key(owner: str, key: str) -> dict[str, Any]:
    return {PK: {"S": f"IDEMPOTENCY#{owner}#{key}"}, SK: {"S": "IDEMPOTENCY"}}


def cursor_key(shard: int) -> dict[str, Any]:
    return {PK: {"S": f"CURSOR#{shard:03d}"}, SK: {"S": "CURSOR"}}


def calendar_pk(owner: str) -> str:
    """The partition of an owner's calendars: all of them, read with one ``Query``."""
    return f"CAL#{owner}"


def calendar_key(owner: str, name: str) -> dict[str, Any]:
    return {PK: {"S": calendar_pk(owner)}, SK: {"S": name}}


def owner_index_pk(owner: str) -> str:
    return f"OWNER#{owner}"


def key_of(item: Mapping[str, Any], index: str | None) -> dict[str, Any]:
    """The pagination key of an item (with the index keys when reading an index)."""
    names = [PK, SK] + ([GSI1_PK, GSI1_SK] if index == GSI1 else [])
    return {name: item[name] for name in names}


def in_job_listing(owner: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a listing cursor (an item key) points into ``owner``'s job listing (the owner index)."""
    owner_key = owner_index_pk(owner)

    def belongs(key: Mapping[str, Any]) -> bool:
        return (
            set(key) == {PK, SK, GSI1_PK, GSI1_SK}
            and key[GSI1_PK]["S"] == owner_key
            and (key[PK]["S"].startswith("JOB#") or key[SK]["S"].startswith("JOB#"))
        )

    return belongs


def in_run_listing(job_id: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a listing cursor (an item key) points into the history of ``job_id``."""

    def belongs(key: Mapping[str, Any]) -> bool:
        return set(key) == {PK, SK} and key[PK]["S"] == f"JOB#{job_id}" and key[SK]["S"].startswith("RUN#")

    return belongs


def allowed_targets_key() -> dict[str, Any]:
    """The deployment's allow-list of AWS targets: one item, written at deploy time."""
    return {PK: {"S": "DEPLOYMENT"}, SK: {"S": "ALLOWED_TARGETS"}}


def delivery_rights_key() -> dict[str, Any]:
    """The deployment's delivery rights (which owners may deliver where): one item, written at deploy
    time."""
    return {PK: {"S": "DEPLOYMENT"}, SK: {"S": "DELIVERY_RIGHTS"}}

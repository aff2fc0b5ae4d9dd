"""The audit trail's items: a job's changes in its own partition, ``CHANGE#<revision>#<at ms>#<id>``
(docs/architecture.md, "The audit trail"). Put once (never updated: the condition refuses a second
write of one key), read newest first, expired by TTL after the deployment's retention."""

from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from punctual_functions.core.model import from_ms, to_ms
from punctual_functions.core.resources import PK, SK, TTL_ATTRIBUTE
from punctual_functions.core.store.base import TableBase
from punctual_functions.core.store.items import from_attributes, to_attributes
from punctual_functions.core.store.pages import read_page
from punctual_functions.core.trail import REVISION_DIGITS, Change, ChangeAction

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

CHANGE_PREFIX = "CHANGE#"


def change_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def revision_prefix(revision: int) -> str:
    return f"{CHANGE_PREFIX}{revision:0{REVISION_DIGITS}d}#"


def change_sk(change: Change) -> str:
    """Its revision first; then 0 for the change that made the revision, 1 for the actions at it
    (run now, backfill), which come after it; then its time; then a suffix of its own (two
    run-nows in one millisecond)."""
    suffix = change.request_id[-12:] if change.request_id else uuid.uuid4().hex[:12]
    kind = 0 if change.makes_revision else 1
    return f"{revision_prefix(change.revision)}{kind}#{to_ms(change.at):013d}#{suffix}"


def change_to_item(change: Change, expires_at: datetime) -> dict[str, Any]:
    return to_attributes(
        {
            PK: change_pk(change.job_id),
            SK: change_sk(change),
            "type": "change",
            "job_id": change.job_id,
            "revision": change.revision,
            "at": to_ms(change.at),
            "action": change.action.value,
            "by": change.by,
            "request_id": change.request_id,
            "note": change.note,
            "diff": _packed(change.diff) if change.diff else None,
            "before": _packed(change.before) if change.before is not None else None,
            "details": json.dumps(change.details, separators=(",", ":")) if change.details else None,
            TTL_ATTRIBUTE: int(expires_at.timestamp()),
        }
    )


def item_to_change(item: Mapping[str, Any]) -> Change:
    data = from_attributes(item)
    return Change(
        job_id=str(data["job_id"]),
        revision=int(data["revision"]),
        at=from_ms(int(data["at"])),
        action=ChangeAction(str(data["action"])),
        by=str(data["by"]),
        request_id=str(data.get("request_id") or ""),
        note=data.get("note"),
        diff=_unpacked(data["diff"]) if data.get("diff") else {},
        before=_unpacked(data["before"]) if data.get("before") else None,
        details=json.loads(data["details"]) if data.get("details") else {},
    )


def _packed(value: Any) -> bytes:
    """JSON, compressed: a definition and its diff are most of a record, and compressed a typical one
    fits in one write unit (1 KB) with the rest of it."""
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 9)


def _unpacked(stored: Any) -> Any:
    raw = stored.value if hasattr(stored, "value") else stored  # boto3's Binary, or bytes
    return json.loads(zlib.decompress(bytes(raw)))


def put_change_item(table: str, change: Change, expires_at: datetime) -> TransactWriteItemTypeDef:
    """The change as one item of a transaction: written once, never over another."""
    return {
        "Put": {
            "TableName": table,
            "Item": change_to_item(change, expires_at),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


class TrailTable(TableBase):
    audit_retention = timedelta(days=365)

    def trail_expiry(self, change: Change) -> datetime:
        return change.at + self.audit_retention

    def put_change(self, change: Change) -> None:
        """Record a change made apart from a write of its job (a create, before its job; a run now or
        a backfill, after its runs). A retry of a lost answer finds its own item: nothing to do."""
        self.conditional(
            self.client.put_item,
            **_without_table(put_change_item(self.table, change, self.trail_expiry(change))),
        )

    def list_changes(self, job_id: str, limit: int, cursor: str | None) -> tuple[list[Change], str | None]:
        """A job's changes, newest first."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": change_pk(job_id)}, ":prefix": {"S": CHANGE_PREFIX}},
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }

        def belongs(key: dict[str, Any]) -> bool:
            return (
                set(key) == {PK, SK}
                and key[PK]["S"] == change_pk(job_id)
                and key[SK]["S"].startswith(CHANGE_PREFIX)
            )

        return read_page(self.client.query, request, limit, cursor, item_to_change, belongs)

    def revision_changes(self, job_id: str, revision: int) -> list[Change]:
        """The changes that made ``revision`` and the next one (the next keeps the definition
        ``revision`` had), those still kept: one ``Query`` over both revisions' keys."""
        answer = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": {"S": change_pk(job_id)},
                ":low": {"S": revision_prefix(revision)},
                ":high": {"S": revision_prefix(revision + 1) + "0#~"},
            },
            ConsistentRead=True,
        )
        changes = (item_to_change(item) for item in answer.get("Items", []))
        return [change for change in changes if change.makes_revision]


def _without_table(item: TransactWriteItemTypeDef) -> dict[str, Any]:
    return {key: value for key, value in item["Put"].items() if key != "TableName"}

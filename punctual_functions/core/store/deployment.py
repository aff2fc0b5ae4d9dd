"""The deployment's allow-list of AWS targets and its delivery rights, each in one item of the table.

``PK = DEPLOYMENT`` (docs/architecture.md, "The table"). ``SK = ALLOWED_TARGETS``, attribute
``patterns``: the ARN patterns joined with commas (no ARN holds a comma). ``SK = DELIVERY_RIGHTS``,
attribute ``rights``: the rights as JSON (``core/rights.py``). The deployment writes them (the CDK
stack's custom resources, the local stack's provisioning) and the API and the worker read them: a
list of hundreds of targets does not fit Lambda's 4 KB of environment variables, an item holds 400 KB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from punctual_functions.core.rights import DeliveryRights
from punctual_functions.core.store.base import TableBase
from punctual_functions.core.store.keys import allowed_targets_key, delivery_rights_key

PATTERNS_ATTRIBUTE: Final = "patterns"
RIGHTS_ATTRIBUTE: Final = "rights"


def allowed_targets_item(joined_patterns: str) -> dict[str, Any]:
    """The item, from the patterns joined with commas (the CDK stack's is a string resolved at deploy
    time, so the joining is the caller's)."""
    return {**allowed_targets_key(), PATTERNS_ATTRIBUTE: {"S": joined_patterns}}


def patterns_of(item: dict[str, Any] | None) -> tuple[str, ...]:
    if item is None:
        return ()
    joined = str(item.get(PATTERNS_ATTRIBUTE, {}).get("S", ""))
    return tuple(dict.fromkeys(part.strip() for part in joined.split(",") if part.strip()))


def delivery_rights_item(rights_json: str) -> dict[str, Any]:
    """The rights' item, from their JSON (the CDK stack's is a string resolved at deploy time)."""
    return {**delivery_rights_key(), RIGHTS_ATTRIBUTE: {"S": rights_json}}


def rights_of(item: dict[str, Any] | None) -> DeliveryRights:
    """The rights an item holds; none if it was never written."""
    if item is None:
        return DeliveryRights()
    return DeliveryRights.from_json(str(item.get(RIGHTS_ATTRIBUTE, {}).get("S", "")))


class DeploymentTable(TableBase):
    def allowed_targets(self) -> tuple[str, ...]:
        answer = self.client.get_item(TableName=self.table, Key=allowed_targets_key(), ConsistentRead=True)
        return patterns_of(answer.get("Item"))

    def put_allowed_targets(self, patterns: Sequence[str]) -> None:
        self.client.put_item(TableName=self.table, Item=allowed_targets_item(",".join(patterns)))

    def delivery_rights(self) -> DeliveryRights:
        answer = self.client.get_item(TableName=self.table, Key=delivery_rights_key(), ConsistentRead=True)
        return rights_of(answer.get("Item"))

    def put_delivery_rights(self, rights: DeliveryRights) -> None:
        self.client.put_item(TableName=self.table, Item=delivery_rights_item(rights.to_json()))

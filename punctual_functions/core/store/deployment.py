"""The deployment's allow-list of AWS targets, in one item of the table.

``PK = DEPLOYMENT``, ``SK = ALLOWED_TARGETS`` (docs/architecture.md, "The table"), attribute
``patterns``: the ARN patterns joined with commas (no ARN holds a comma). The deployment writes it
(the CDK stack's custom resource, the local stack's provisioning) and the API reads it: a list of
hundreds of targets does not fit Lambda's 4 KB of environment variables, an item holds 400 KB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from punctual_functions.core.store.base import TableBase
from punctual_functions.core.store.keys import allowed_targets_key

PATTERNS_ATTRIBUTE: Final = "patterns"


def allowed_targets_item(joined_patterns: str) -> dict[str, Any]:
    """The item, from the patterns joined with commas (the CDK stack's is a string resolved at deploy
    time, so the joining is the caller's)."""
    return {**allowed_targets_key(), PATTERNS_ATTRIBUTE: {"S": joined_patterns}}


def patterns_of(item: dict[str, Any] | None) -> tuple[str, ...]:
    if item is None:
        return ()
    joined = str(item.get(PATTERNS_ATTRIBUTE, {}).get("S", ""))
    return tuple(dict.fromkeys(part.strip() for part in joined.split(",") if part.strip()))


class DeploymentTable(TableBase):
    def allowed_targets(self) -> tuple[str, ...]:
        answer = self.client.get_item(TableName=self.table, Key=allowed_targets_key(), ConsistentRead=True)
        return patterns_of(answer.get("Item"))

    def put_allowed_targets(self, patterns: Sequence[str]) -> None:
        self.client.put_item(TableName=self.table, Item=allowed_targets_item(",".join(patterns)))

"""What every part of the store shares: the client, and the two questions a conditional write raises.

* "Did the condition fail?" ``update``/``put`` answer it with a bool, and ``transact`` with the
  cancellation codes of a refused transaction (one per item, in order), instead of the same
  ``except ClientError`` block at every write.
* "Did our write land when its answer was lost?" The SDK retries a write whose response it never got;
  the retry then finds its own earlier effect and its condition false. ``landed`` reads the item back
  and lets the caller recognise its own write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

T = TypeVar("T")

CONDITION_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"


class Cancelled:
    """A refused transaction: which of its items failed, and how."""

    def __init__(self, error: ClientError) -> None:
        self.error = error
        reasons = error.response.get("CancellationReasons") or []
        self.codes = [str(reason.get("Code", "None")) for reason in reasons]

    def failed(self, position: int) -> bool:
        """Whether the condition of the item at ``position`` was false."""
        return position < len(self.codes) and self.codes[position] == CONDITION_FAILED

    @property
    def conflicted(self) -> bool:
        """Another transaction held one of the items: nothing was written, try again later."""
        return TRANSACTION_CONFLICT in self.codes


class TableBase:
    """The table, through the low-level client (cheaper to import and to call than the resource API)."""

    def __init__(self, client: DynamoDBClient, table_name: str, run_retention: timedelta) -> None:
        self.client = client
        self.table = table_name
        self.run_retention = run_retention

    def conditional(self, write: Callable[..., Any], **request: Any) -> bool:
        """Make a conditional ``put_item``/``update_item``/``delete_item``; False if the condition
        was false. Any other error propagates."""
        try:
            write(TableName=self.table, **request)
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def transact(self, items: list[TransactWriteItemTypeDef]) -> Cancelled | None:
        """Write ``items`` all or none; None when written, else what refused them."""
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            return Cancelled(error)
        return None

    @staticmethod
    def landed(read_back: Callable[[], T | None], is_ours: Callable[[T], bool]) -> bool:
        """Whether a write refused on a retry had in fact taken effect: the item as read back now is
        what our write made it (``is_ours``)."""
        current = read_back()
        return current is not None and is_ours(current)

    def expiry(self, moment: datetime) -> datetime:
        """When a finished run's item expires (TTL)."""
        return moment + self.run_retention


def chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

"""The local emulator must be as atomic as DynamoDB, or the local stack could fire a job twice."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import boto3
from botocore.exceptions import ClientError

from functions.core.definitions import table_definition


def race(client: Any, table: str, key: dict[str, Any], contenders: int) -> list[int]:
    """``contenders`` threads claim one PENDING item at the same moment; returns who succeeded."""
    winners: list[int] = []
    barrier = threading.Barrier(contenders)

    def claim(worker: int) -> None:
        barrier.wait()
        try:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": table,
                            "Key": key,
                            "UpdateExpression": "SET #s = :claimed, owner_id = :w",
                            "ConditionExpression": "#s = :pending",
                            "ExpressionAttributeNames": {"#s": "state"},
                            "ExpressionAttributeValues": {
                                ":claimed": {"S": "CLAIMED"},
                                ":pending": {"S": "PENDING"},
                                ":w": {"N": str(worker)},
                            },
                        }
                    }
                ]
            )
            winners.append(worker)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "TransactionCanceledException"

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return winners


def test_concurrent_conditional_transactions_on_one_item_let_exactly_one_win(moto_endpoint: str) -> None:
    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = f"atomic-{uuid.uuid4().hex[:8]}"
    client.create_table(**table_definition(table))
    # Some bulk, so that moto's per-transaction copy of the table takes a while (the race window).
    for n in range(300):
        client.put_item(
            TableName=table, Item={"pk": {"S": f"filler#{n}"}, "sk": {"S": "x"}, "v": {"S": "y" * 200}}
        )
    for round_ in range(5):
        key = {"pk": {"S": f"item#{round_}"}, "sk": {"S": "x"}}
        client.put_item(TableName=table, Item={**key, "state": {"S": "PENDING"}})
        winners = race(client, table, key, contenders=8)
        assert len(winners) == 1, f"round {round_}: {len(winners)} writers passed the same condition"

"""The local emulator must be as atomic as DynamoDB, or the local stack could fire a job twice."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from functions.core.resources import table_definition


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


def test_a_cancelled_transaction_leaves_every_item_as_it_was(moto_endpoint: str) -> None:
    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = f"rollback-{uuid.uuid4().hex[:8]}"
    client.create_table(**table_definition(table))
    first = {"pk": {"S": "a"}, "sk": {"S": "x"}}
    client.put_item(TableName=table, Item={**first, "state": {"S": "PENDING"}})
    new = {"pk": {"S": "b"}, "sk": {"S": "x"}}
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table,
                        "Key": first,
                        "UpdateExpression": "SET #s = :c",
                        "ExpressionAttributeNames": {"#s": "state"},
                        "ExpressionAttributeValues": {":c": {"S": "CLAIMED"}},
                    }
                },
                {"Put": {"TableName": table, "Item": {**new, "v": {"S": "1"}}}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": {"pk": {"S": "missing"}, "sk": {"S": "x"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    except ClientError as error:
        assert error.response["Error"]["Code"] == "TransactionCanceledException"
    else:
        raise AssertionError("the transaction should have been cancelled")
    assert client.get_item(TableName=table, Key=first)["Item"]["state"] == {"S": "PENDING"}
    assert "Item" not in client.get_item(TableName=table, Key=new)


def test_the_emulator_counts_requests_by_operation(moto_endpoint: str) -> None:
    import json
    import urllib.request

    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    urllib.request.urlopen(urllib.request.Request(moto_endpoint + "/_punctual/requests", method="DELETE"))
    client.list_tables()
    client.list_tables()
    with urllib.request.urlopen(moto_endpoint + "/_punctual/requests") as response:
        counts = json.loads(response.read())
    assert counts.get("dynamodb:ListTables") == 2


def test_a_long_poll_wakes_when_a_delayed_message_becomes_visible_not_a_second_later() -> None:
    """moto's long poll only woke for new messages; a delayed one reached a worker up to 1 s late."""
    import time

    from moto.sqs.models import Message, Queue

    from punctual.local.emulator import _wait_for_messages

    queue = Queue("delays", region="us-east-1", account_id="123456789012")  # type: ignore[abstract]
    message = Message(uuid.uuid4().hex, "body")
    message.delay(delay_seconds=1)
    queue._messages.append(message)
    assert queue.messages == []
    started = time.monotonic()
    _wait_for_messages(queue, 10)
    waited = time.monotonic() - started
    assert queue.messages == [message]
    # moto's own wait would sleep the whole 10 s: nothing is sent meanwhile to wake it
    assert 0.9 <= waited < 5, waited


def test_a_long_poll_with_nothing_coming_waits_its_whole_timeout() -> None:
    import time

    from moto.sqs.models import Queue

    from punctual.local.emulator import _wait_for_messages

    queue = Queue("empty", region="us-east-1", account_id="123456789012")  # type: ignore[abstract]
    started = time.monotonic()
    _wait_for_messages(queue, 1)
    assert time.monotonic() - started >= 0.9


def test_a_query_reads_its_partition_only_and_answers_as_moto_would(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto sorts the whole table for every Query; the emulator reads the partition, as DynamoDB does
    (the dispatcher's bucket queries held the table for half a second once it had grown)."""
    from punctual.local import emulator

    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = f"query-{uuid.uuid4().hex[:8]}"
    client.create_table(**table_definition(table))
    for n in (7, 3, 9, 1, 5):
        client.put_item(
            TableName=table,
            Item={
                "pk": {"S": "bucket#1"},
                "sk": {"S": f"t#{n}"},
                "gsi1pk": {"S": "o"},
                "gsi1sk": {"S": str(n)},
            },
        )
    for n in range(40):
        client.put_item(TableName=table, Item={"pk": {"S": f"other#{n}"}, "sk": {"S": "t#2"}})
    whole_table_reads: list[str] = []
    original = emulator._original_all_items

    def counted(table_: Any) -> Any:
        whole_table_reads.append(table_.name)
        return original(table_)

    monkeypatch.setattr(emulator, "_original_all_items", counted)

    def query(**extra: Any) -> Any:
        return client.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "bucket#1"}},
            ConsistentRead=True,
            **extra,
        )

    assert [item["sk"]["S"] for item in query()["Items"]] == ["t#1", "t#3", "t#5", "t#7", "t#9"]
    assert [item["sk"]["S"] for item in query(ScanIndexForward=False)["Items"]][:2] == ["t#9", "t#7"]
    first = query(Limit=2)
    assert [item["sk"]["S"] for item in first["Items"]] == ["t#1", "t#3"]
    rest = query(ExclusiveStartKey=first["LastEvaluatedKey"])
    assert [item["sk"]["S"] for item in rest["Items"]] == ["t#5", "t#7", "t#9"]
    missing = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "never-written"}},
    )
    assert missing["Items"] == []
    assert whole_table_reads == [], "a Query of the table reads its partition only"
    by_owner = client.query(
        TableName=table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :o",
        ExpressionAttributeValues={":o": {"S": "o"}},
    )
    assert len(by_owner["Items"]) == 5  # an index query is moto's own, over the whole table
    assert len(client.scan(TableName=table)["Items"]) == 45
    assert whole_table_reads

"""The local emulator must be as atomic as DynamoDB, or the local stack could fire a job twice."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from punctual_functions.core.resources import table_definition


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


def _queued(lock: Any, sender: str, order: list[str], label: str) -> threading.Thread:
    """A thread that takes a turn of ``lock`` as ``sender`` and notes ``label``; returns once the
    thread is waiting (so arrivals are in a known order)."""

    def take() -> None:
        with lock.turn(sender):
            order.append(label)

    before = sum(len(queue) for queue in lock._waiting.values())
    thread = threading.Thread(target=take)
    thread.start()
    while sum(len(queue) for queue in lock._waiting.values()) == before:
        threading.Event().wait(0.001)
    return thread


def test_waiting_senders_take_turns_so_a_burst_does_not_queue_ahead_of_a_single_request() -> None:
    """A dispatcher's tick (a hundred requests) used to hold up a worker's start write behind it."""
    from punctual.local.emulator import TurnLock

    lock = TurnLock()
    order: list[str] = []
    lock.acquire("holder")
    threads = [_queued(lock, "dispatcher", order, f"d{n}") for n in range(4)]
    threads.append(_queued(lock, "worker-1", order, "w0"))
    threads.append(_queued(lock, "worker-2", order, "v0"))
    threads.append(_queued(lock, "worker-1", order, "w1"))
    lock.release()
    for thread in threads:
        thread.join(timeout=5)
    # Round-robin by sender, each sender's requests in their order of arrival.
    assert order == ["d0", "w0", "v0", "d1", "w1", "d2", "d3"]


def test_a_worker_takes_several_turns_in_a_row_before_the_dispatcher_takes_one() -> None:
    """The start writes of runs due just after a tick each waited for one of the sweep's reads (30 to
    50 ms apiece), and were made after their second: a worker now has up to WORKER_TURNS in a row."""
    from punctual.local.emulator import WORKER_TURNS, TurnLock, turns_of

    lock = TurnLock(turns_of)
    order: list[str] = []
    lock.acquire("holder")
    threads = [_queued(lock, "dispatcher", order, f"d{n}") for n in range(3)]
    threads += [_queued(lock, "worker-1", order, f"w{n}") for n in range(WORKER_TURNS + 2)]
    lock.release()
    for thread in threads:
        thread.join(timeout=5)
    workers = [f"w{n}" for n in range(WORKER_TURNS + 2)]
    assert order == ["d0", *workers[:WORKER_TURNS], "d1", *workers[WORKER_TURNS:], "d2"]


def test_the_turn_lock_lets_one_holder_in_at_a_time() -> None:
    from punctual.local.emulator import TurnLock

    lock = TurnLock()
    inside = 0
    most = 0
    guard = threading.Lock()

    def work(sender: str) -> None:
        nonlocal inside, most
        for _ in range(50):
            with lock.turn(sender):
                with guard:
                    inside += 1
                    most = max(most, inside)
                threading.Event().wait(0.0001)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work, args=(f"s{n % 3}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most == 1
    assert not lock._waiting


def test_a_client_slow_to_send_its_request_body_does_not_hold_the_table(moto_endpoint: str) -> None:
    """The body used to be read inside the table's lock: a client stalled mid-request (a paused or
    starved process) stalled every other one."""
    import socket
    from urllib.parse import urlparse

    address = urlparse(moto_endpoint)
    body = b"{}"
    slow = socket.create_connection((address.hostname, address.port))
    try:
        slow.sendall(
            b"POST / HTTP/1.1\r\nHost: localhost\r\n"
            b"X-Amz-Target: DynamoDB_20120810.ListTables\r\n"
            b"Content-Type: application/x-amz-json-1.0\r\n"
            b"Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request,"
            b" SignedHeaders=host, Signature=x\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        threading.Event().wait(0.2)  # the emulator has the headers and waits for the body
        client: Any = boto3.client(
            "dynamodb",
            endpoint_url=moto_endpoint,
            region_name="us-east-1",
            config=Config(read_timeout=5, retries={"max_attempts": 1}),
        )
        assert "TableNames" in client.list_tables()  # answered while the slow body is still owed
        slow.sendall(body)
        slow.settimeout(5)
        assert slow.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        slow.close()


def _raw_request(target: str, body: bytes) -> bytes:
    return (
        b"POST / HTTP/1.1\r\nHost: localhost\r\n"
        b"X-Amz-Target: DynamoDB_20120810." + target.encode() + b"\r\n"
        b"Content-Type: application/x-amz-json-1.0\r\n"
        b"Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request,"
        b" SignedHeaders=host, Signature=x\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def test_a_connection_stays_open_for_the_next_request(moto_endpoint: str) -> None:
    """werkzeug closed every connection, so each request paid a new one (a third of the dispatcher's
    CPU a dispatch in make bench); kept open, its drain after an answer must not swallow the next
    request."""
    import socket
    from urllib.parse import urlparse

    address = urlparse(moto_endpoint)
    connection = socket.create_connection((address.hostname, address.port))
    connection.settimeout(5)
    try:
        answers: list[bytes] = []
        for body in (b"{}", b'{"Limit": 5}', b"{}"):
            connection.sendall(_raw_request("ListTables", body))
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                answer += connection.recv(65536)
            answers.append(answer)
        assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
        assert all(b"Connection: keep-alive" in a for a in answers)
    finally:
        connection.close()


def test_boto3_reuses_its_connection_to_the_emulator(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    connects: list[object] = []
    original = socket.socket.connect

    def counted(self: socket.socket, address: Any) -> None:
        connects.append(address)
        original(self, address)

    monkeypatch.setattr(socket.socket, "connect", counted)
    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    for _ in range(5):
        client.list_tables()
    assert len(connects) == 1


def test_item_answers_written_directly_are_the_json_moto_s_serializer_writes(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto's generic serializer spent 1.5 ms per item; the emulator writes item answers itself. Each
    answer of a workload over every item operation and attribute type is checked against moto's."""
    import base64
    import json

    from moto.dynamodb.responses import DynamoHandler

    from punctual.local import emulator

    checked: list[str] = []
    mismatches: list[tuple[str, Any, Any]] = []

    def both(self: Any, action_result: Any) -> Any:
        ours = emulator._serialized(self, action_result)
        theirs = emulator._original_serialized(self, action_result)
        if ours[0] != theirs[0] or json.loads(ours[2] or "{}") != json.loads(theirs[2] or "{}"):
            mismatches.append((self._get_action(), ours, theirs))
        checked.append(self._get_action())
        return ours

    monkeypatch.setattr(DynamoHandler, "serialized", both)
    client: Any = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = f"answers-{uuid.uuid4().hex[:8]}"
    client.create_table(**table_definition(table))
    blob = base64.b64decode(base64.b64encode(b"\x00\xffbytes"))
    every_type = {
        "s": {"S": "text é"},
        "n": {"N": "12.5"},
        "b": {"B": blob},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"x", b"y"]},
        "m": {"M": {"inner": {"L": [{"N": "1"}, {"NULL": True}, {"BOOL": False}]}}},
        "gsi1pk": {"S": "owner"},
        "gsi1sk": {"S": "1"},
    }
    for n in range(5):
        client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"S": f"{n}"}, **every_type})
    key = {"pk": {"S": "p"}, "sk": {"S": "0"}}
    client.put_item(
        TableName=table, Item={**key, **every_type}, ReturnValues="ALL_OLD", ReturnConsumedCapacity="TOTAL"
    )
    client.get_item(TableName=table, Key=key, ConsistentRead=True)
    client.get_item(TableName=table, Key={"pk": {"S": "none"}, "sk": {"S": "0"}})
    client.get_item(TableName=table, Key=key, ProjectionExpression="b, m.inner")
    client.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET n = n + :one ADD ns :two",
        ExpressionAttributeValues={":one": {"N": "1"}, ":two": {"NS": ["3"]}},
        ReturnValues="ALL_NEW",
    )
    page = client.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        Limit=2,
        ReturnConsumedCapacity="TOTAL",
    )
    client.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        ExclusiveStartKey=page["LastEvaluatedKey"],
        Select="COUNT",
    )
    client.query(
        TableName=table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :o",
        ExpressionAttributeValues={":o": {"S": "owner"}},
    )
    client.scan(TableName=table, Limit=3)
    client.batch_get_item(RequestItems={table: {"Keys": [key, {"pk": {"S": "p"}, "sk": {"S": "1"}}]}})
    client.batch_write_item(
        RequestItems={table: [{"PutRequest": {"Item": {"pk": {"S": "q"}, "sk": {"S": "1"}, **every_type}}}]}
    )
    client.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}])
    client.transact_write_items(
        TransactItems=[{"Put": {"TableName": table, "Item": {"pk": {"S": "q"}, "sk": {"S": "2"}}}}]
    )
    with pytest.raises(ClientError):
        client.put_item(
            TableName=table,
            Item={**key, "s": {"S": "other"}},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    client.delete_item(TableName=table, Key=key, ReturnValues="ALL_OLD")
    client.describe_table(TableName=table)
    for action, ours, theirs in mismatches:
        print(action, ours[2], "\n", theirs[2])
    assert mismatches == []
    assert set(emulator.FAST_ANSWERS) <= set(checked)


def test_a_receive_reads_the_retention_period_without_building_every_attribute(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto built all of a queue's attributes (counting its visible messages) for every message it
    received: quadratic in the queue's length, most of the emulator's time at a busy minute tick."""
    from moto.sqs.models import Queue

    sqs: Any = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"retention-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="now")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)

    def refuse(_self: Any) -> Any:
        raise AssertionError("a receive built the queue's attributes")

    monkeypatch.setattr(Queue, "attributes", property(refuse))
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    assert [m["Body"] for m in received["Messages"]] == ["now"]  # not the delayed one
    # in flight now: neither comes back
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=received["Messages"][0]["ReceiptHandle"], VisibilityTimeout=0
    )
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in again["Messages"]] == ["now"]


def test_a_message_past_the_retention_period_is_not_received(moto_endpoint: str) -> None:
    import time

    from moto.sqs.models import Message, sqs_backends

    from punctual.local.emulator import _within_retention

    sqs: Any = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    name = f"expired-{uuid.uuid4().hex[:8]}"
    sqs.create_queue(QueueName=name, Attributes={"MessageRetentionPeriod": "60"})

    backend = sqs_backends["123456789012"]["us-east-1"]
    fresh, old = Message(uuid.uuid4().hex, "fresh"), Message(uuid.uuid4().hex, "old")
    fresh.mark_sent()
    old.sent_timestamp = int((time.time() - 61) * 1000)  # type: ignore[assignment]
    assert _within_retention(backend, name, fresh)
    assert not _within_retention(backend, name, old)

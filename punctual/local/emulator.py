"""The embedded AWS emulator: moto's server, with DynamoDB made as atomic as the real service and
fast enough not to make the local stack late.

For DynamoDB:

- moto applies a conditional write or a transaction in several Python steps, so two concurrent
  requests can both pass the same condition (seen here: two dispatchers both claiming one trigger).
  DynamoDB serialises them; a WSGI middleware here runs DynamoDB requests one at a time, its senders
  (the local stack's roles) taking turns, so one role's burst does not queue ahead of another's
  single request (DynamoDB serves them side by side). A request's body is read before its turn. SQS
  requests pass through untouched, so a 20-second long poll never blocks the table.
- moto backs up the *whole table* (a deep copy) before every TransactWriteItems, so a transaction
  took 0.5 s once the table held 20,000 items, and the local stack slowed down as history grew. The
  backup here covers only the items the transaction touches, which is all a rollback needs.
- moto answers a Query by sorting *every item of the table* and keeping the partition asked for, so
  a query took 12 ms with 1,000 items and 49 ms with 3,000. DynamoDB reads the partition only; here
  a Query of the table (not of an index) reads its partition only too.
- moto 5.2 writes every answer through a serializer driven by botocore's shapes, at about 1.5 ms an
  item: a Query of 80 triggers took 170 ms. Answers of item operations are written as JSON directly.

For SQS:

- a long poll in moto wakes up when a message is *sent*, but not when a delayed or hidden message
  becomes visible; it looked again only once a second, so such a message reached a worker up to a
  second late. Here the wait ends when the next message becomes visible.
- moto read the clock through two datetimes twice for each message each time a poll looked at the
  queue, and built all the queue's attributes (counting its visible messages) for each message it
  received. With a few hundred messages delayed until their second, the polls took half of the
  emulator's time.

- SQS keeps a send's ``X-Amzn-Trace-Id`` header with its messages (``AWSTraceHeader``), for the
  event source's recursive-loop detection (``punctual/local/recursion.py``); moto drops it.

For both: the server keeps HTTP/1.1 connections open, as AWS's endpoints do
(``punctual/local/keepalive.py``).

All of these showed in the precision benchmark the same way: at each minute tick the dispatcher's
requests kept the emulator (one process, one core's worth of Python) busy for seconds, the workers'
start writes waited, and runs fired up to a second late. ``PUNCTUAL_EMULATOR_TRACE=<file>`` writes a
line per DynamoDB request (arrival, wait, hold, operation, sender) to find such waits again.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import functools
import inspect
import io
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from moto.core import utils as moto_utils
from moto.core.responses import ActionResult
from moto.core.utils import get_service_model
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.sqs import models as sqs_models
from moto.sqs.models import Message, Queue, SQSBackend
from werkzeug.serving import BaseWSGIServer, make_server

from punctual.local.keepalive import KeepAliveHandler
from punctual.local.recursion import TraceHeaders, keep_trace_headers
from punctual.local.turns import WORKER_TURNS, TurnLock, turns_of

__all__ = ["WORKER_TURNS", "TurnLock", "make_emulator", "turns_of"]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def sender_of(environ: dict[str, Any]) -> str:
    """Who sent a request: the role the SDK names in its User-Agent (``app/<role>``, set by the
    supervisor through ``AWS_SDK_UA_APP_ID``), else the connection's address."""
    agent = str(environ.get("HTTP_USER_AGENT", ""))
    if "app/" in agent:
        return agent.split("app/", 1)[1].split(" ", 1)[0]
    return str(environ.get("REMOTE_ADDR", ""))


class SerializedDynamoDB:
    """Runs DynamoDB requests one at a time, senders taking turns (``TurnLock``).

    The request's body is read before its turn: a client slow to send it must not hold the table.
    With ``trace`` (a file), each request writes a line: when it arrived, how long it waited for and
    held the table, its operation and its sender (``PUNCTUAL_EMULATOR_TRACE``, for finding what a
    slow request waited behind).
    """

    def __init__(self, app: WsgiApp, trace: TextIO | None = None) -> None:
        self.app = app
        self.lock = TurnLock(turns_of)
        self.trace = trace

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        if environ.get("CONTENT_LENGTH"):
            environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
        sender = sender_of(environ)
        arrived = time.time()
        with self.lock.turn(sender):
            acquired = time.time()
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
            done = time.time()
        if self.trace is not None:
            operation = target.split(".", 1)[-1]
            self.trace.write(
                f"{arrived:.4f} {acquired - arrived:.4f} {done - acquired:.4f} {operation} {sender}\n"
            )
        return [body]


class FaultInjector:
    """Makes AWS misbehave, for fault tests: ``PUNCTUAL_EMULATOR_FAULTS="throttle=0.03,lost=0.02"``.

    ``throttle``: the request is refused with a throttling error (nothing happened; the SDK retries).
    ``lost``: the request is carried out but its answer is replaced by a 500 (the SDK retries a request
    that already took effect, like a response lost to a network timeout). Not for SQS receives: a
    receive whose answer is lost hides its messages for the visibility the receive asked for (3 s from
    the local event source; the queue's 5,400 s from Lambda's), which delays them but loses nothing;
    AWS's delay no test can wait for.
    """

    NOT_LOST = frozenset({"AmazonSQS.ReceiveMessage"})

    def __init__(self, app: WsgiApp, throttle: float, lost: float, rng: random.Random | None = None) -> None:
        self.app = app
        self.throttle = throttle
        self.lost = lost
        self.rng = rng or random.Random()
        self.injected = {"throttle": 0, "lost": 0}

    @classmethod
    def from_env(cls, app: WsgiApp, spec: str) -> WsgiApp:
        rates = {"throttle": 0.0, "lost": 0.0}
        for part in spec.split(","):
            key, _, value = part.strip().partition("=")
            if key in rates:
                rates[key] = float(value)
        return cls(app, rates["throttle"], rates["lost"]) if any(rates.values()) else app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET"):
            return self.app(environ, start_response)
        roll = self.rng.random()
        if roll < self.throttle:
            self.injected["throttle"] += 1
            return _error(start_response, "400 Bad Request", "ThrottlingException", "injected throttling")
        if roll < self.throttle + self.lost and environ["HTTP_X_AMZ_TARGET"] not in self.NOT_LOST:
            self.injected["lost"] += 1
            result = self.app(environ, lambda *_args, **_kwargs: None)
            b"".join(result)
            return _error(
                start_response, "500 Internal Server Error", "InternalFailure", "injected: answer lost"
            )
        return self.app(environ, start_response)


def _error(start_response: Callable[..., Any], status: str, code: str, message: str) -> list[bytes]:
    body = json.dumps({"__type": code, "message": message}).encode()
    start_response(
        status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))]
    )
    return [body]


class RequestCounter:
    """Counts AWS requests by operation (``X-Amz-Target``), for the cost benchmarks.

    ``GET /_punctual/requests`` returns the counts; ``DELETE`` resets them.
    """

    PATH = "/_punctual/requests"

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == self.PATH:
            with self.lock:
                body = json.dumps(self.counts).encode()
                if environ.get("REQUEST_METHOD") == "DELETE":
                    self.counts = {}
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target:
            operation = target.replace("DynamoDB_20120810.", "dynamodb:").replace("AmazonSQS.", "sqs:")
            with self.lock:
                self.counts[operation] = self.counts.get(operation, 0) + 1
        return self.app(environ, start_response)


_original_transact_write_items = DynamoDBBackend.transact_write_items


def _touched_keys(
    backend: DynamoDBBackend, transact_items: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    keys = []
    for entry in transact_items:
        _, operation = next(iter(entry.items()))
        table_name = operation.get("TableName")
        if not table_name or table_name not in backend.tables:
            continue
        if "Key" in operation:
            keys.append((table_name, operation["Key"]))
        elif "Item" in operation:
            table = backend.get_table(table_name)
            key = {table.hash_key_attr: operation["Item"][table.hash_key_attr]}
            if table.range_key_attr is not None:
                key[table.range_key_attr] = operation["Item"][table.range_key_attr]
            keys.append((table_name, key))
    return keys


def _transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's own implementation, with the table backup narrowed to the touched items.

    Only safe while DynamoDB requests are serialised (``SerializedDynamoDB``): the swap of
    ``Table.__deepcopy__`` is process-wide for the duration of the call.
    """
    backups = []
    for table_name, key in _touched_keys(self, transact_items):
        current = self.get_item(table_name, key)
        backups.append((table_name, key, current.to_json()["Attributes"] if current else None))
    had_deepcopy = "__deepcopy__" in Table.__dict__
    previous = Table.__dict__.get("__deepcopy__")
    Table.__deepcopy__ = lambda table, _memo: table  # type: ignore[attr-defined]
    try:
        _original_transact_write_items(self, transact_items)
    except Exception:
        for table_name, key, attributes in backups:
            if attributes is None:
                if self.get_item(table_name, key) is not None:
                    self.delete_item(table_name, key)
            else:
                self.put_item(table_name, attributes)
        raise
    finally:
        if had_deepcopy:
            Table.__deepcopy__ = previous  # type: ignore[attr-defined]
        else:
            del Table.__deepcopy__  # type: ignore[attr-defined]


_original_query = Table.query
_original_all_items = Table.all_items
_QUERY_SIGNATURE = inspect.signature(_original_query)
_partition = threading.local()


def _query(self: Table, *args: Any, **kwargs: Any) -> Any:
    """moto's Query, over the items of the partition asked for instead of the whole table."""
    arguments = _QUERY_SIGNATURE.bind(self, *args, **kwargs).arguments
    hash_key = arguments.get("hash_key")
    if arguments.get("index_name") or hash_key is None or self.range_key_attr is None:
        return _original_query(self, *args, **kwargs)
    _partition.only = (self, hash_key)
    try:
        return _original_query(self, *args, **kwargs)
    finally:
        _partition.only = None


def _all_items(self: Table) -> list[Any]:
    only = getattr(_partition, "only", None)
    if only is None or only[0] is not self:
        return _original_all_items(self)
    hash_key = only[1]
    items = self.items[hash_key].values() if hash_key in self.items else []
    return sorted(items, key=lambda item: item.range_key)


# The item operations, whose answers moto builds as the wire's JSON already (items in attribute-value
# form), so its generic serializer has nothing to change in them.
FAST_ANSWERS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
_original_serialized = DynamoHandler.serialized


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


@functools.cache
def _output_members(action: str) -> frozenset[str]:
    """The keys the operation's answer has (moto adds a few of its own, which the serializer drops)."""
    shape = get_service_model("dynamodb").operation_model(action).output_shape
    return frozenset(shape.members) if shape is not None else frozenset()


def _blob(value: object) -> str:
    if isinstance(value, bytes):  # a B or BS value: base64 on the wire
        return base64.b64encode(value).decode()
    raise TypeError(f"not JSON: {type(value).__name__}")


def _serialized(self: DynamoHandler, action_result: ActionResult) -> tuple[int, dict[str, Any], str | bytes]:
    """moto's answer to an item operation, written as JSON directly.

    moto 5.2 passes every answer through a serializer driven by botocore's shapes, which spends about
    1.5 ms per item returned: a Query of 80 triggers took 170 ms, and the dispatcher's bucket queries
    at each minute tick kept the (serialised) table busy for seconds, so the workers' start writes
    waited and runs fired late. The answer is the same JSON (a test holds the two to each other).
    """
    result = action_result.result
    action = self._get_action()
    if isinstance(result, dict) and action in FAST_ANSWERS:
        members = _output_members(action)
        answer = {key: value for key, value in result.items() if key in members}
        headers = {"Content-Type": "application/x-amz-json-1.0", **self.response_headers}
        return 200, headers, json.dumps(_without_none(answer), default=_blob)
    return _original_serialized(self, action_result)


def _unix_time(dt: datetime.datetime | None = None) -> float:
    """moto's ``unix_time``: now, without building two datetimes each time it is asked."""
    return time.time() if dt is None else moto_utils.unix_time(dt)


def _unix_time_millis(dt: datetime.datetime | None = None) -> float:
    return _unix_time(dt) * 1000.0


def _visible_messages(self: Queue) -> list[Message]:
    """moto's ``Queue.messages`` (visible and not delayed), reading the clock once, not twice a message."""
    now = _unix_time_millis()
    return [m for m in self._messages if now > m.visible_at and now >= m.delayed_until]


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    """moto's retention check, reading the queue's retention period itself: moto built all of the
    queue's attributes for it, counting the visible messages, for every message received."""
    retention_period: int = self.get_queue(queue_name).message_retention_period  # type: ignore[attr-defined]
    return retention_period + (message.sent_timestamp or 0) / 1000 > _unix_time()


def _wait_for_messages(self: Queue, timeout: int) -> None:
    """moto's wait for a message, also woken when a delayed or hidden one becomes visible."""
    with self._messages_lock:
        now = _unix_time_millis()
        upcoming = (max(m.visible_at, m.delayed_until) for m in self._messages)
        soonest = min((moment for moment in upcoming if moment > now), default=None)
        wait = timeout if soonest is None else min(timeout, (soonest - now) / 1000 + 0.002)
        self._messages_lock.wait_for(lambda: self.messages, timeout=wait)


def make_emulator(host: str, port: int) -> BaseWSGIServer:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    Table.query = _query  # type: ignore[method-assign]
    Table.all_items = _all_items  # type: ignore[method-assign]
    DynamoHandler.serialized = _serialized  # type: ignore[method-assign, assignment]
    Queue.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]
    Queue.messages = property(_visible_messages)  # type: ignore[method-assign, assignment]
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]
    # The SQS model's own clock readings (a message's visibility and delay, a poll's end).
    sqs_models.unix_time = _unix_time  # type: ignore[attr-defined]
    sqs_models.unix_time_millis = _unix_time_millis  # type: ignore[attr-defined]
    trace_path = os.environ.get("PUNCTUAL_EMULATOR_TRACE")
    trace = open(trace_path, "a", buffering=1) if trace_path else None  # noqa: SIM115 - lives with the server
    keep_trace_headers(SQSBackend)  # Lambda's recursive-loop detection reads them (recursion.py)
    app: WsgiApp = SerializedDynamoDB(TraceHeaders(DomainDispatcherApplication(create_backend_app)), trace)
    app = FaultInjector.from_env(app, os.environ.get("PUNCTUAL_EMULATOR_FAULTS", ""))
    app = RequestCounter(app)
    return make_server(host, port, app, threaded=True, request_handler=KeepAliveHandler)


class EmulatorThread:
    """The emulator in a thread of this process (tests)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = make_emulator(host, port)
        self.thread = threading.Thread(target=self.server.serve_forever, name="emulator", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> EmulatorThread:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="punctual-emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--niceness", type=int, default=0, help="Lower the process's CPU priority.")
    args = parser.parse_args(argv)
    from punctual.local.role import exit_with_parent

    exit_with_parent()
    if args.niceness:
        os.nice(args.niceness)
    with contextlib.suppress(KeyboardInterrupt):
        make_emulator(args.host, args.port).serve_forever()


if __name__ == "__main__":
    main()

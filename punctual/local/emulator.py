"""The embedded AWS emulator: moto's server, with DynamoDB made as atomic as the real service.

Three changes to stock moto for DynamoDB:

- moto applies a conditional write or a transaction in several Python steps, so two concurrent
  requests can both pass the same condition (seen here: two dispatchers both claiming one trigger).
  DynamoDB serialises them; a WSGI middleware here runs DynamoDB requests one at a time. SQS requests
  pass through untouched, so a 20-second long poll never blocks the table.
- moto backs up the *whole table* (a deep copy) before every TransactWriteItems, so a transaction
  took 0.5 s once the table held 20,000 items, and the local stack slowed down as history grew. The
  backup here covers only the items the transaction touches, which is all a rollback needs.

- moto answers a Query by sorting *every item of the table* and keeping the partition asked for, so
  a query took 12 ms with 1,000 items and 49 ms with 3,000, and the dispatcher's bucket queries at
  each minute tick held the (serialised) table for a quarter to half a second once a few hundred jobs
  had run, making the workers' start writes of the next seconds wait (seen in the precision
  benchmark as runs up to 0.8 s late at the start of a minute). DynamoDB reads the partition only;
  here a Query of the table (not of an index) reads its partition only too.

And one to SQS: a long poll in moto wakes up when a message is *sent*, but not when a delayed or
hidden message becomes visible; it looked again only once a second, so such a message reached a
worker up to a second late (seen in the precision benchmark: a run taken over after its worker died,
and a burst of jobs due at the same second whose messages came out of their delay). Here the wait
ends when the next message becomes visible.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import logging
import os
import random
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.core.utils import unix_time_millis
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.sqs.models import Queue
from werkzeug.serving import BaseWSGIServer, make_server

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SerializedDynamoDB:
    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


class FaultInjector:
    """Makes AWS misbehave, for fault tests: ``PUNCTUAL_EMULATOR_FAULTS="throttle=0.03,lost=0.02"``.

    ``throttle``: the request is refused with a throttling error (nothing happened; the SDK retries).
    ``lost``: the request is carried out but its answer is replaced by a 500 (the SDK retries a request
    that already took effect, like a response lost to a network timeout). Not for SQS receives: a
    receive whose answer is lost hides its messages for the queue's visibility timeout (15 minutes
    here, as on AWS), which delays them but loses nothing, and no test can wait that long.
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


def _wait_for_messages(self: Queue, timeout: int) -> None:
    """moto's wait for a message, also woken when a delayed or hidden one becomes visible."""
    with self._messages_lock:
        now = unix_time_millis()
        upcoming = (max(m.visible_at, m.delayed_until) for m in self._messages)
        soonest = min((moment for moment in upcoming if moment > now), default=None)
        wait = timeout if soonest is None else min(timeout, (soonest - now) / 1000 + 0.002)
        self._messages_lock.wait_for(lambda: self.messages, timeout=wait)


def make_emulator(host: str, port: int) -> BaseWSGIServer:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    Table.query = _query  # type: ignore[method-assign]
    Table.all_items = _all_items  # type: ignore[method-assign]
    Queue.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]
    app: WsgiApp = SerializedDynamoDB(DomainDispatcherApplication(create_backend_app))
    app = FaultInjector.from_env(app, os.environ.get("PUNCTUAL_EMULATOR_FAULTS", ""))
    app = RequestCounter(app)
    return make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)


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

"""Connections opened before the second (``punctual_functions/core/targets/warm.py``): at the second only the
request goes out; a parked connection the target closed meanwhile costs nothing; one that hangs is
aborted like any other."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.targets import TargetExecutor
from punctual_functions.core.targets.outcome import Delivery

LOCAL = NetworkPolicy(allow_loopback=True)


@dataclass
class Conn:
    accepted_at: float
    request_at: float | None = None


@dataclass
class RawServer:
    """An HTTP/1.1 server on a raw socket: when each connection was accepted and its request came."""

    mode: str = "answer"  # answer | close_idle | hang
    conns: list[Conn] = field(default_factory=list)
    sock: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))

    def start(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            conn = Conn(time.monotonic())
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(client, conn), daemon=True).start()

    def _serve(self, client: socket.socket, conn: Conn) -> None:
        with client:
            if self.mode == "close_idle" and len(self.conns) == 1:
                return  # the first (parked) connection is closed before any request
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    return
                if conn.request_at is None:
                    conn.request_at = time.monotonic()
                data += chunk
            if self.mode == "hang":
                time.sleep(5)
                return
            client.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    server.start()
    yield server
    server.sock.close()


def _delivery() -> Delivery:
    return Delivery(
        job_id="job_1",
        run_id="20261125T120000.000Z-00000000",
        attempt=1,
        scheduled_for=datetime(2026, 11, 25, 12, tzinfo=UTC),
        payload={"n": 1},
        secret=None,
    )


def _spec(url: str) -> dict[str, Any]:
    return {"type": "http", "url": url, "method": "POST"}


def _no_clients(_service: str) -> Any:
    raise AssertionError("no AWS client for HTTP targets")


def _wait_parked(executor: TargetExecutor, count: int = 1) -> None:
    deadline = time.monotonic() + 3
    while len(executor._http._shelf) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(executor._http._shelf) == count


def test_a_prepared_delivery_sends_its_request_on_the_connection_opened_before(raw_server: RawServer) -> None:
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 10)
    _wait_parked(executor)
    time.sleep(0.3)  # the worker waits for the second
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 10)
    assert outcome.succeeded and outcome.status_code == 204
    (conn,) = raw_server.conns
    assert conn.request_at is not None and conn.request_at - conn.accepted_at >= 0.25, "opened before"
    assert len(executor._http._shelf) == 0, "a parked connection serves one request"


def test_a_parked_connection_the_target_closed_meanwhile_is_replaced(raw_server: RawServer) -> None:
    raw_server.mode = "close_idle"
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 10)
    _wait_parked(executor)
    time.sleep(0.2)  # the server has closed it
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 10)
    assert outcome.succeeded, outcome.error
    assert [conn.request_at is not None for conn in raw_server.conns] == [False, True]


def test_a_parked_connection_that_hangs_is_aborted_at_the_timeout(raw_server: RawServer) -> None:
    raw_server.mode = "hang"
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 0.5)
    _wait_parked(executor)
    began = time.monotonic()
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 0.5)
    assert not outcome.succeeded and outcome.retriable and "timeout" in (outcome.error or "")
    assert time.monotonic() - began < 2


def test_a_target_that_refuses_the_warm_up_is_reported_by_the_delivery() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
    closed.close()  # nothing listens there
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(url), 10)
    time.sleep(0.2)
    assert len(executor._http._shelf) == 0
    outcome = executor.execute(_spec(url), _delivery(), 10)
    assert not outcome.succeeded and "connection failed" in (outcome.error or "")


# ---- The request composed before the second (``warm.Order``): at the second only its bytes go out.


def _waiting(executor: TargetExecutor, seconds: float, seen: list[int]) -> Any:
    """The worker's wait for the second; notes how many connections were still parked at its end."""

    def wait() -> None:
        time.sleep(seconds)
        seen.append(len(executor._http._shelf))

    return wait


def test_a_delivery_that_waits_composes_its_request_onto_the_parked_connection_before_the_second(
    raw_server: RawServer,
) -> None:
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 10)
    _wait_parked(executor)
    seen: list[int] = []
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 10, wait=_waiting(executor, 0.3, seen))
    assert outcome.succeeded and outcome.status_code == 204, outcome.error
    assert seen == [0], "the request was composed onto the parked connection during the wait"
    (conn,) = raw_server.conns
    assert conn.request_at is not None and conn.request_at - conn.accepted_at >= 0.25


def test_a_connection_parked_while_the_delivery_waits_fills_its_order(raw_server: RawServer) -> None:
    executor = TargetExecutor(_no_clients, LOCAL)
    seen: list[int] = []
    executor.prepare(_spec(raw_server.url), 10)  # still connecting when the delivery starts to wait
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 10, wait=_waiting(executor, 0.3, seen))
    assert outcome.succeeded, outcome.error
    assert seen == [0] and len(raw_server.conns) == 1, "one connection: the one warmed for it"
    assert executor._http._shelf._orders == {}


def test_a_staged_request_is_the_same_request_as_one_sent_at_once() -> None:
    requests: list[bytes] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                data = b""
                while b"\r\n\r\n" not in data or not data.endswith(b"}"):
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                requests.append(data)
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/hook?x=1"
    spec = {**_spec(url), "headers": {"X-Team": "ops", "Accept-Encoding": "gzip"}}
    executor = TargetExecutor(_no_clients, LOCAL)
    assert executor.execute(spec, _delivery(), 10).succeeded  # composed and sent at once
    executor.prepare(spec, 10)
    _wait_parked(executor)
    seen: list[int] = []
    assert executor.execute(spec, _delivery(), 10, wait=_waiting(executor, 0.05, seen)).succeeded
    server.close()
    assert seen == [0]

    def shape(request: bytes) -> tuple[bytes, list[bytes], bytes]:
        head, body = request.split(b"\r\n\r\n", 1)
        line, *fields = head.split(b"\r\n")
        names = [field.split(b":", 1)[0] for field in fields]  # the values of the signature differ
        return line, names, body

    assert len(requests) == 2 and shape(requests[0]) == shape(requests[1])


def test_a_staged_connection_the_target_closed_before_the_second_is_replaced(raw_server: RawServer) -> None:
    raw_server.mode = "close_idle"
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 10)
    _wait_parked(executor)
    seen: list[int] = []
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 10, wait=_waiting(executor, 0.2, seen))
    assert outcome.succeeded, outcome.error
    assert seen == [0]
    assert [conn.request_at is not None for conn in raw_server.conns] == [False, True]


def test_a_staged_request_that_hangs_is_aborted_at_the_timeout(raw_server: RawServer) -> None:
    raw_server.mode = "hang"
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 0.5)
    _wait_parked(executor)
    seen: list[int] = []
    began = time.monotonic()
    outcome = executor.execute(_spec(raw_server.url), _delivery(), 0.5, wait=_waiting(executor, 0.1, seen))
    assert not outcome.succeeded and outcome.retriable and "timeout" in (outcome.error or "")
    assert seen == [0] and time.monotonic() - began < 2


def test_a_delivery_cancelled_while_it_waits_sends_nothing_and_closes_its_staged_connection(
    raw_server: RawServer,
) -> None:
    executor = TargetExecutor(_no_clients, LOCAL)
    executor.prepare(_spec(raw_server.url), 10)
    _wait_parked(executor)
    cancel = threading.Event()
    seen: list[int] = []
    threading.Timer(0.1, cancel.set).start()
    outcome = executor.execute(
        _spec(raw_server.url), _delivery(), 10, cancel=cancel, wait=_waiting(executor, 0.4, seen)
    )
    assert not outcome.succeeded and not outcome.retriable
    time.sleep(0.5)  # the delivery's thread ends its wait, and sends nothing
    (conn,) = raw_server.conns
    assert conn.request_at is None, "nothing was written"
    assert seen == [0] and executor._http._shelf._orders == {}

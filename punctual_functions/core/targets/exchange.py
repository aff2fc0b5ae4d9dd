"""One HTTP exchange's parts: its state shared between the thread doing it and the thread waiting
for it (``Exchange``), the connections that track their sockets and can hold their writes, and the
outcome of an answer (status, ``Retry-After``, a 4 KiB excerpt)."""

from __future__ import annotations

import contextlib
import email.utils
import socket
import threading
import time
from typing import Any

from urllib3 import BaseHTTPResponse
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError

from punctual_functions.core.targets.outcome import (
    EXCERPT_BYTES,
    TargetOutcome,
    excerpt_of,
    failure,
    success,
)

__all__ = ["Exchange", "TrackedHTTPConnection", "TrackedHTTPSConnection", "answer", "reason"]


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            return None
        seconds = moment.timestamp() - time.time()
    return min(max(seconds, 0.0), 86400.0)


def _http_status_outcome(
    status: int, location: str | None, retry_after: str | None, excerpt: bytes
) -> TargetOutcome:
    text = excerpt_of(excerpt)
    if 200 <= status < 300:
        return success(text, status)
    if status in (408, 429) or 500 <= status < 600:
        return failure(
            f"HTTP {status}",
            retriable=True,
            excerpt=text,
            status_code=status,
            retry_after_seconds=_retry_after(retry_after),
        )
    if 300 <= status < 400:
        where = f" to {location[:200]}" if location else ""
        return failure(
            f"HTTP {status}: redirect{where} not followed", retriable=False, excerpt=text, status_code=status
        )
    return failure(f"HTTP {status}", retriable=False, excerpt=text, status_code=status)


class Exchange:
    """State of one HTTP attempt shared between the thread doing it and the thread waiting for it.

    Aborting works by shutting the connection's socket down, which at once wakes a thread blocked reading
    from it. A duplicate of the socket's descriptor is kept for that: the TLS wrapper detaches the original
    socket object, and the duplicate keeps the descriptor number from being reused by an unrelated socket
    before we are done with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.aborted = False
        self.status: int | None = None
        self.location: str | None = None
        self.retry_after: str | None = None
        self.excerpt = bytearray()

    def track(self, sock: socket.socket) -> None:
        duplicate = sock.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.aborted:
                self._shutdown(duplicate)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            for sock in self._sockets:
                self._shutdown(sock)

    def adopt(self, other: Exchange) -> None:
        """Take over the sockets ``other`` tracks (a connection opened before this exchange)."""
        with other._lock:
            sockets, other._sockets = other._sockets, []
        with self._lock:
            self._sockets.extend(sockets)
            if self.aborted:
                for sock in sockets:
                    self._shutdown(sock)

    def release(self) -> None:
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def record_response(self, response: BaseHTTPResponse) -> None:
        with self._lock:
            self.status = response.status
            self.location = response.headers.get("Location")
            self.retry_after = response.headers.get("Retry-After")

    def add_body(self, chunk: bytes) -> None:
        with self._lock:
            self.excerpt += chunk

    def outcome_so_far(self) -> TargetOutcome | None:
        """Once the status line is in, the target has answered; later trouble only shortens the excerpt."""
        with self._lock:
            if self.status is None:
                return None
            return _http_status_outcome(self.status, self.location, self.retry_after, bytes(self.excerpt))

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Tracked:
    """A urllib3 connection whose socket its ``Exchange`` tracks (so that the waiting thread can
    abort it), and whose writes can be held: urllib3 composes the request as usual (the same bytes
    on the wire) while ``held`` is a list, and ``write_held`` sends them in one write later."""

    sock: Any
    held: list[bytes] | None = None

    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        self._exchange.track(sock)
        return sock

    def send(self, data: Any) -> None:
        if self.held is not None:
            self.held.append(bytes(data))
            return
        super().send(data)  # type: ignore[misc]

    def write_held(self) -> None:
        held, self.held = self.held or [], None
        self.sock.sendall(b"".join(held))


class TrackedHTTPConnection(_Tracked, HTTPConnection):
    pass


class TrackedHTTPSConnection(_Tracked, HTTPSConnection):
    pass


def answer(response: BaseHTTPResponse, exchange: Exchange) -> TargetOutcome:
    """The outcome of an answer whose status line is in: its status and up to 4 KiB of its body."""
    exchange.record_response(response)
    try:
        while len(exchange.excerpt) < EXCERPT_BYTES and not exchange.aborted:
            chunk = response.read1(EXCERPT_BYTES - len(exchange.excerpt))
            if not chunk:
                break
            exchange.add_body(chunk)
    except (HTTPError, OSError):
        pass  # the status decides the outcome; a broken body only shortens the excerpt
    with_body = exchange.outcome_so_far()
    return with_body if with_body is not None else failure("response lost", retriable=True)


def reason(exc: BaseException) -> str:
    """The innermost message of a wrapped network error, which is the part that explains it."""
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__

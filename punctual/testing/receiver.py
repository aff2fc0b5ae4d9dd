"""A webhook receiver for tests and benchmarks: records every delivery with its arrival time.

The arrival time is the kernel's: the moment the request's first bytes reached the receiver's socket
(Linux's ``SO_TIMESTAMPNS`` on each read), not the moment this process's Python got round to reading
them. The receiver is one Python process: when 30 requests arrive at one instant, its handler threads
parse them one after another under one interpreter lock, and a clock read after the parsing put up to
10 ms of the receiver's own queue into the last one's lateness. ``handled_at`` keeps that later
moment. Where the kernel gives no stamp (another system), both are the handler's clock.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from punctual.local.httpserver import LocalHTTPServer

# Linux's socket option and control message for receive times in nanoseconds (asm-generic/socket.h:
# SO_TIMESTAMPNS_OLD, with a struct timespec of two longs); Python's socket module does not name it.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
_STAMPS = sys.platform == "linux"


class _StampedReads(socket.SocketIO):
    """A socket's raw reads through ``recvmsg_into``, keeping the kernel's receive time of the last."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, "rb")
        self.stamp: float | None = None

    def readinto(self, b: Any) -> int | None:
        self._checkClosed()
        self._checkReadable()  # type: ignore[attr-defined]
        try:
            count, ancillary, _flags, _address = self._sock.recvmsg_into(  # type: ignore[attr-defined]
                [b], socket.CMSG_SPACE(_TIMESPEC.size)
            )
        except BlockingIOError:
            return None
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
                seconds, nanoseconds = _TIMESPEC.unpack_from(data)
                self.stamp = seconds + nanoseconds / 1e9
        return int(count)


@dataclass(frozen=True)
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    # Epoch seconds: when the request's first bytes reached the receiver's socket (the kernel's time).
    received_at: float
    # Epoch seconds: when this process had read the request line and headers (>= received_at).
    handled_at: float = 0.0

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def scheduled_for(self) -> str:
        return self.headers.get("Punctual-Scheduled-For", "")

    @property
    def idempotency_key(self) -> str:
        return self.headers.get("Idempotency-Key", "")


Responder = Callable[[str, int], tuple[int, bytes]]  # (path, nth delivery to this path) -> (status, body)


class Receiver:
    def __init__(self, responder: Responder | None = None) -> None:
        self.deliveries: list[Delivery] = []
        self.lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self.responder = responder or (lambda _path, _n: (200, b'{"ok": true}'))
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def setup(self) -> None:
                super().setup()
                self.reads: _StampedReads | None = None
                if _STAMPS:
                    try:
                        self.connection.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                    except OSError:
                        return
                    self.reads = _StampedReads(self.connection)
                    self.rfile = io.BufferedReader(self.reads, io.DEFAULT_BUFFER_SIZE)

            def handle_one_request(self) -> None:
                # The request's first bytes in the buffer: the read that brought them set the stamp.
                try:
                    if isinstance(self.rfile, io.BufferedReader):
                        self.rfile.peek(1)
                except OSError:
                    self.close_connection = True
                    return
                self.arrived = self.reads.stamp if self.reads is not None else None
                super().handle_one_request()

            def do_POST(self) -> None:
                handled_at = time.time()
                received_at = min(self.arrived or handled_at, handled_at)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.deliveries.append(
                        Delivery(self.path, dict(self.headers.items()), body, received_at, handled_at)
                    )
                    receiver._counts[self.path] += 1
                    count = receiver._counts[self.path]
                status, reply = receiver.responder(self.path, count)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = LocalHTTPServer(("127.0.0.1", 0), Handler)
        if _STAMPS:  # accepted sockets inherit it: a request sent with the connect is stamped too
            with contextlib.suppress(OSError):
                self.server.socket.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)

    def by_path(self) -> dict[str, list[Delivery]]:
        grouped: dict[str, list[Delivery]] = {}
        for delivery in self.snapshot():
            grouped.setdefault(delivery.path, []).append(delivery)
        return grouped

    def for_path(self, path: str) -> list[Delivery]:
        with self.lock:
            return [d for d in self.deliveries if d.path == path]

    def wait_for(self, path: str, count: int, timeout: float) -> list[Delivery]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.for_path(path)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        return self.for_path(path)

"""A webhook receiver for tests and benchmarks: records every delivery with its arrival time."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from punctual.local.httpserver import LocalHTTPServer


@dataclass(frozen=True)
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float  # epoch seconds, taken as soon as the request line and headers are read

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
        self.responder = responder or (lambda _path, _n: (200, b'{"ok": true}'))
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                received_at = time.time()
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.deliveries.append(
                        Delivery(self.path, dict(self.headers.items()), body, received_at)
                    )
                    count = sum(1 for d in receiver.deliveries if d.path == self.path)
                status, reply = receiver.responder(self.path, count)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = LocalHTTPServer(("127.0.0.1", 0), Handler)
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

"""The local listeners hold a burst of connections instead of making clients retry a second later."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

from punctual.local.httpserver import LocalHTTPServer


class NoContent(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


def test_a_burst_of_simultaneous_connections_is_accepted_without_a_retry() -> None:
    server = LocalHTTPServer(("127.0.0.1", 0), NoContent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    clients = 64
    barrier = threading.Barrier(clients)
    connect_seconds: list[float] = []
    sockets: list[socket.socket] = []
    lock = threading.Lock()

    def connect() -> None:
        barrier.wait()
        started = time.monotonic()
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        with lock:
            connect_seconds.append(time.monotonic() - started)
            sockets.append(connection)

    threads = [threading.Thread(target=connect) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        # With the standard library's backlog of 5, the kernel drops the extra handshakes and the
        # clients send them again after a second (Linux's first SYN retransmission).
        assert len(connect_seconds) == clients
        assert max(connect_seconds) < 0.9, sorted(connect_seconds)[-5:]
    finally:
        for connection in sockets:
            connection.close()
        server.shutdown()
        server.server_close()

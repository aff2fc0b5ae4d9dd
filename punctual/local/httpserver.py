"""The HTTP server every local listener uses: the API gateway, the demo's and the tests' receivers."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a listen backlog that holds a burst of connections.

    The standard library's backlog is 5: when more clients connect at the same moment (a burst of
    jobs due at one second calling one webhook, or many API clients), the kernel drops the extra
    connection attempts and the clients try again a second later. Seen in the precision benchmark as
    deliveries arriving 1 s late.
    """

    request_queue_size = 1024
    daemon_threads = True


def reply(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
    """Send a whole answer: ``headers`` (but the length and the connection's, which are the server's
    to set), the body's length, and the body unless the request was a HEAD."""
    handler.send_response(status)
    for key, value in headers.items():
        if key.lower() not in ("content-length", "connection"):
            handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)

"""The emulator's request handler: moto's, keeping HTTP/1.1 connections open.

werkzeug's development server closes the connection after every answer, because Python's
``http.server`` cannot find the next request in a stream whose body was left unread. Every request
then paid a new TCP connection, in the emulator and in the client (a third of the dispatcher's CPU a
dispatch in ``make bench``), where AWS's endpoints keep connections open. Here each request's body is
read whole before the application sees it, so the connection stays open for the next request.
"""

from __future__ import annotations

import io
import socket
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler

# A socket at its end (its peer closed): what werkzeug's drain after an answer sees of a kept
# connection, so that it finds the stream ended at once (it waits 10 ms for a socket with nothing).
_ENDED, _ITS_PEER = socket.socketpair()
_ITS_PEER.close()


class KeepAliveHandler(MotoRequestHandler):
    """moto's request handler, keeping an HTTP/1.1 connection open after an answer when the request's
    body has a length: the body is read whole before the application sees it, so the next request
    starts where it ends (werkzeug closes every connection because it cannot tell where an unread
    body ends, and after each answer drains the socket, which would swallow the next request)."""

    def setup(self) -> None:
        super().setup()
        # An answer goes out in several writes (its head, then its body): with Nagle's algorithm the
        # body waited for the client's delayed acknowledgement, 40 ms, once connections were kept.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def run_wsgi(self) -> None:
        length = self.headers.get("Content-Length") or "0"
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        self._reusable = self.request_version == "HTTP/1.1" and not chunked and length.isdigit()
        if not self._reusable:
            super().run_wsgi()
            return
        self._body = self.rfile.read(int(length))
        connection, rfile = self.connection, self.rfile
        self.connection, self.rfile = _ENDED, io.BytesIO()  # what werkzeug drains after the answer
        try:
            super().run_wsgi()
        finally:
            self.connection, self.rfile = connection, rfile

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        if self._reusable:
            environ["wsgi.input"] = io.BytesIO(self._body)
        return environ

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "transfer-encoding":
            self._reusable = False  # a chunked answer: closed after it, as werkzeug does
        if keyword.lower() == "connection" and value.lower() == "close" and getattr(self, "_reusable", False):
            value = "keep-alive"
        super().send_header(keyword, value)

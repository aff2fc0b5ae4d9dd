"""The HTTP server every local listener uses: the API gateway, the demo's and the tests' receivers."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LocalHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a listen backlog that holds a burst of connections.

    The standard library's backlog is 5: when more clients connect at the same moment (a burst of
    jobs due at one second calling one webhook, or many API clients), the kernel drops the extra
    connection attempts and the clients try again a second later. Seen in the precision benchmark as
    deliveries arriving 1 s late.
    """

    request_queue_size = 1024
    daemon_threads = True

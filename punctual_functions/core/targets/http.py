"""HTTP delivery: one urllib3 exchange with a vetted address, on connections the waiting thread can
abort (a deadline or a cancel shuts the socket down), and the classification of HTTP answers.

The name is resolved and checked against the network policy here, once, and the connection goes to the
vetted IP: urllib3 never resolves the name again, while Host, SNI and certificate checks use the name.
"""

from __future__ import annotations

import contextlib
import email.utils
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from urllib3 import BaseHTTPResponse, HTTPConnectionPool, HTTPSConnectionPool, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)

from punctual_functions.core.ssrf_guard import (
    ForbiddenAddressError,
    NetworkPolicy,
    TargetError,
    TargetURL,
    parse_target_url,
    resolve_and_check,
)
from punctual_functions.core.targets.outcome import (
    EXCERPT_BYTES,
    Delivery,
    TargetOutcome,
    delivery_headers,
    excerpt_of,
    failure,
    seconds_text,
    success,
)
from punctual_functions.core.targets.warm import ConnectionShelf, Parked

__all__ = ["Exchange", "HttpDelivery"]

# A connection opened before the second gives up after this long (the delivery then connects itself).
WARM_CONNECT_SECONDS = 5.0


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


class _TrackedHTTPConnection(HTTPConnection):
    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


class _TrackedHTTPSConnection(HTTPSConnection):
    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


class _ConnectFailed(Exception):
    """The TCP/TLS connection to one address could not be set up; another address may still work."""

    def __init__(self, outcome: TargetOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


class HttpDelivery:
    """Builds the work of one HTTP attempt; the executor runs it in a thread it can stop waiting for."""

    def __init__(self, policy: NetworkPolicy, user_agent: str, ca_certs: str | None) -> None:
        self._policy = policy
        self._user_agent = user_agent
        self._ca_certs = ca_certs
        self._shelf = ConnectionShelf()

    def prepare(self, target: Mapping[str, Any], budget: float) -> None:
        """Resolve and vet the target's address and open a connection to it, parked for the
        delivery due in a moment (``punctual_functions/core/targets/warm.py``). Raises what connecting
        raises; the caller ignores it (the delivery then connects, and reports the failure)."""
        url = parse_target_url(target["url"], self._policy)
        timeout = Timeout(connect=min(budget, WARM_CONNECT_SECONDS), read=budget)
        for address in resolve_and_check(url.host, url.port, self._policy):
            tracker = Exchange()
            pool = self._pool(url, address, timeout, tracker)
            try:
                conn = pool._get_conn()
                conn.connect()
                pool._put_conn(conn)
            except Exception:
                pool.close()
                tracker.release()
                continue
            self._shelf.park((url.scheme, url.host, url.port), Parked(address, pool, tracker))
            return

    def work(
        self,
        *,
        target: Mapping[str, Any],
        delivery: Delivery,
        body_text: str,
        budget: float,
        exchange: Exchange,
    ) -> Callable[[], TargetOutcome]:
        url = parse_target_url(target["url"], self._policy)
        method: str = target["method"]
        body = b"" if method == "GET" else body_text.encode("utf-8")

        headers: dict[str, str] = {"User-Agent": self._user_agent}
        if method != "GET":
            headers["Content-Type"] = "application/json"
        for name, value in target["headers"].items():
            for existing in [key for key in headers if key.lower() == name.lower()]:
                del headers[existing]
            headers[name] = value
        headers.update(delivery_headers(delivery, body, datetime.now(UTC)))
        headers["Host"] = url.host_header

        def work() -> TargetOutcome:
            # The bound counts from now: the request may have been composed ahead of its second.
            deadline = time.monotonic() + budget
            parked = self._shelf.take((url.scheme, url.host, url.port))
            if parked is not None:  # opened before the second: only the request goes out now
                try:
                    return self._send(
                        url=url,
                        address=parked.address,
                        method=method,
                        body=body,
                        headers=headers,
                        budget=budget,
                        remaining=deadline - time.monotonic(),
                        exchange=exchange,
                        parked=parked,
                    )
                except _ConnectFailed:
                    pass  # it was closed meanwhile and no request went out: connect as usual
            try:
                addresses = resolve_and_check(url.host, url.port, self._policy)
            except ForbiddenAddressError as exc:
                return failure(f"blocked: {exc.reason}", retriable=False)
            except TargetError as exc:
                return failure(f"invalid target: {exc}", retriable=False)
            except OSError as exc:
                return failure(f"DNS lookup failed for {url.host}: {exc}", retriable=True)
            outcome = failure(f"timeout after {seconds_text(budget)}", retriable=True)
            for address in addresses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or exchange.aborted:
                    break
                try:
                    return self._send(
                        url=url,
                        address=address,
                        method=method,
                        body=body,
                        headers=headers,
                        budget=budget,
                        remaining=remaining,
                        exchange=exchange,
                    )
                except _ConnectFailed as exc:
                    # Dual-stack names often list an address family the host cannot reach; try the next.
                    outcome = exc.outcome
            return outcome

        return work

    def _send(
        self,
        *,
        url: TargetURL,
        address: str,
        method: str,
        body: bytes,
        headers: Mapping[str, str],
        budget: float,
        remaining: float,
        exchange: Exchange,
        parked: Parked | None = None,
    ) -> TargetOutcome:
        timeout = Timeout(connect=max(0.001, min(remaining, budget)), read=budget)
        if parked is not None:
            pool = parked.pool
            pool.conn_kw["exchange"] = exchange  # a connection it opens anew is this exchange's
            exchange.adopt(parked.tracker)
        else:
            pool = self._pool(url, address, timeout, exchange)

        response: BaseHTTPResponse | None = None
        try:
            try:
                response = pool.urlopen(
                    method,
                    url.request_target,
                    body=None if method == "GET" else body,
                    headers=dict(headers),
                    timeout=timeout,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=False,
                    decode_content=True,
                    release_conn=False,
                )
            except NewConnectionError as exc:
                raise _ConnectFailed(failure(f"connection failed: {_reason(exc)}", retriable=True)) from exc
            except ConnectTimeoutError as exc:
                raise _ConnectFailed(
                    failure(f"connect timeout after {seconds_text(min(remaining, budget))}", retriable=True)
                ) from exc
            except ReadTimeoutError:
                return failure(f"timeout after {seconds_text(budget)}", retriable=True)
            except SSLError as exc:
                return failure(f"TLS error: {_reason(exc)}", retriable=True)
            except (HTTPError, OSError) as exc:
                return failure(f"connection error: {_reason(exc)}", retriable=True)

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
        finally:
            if response is not None:
                response.close()
            pool.close()

    def _pool(self, url: TargetURL, address: str, timeout: Timeout, exchange: Exchange) -> HTTPConnectionPool:
        """A pool of one connection to the vetted IP: urllib3 does not resolve the name again; Host,
        SNI and certificate verification still use the name from the URL."""
        pool: HTTPConnectionPool
        if url.scheme == "https":
            pool = HTTPSConnectionPool(
                address,
                url.port,
                timeout=timeout,
                maxsize=1,
                retries=False,
                cert_reqs="CERT_REQUIRED",
                ca_certs=self._ca_certs,
                assert_hostname=url.host,
                server_hostname=url.host,
                exchange=exchange,
            )
            pool.ConnectionCls = _TrackedHTTPSConnection
        else:
            pool = HTTPConnectionPool(
                address, url.port, timeout=timeout, maxsize=1, retries=False, exchange=exchange
            )
            pool.ConnectionCls = _TrackedHTTPConnection
        return pool

    # ------------------------------------------------------------------------------------------ AWS


def _reason(exc: BaseException) -> str:
    """The innermost message of a wrapped network error, which is the part that explains it."""
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__

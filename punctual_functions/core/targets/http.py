"""HTTP delivery: one urllib3 exchange with a vetted address, on connections the waiting thread can
abort (a deadline or a cancel shuts the socket down), and the classification of HTTP answers.

The name is resolved and checked against the network policy here, once, and the connection goes to the
vetted IP: urllib3 never resolves the name again, while Host, SNI and certificate checks use the name.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
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
from urllib3.util.wait import wait_for_read

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
from punctual_functions.core.targets.warm import ConnectionShelf, Order, Parked

__all__ = ["Exchange", "HttpDelivery", "HttpWork"]

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


class _Held:
    """A connection whose writes can be held: urllib3 composes the request as usual (the same bytes
    on the wire) while ``held`` is a list, and ``write_held`` sends them in one write later."""

    sock: Any
    held: list[bytes] | None = None

    def send(self, data: Any) -> None:
        if self.held is not None:
            self.held.append(bytes(data))
            return
        super().send(data)  # type: ignore[misc]

    def write_held(self) -> None:
        held, self.held = self.held or [], None
        self.sock.sendall(b"".join(held))


class _TrackedHTTPConnection(_Held, HTTPConnection):
    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


class _TrackedHTTPSConnection(_Held, HTTPSConnection):
    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


@dataclass
class _Staged:
    """A request composed onto a parked connection, its bytes not yet written."""

    parked: Parked
    conn: _TrackedHTTPConnection | _TrackedHTTPSConnection

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        self.parked.close()


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
            self._shelf.park(_origin(url), Parked(address, pool, tracker))
            return

    def work(
        self,
        *,
        target: Mapping[str, Any],
        delivery: Delivery,
        body_text: str,
        budget: float,
        exchange: Exchange,
    ) -> HttpWork:
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
        return HttpWork(self, url, method, body, headers, budget, exchange)

    def deliver(
        self,
        url: TargetURL,
        method: str,
        body: bytes,
        headers: Mapping[str, str],
        budget: float,
        exchange: Exchange,
    ) -> TargetOutcome:
        """Send the request on a parked connection, or connect (each vetted address in turn)."""
        deadline = time.monotonic() + budget
        parked = self._shelf.take(_origin(url))
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

            return _answer(response, exchange)
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


def _origin(url: TargetURL) -> tuple[str, str, int]:
    return (url.scheme, url.host, url.port)


def _answer(response: BaseHTTPResponse, exchange: Exchange) -> TargetOutcome:
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


class HttpWork:
    """One HTTP attempt, run on the executor's delivery thread: ``stage`` before the wait for the
    second (the request is composed onto a connection parked for it, ``warm.Order``), the call at the
    second (only the staged bytes are written; without a staged request, the request is sent as
    usual), ``close`` at the end either way."""

    def __init__(
        self,
        sender: HttpDelivery,
        url: TargetURL,
        method: str,
        body: bytes,
        headers: dict[str, str],
        budget: float,
        exchange: Exchange,
    ) -> None:
        self._http = sender
        self._url = url
        self._method = method
        self._body = body
        self._headers = headers
        self._budget = budget
        self._exchange = exchange
        self._order: Order | None = None

    def stage(self) -> None:
        self._order = Order(self._compose)
        self._http._shelf.order(_origin(self._url), self._order)

    def __call__(self) -> TargetOutcome:
        staged = self._withdraw()
        if staged is not None:
            outcome = self._fire(staged)
            if outcome is not None:
                return outcome
        return self._http.deliver(
            self._url, self._method, self._body, self._headers, self._budget, self._exchange
        )

    def close(self) -> None:
        staged = self._withdraw()
        if staged is not None:
            staged.close()

    def _withdraw(self) -> _Staged | None:
        order, self._order = self._order, None
        if order is None:
            return None
        self._http._shelf.cancel(_origin(self._url), order)
        staged: _Staged | None = order.withdraw()
        return staged

    def _compose(self, parked: Parked) -> _Staged:
        """urllib3 composes the request onto the parked connection; its writes are held."""
        conn = parked.pool._get_conn()
        if not isinstance(conn, _TrackedHTTPConnection | _TrackedHTTPSConnection) or conn.sock is None:
            raise ValueError("not a connected, tracked connection")
        staged = _Staged(parked, conn)
        try:
            self._exchange.adopt(parked.tracker)
            conn.held = []
            conn.timeout = self._budget  # the read's bound: request() and getresponse() set it on the socket
            conn.request(
                self._method,
                self._url.request_target,
                body=None if self._method == "GET" else self._body,
                headers=dict(self._headers),
                preload_content=False,
                decode_content=True,
            )
        except Exception:
            staged.close()
            raise
        return staged

    def _fire(self, staged: _Staged) -> TargetOutcome | None:
        """Write the staged request and read the answer; None if the connection was closed meanwhile
        and nothing went out (the caller then connects as usual)."""
        conn = staged.conn
        try:
            if conn.sock is None or wait_for_read(conn.sock, timeout=0.0):  # at EOF: the target closed it
                staged.close()
                return None
            conn.write_held()
        except (OSError, ValueError):
            staged.close()  # not all of it was written: the target cannot have acted on a part
            return None
        response: BaseHTTPResponse | None = None
        try:
            try:
                response = conn.getresponse()
            except TimeoutError:
                return failure(f"timeout after {seconds_text(self._budget)}", retriable=True)
            except ssl.SSLError as exc:
                return failure(f"TLS error: {_reason(exc)}", retriable=True)
            except (http.client.HTTPException, HTTPError, OSError) as exc:
                return failure(f"connection error: {_reason(exc)}", retriable=True)
            return _answer(response, self._exchange)
        finally:
            if response is not None:
                response.close()
            staged.close()


def _reason(exc: BaseException) -> str:
    """The innermost message of a wrapped network error, which is the part that explains it."""
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__

"""HTTP delivery: one urllib3 exchange with a vetted address, on connections the waiting thread can
abort (a deadline or a cancel shuts the socket down), and the classification of HTTP answers.

The name is resolved and checked against the network policy here, once, and the connection goes to the
vetted IP: urllib3 never resolves the name again, while Host, SNI and certificate checks use the name.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from urllib3 import BaseHTTPResponse, HTTPConnectionPool, HTTPSConnectionPool, Timeout
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
from punctual_functions.core.targets.exchange import (
    Exchange,
    TrackedHTTPConnection,
    TrackedHTTPSConnection,
    answer,
    reason,
)
from punctual_functions.core.targets.outcome import (
    Delivery,
    TargetOutcome,
    delivery_headers,
    failure,
    seconds_text,
)
from punctual_functions.core.targets.staged import HttpWork, origin
from punctual_functions.core.targets.warm import ConnectionShelf, Parked

__all__ = ["HttpDelivery"]

# A connection opened before the second gives up after this long (the delivery then connects itself).
WARM_CONNECT_SECONDS = 5.0


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
            self._shelf.park(origin(url), Parked(address, pool, tracker))
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
        parked = self._shelf.take(origin(url))
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
                raise _ConnectFailed(failure(f"connection failed: {reason(exc)}", retriable=True)) from exc
            except ConnectTimeoutError as exc:
                raise _ConnectFailed(
                    failure(f"connect timeout after {seconds_text(min(remaining, budget))}", retriable=True)
                ) from exc
            except ReadTimeoutError:
                return failure(f"timeout after {seconds_text(budget)}", retriable=True)
            except SSLError as exc:
                return failure(f"TLS error: {reason(exc)}", retriable=True)
            except (HTTPError, OSError) as exc:
                return failure(f"connection error: {reason(exc)}", retriable=True)

            return answer(response, exchange)
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
            pool.ConnectionCls = TrackedHTTPSConnection
        else:
            pool = HTTPConnectionPool(
                address, url.port, timeout=timeout, maxsize=1, retries=False, exchange=exchange
            )
            pool.ConnectionCls = TrackedHTTPConnection
        return pool

    # ------------------------------------------------------------------------------------------ AWS

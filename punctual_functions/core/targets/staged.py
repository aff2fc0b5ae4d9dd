"""An HTTP attempt whose request is composed before its second (``HttpWork``): ordered onto a
connection parked for it (``warm.Order``), its bytes written at the second."""

from __future__ import annotations

import contextlib
import http.client
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from urllib3 import BaseHTTPResponse
from urllib3.exceptions import HTTPError
from urllib3.util.wait import wait_for_read

from punctual_functions.core.ssrf_guard import TargetURL
from punctual_functions.core.targets.exchange import (
    Exchange,
    TrackedHTTPConnection,
    TrackedHTTPSConnection,
    answer,
    reason,
)
from punctual_functions.core.targets.outcome import TargetOutcome, failure, seconds_text
from punctual_functions.core.targets.warm import Order, Parked

if TYPE_CHECKING:
    from punctual_functions.core.targets.http import HttpDelivery

__all__ = ["HttpWork", "origin"]


def origin(url: TargetURL) -> tuple[str, str, int]:
    return (url.scheme, url.host, url.port)


@dataclass
class _Staged:
    """A request composed onto a parked connection, its bytes not yet written."""

    parked: Parked
    conn: TrackedHTTPConnection | TrackedHTTPSConnection

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        self.parked.close()


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
        self._http._shelf.order(origin(self._url), self._order)

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
        self._http._shelf.cancel(origin(self._url), order)
        staged: _Staged | None = order.withdraw()
        return staged

    def _compose(self, parked: Parked) -> _Staged:
        """urllib3 composes the request onto the parked connection; its writes are held."""
        conn = parked.pool._get_conn()
        if not isinstance(conn, TrackedHTTPConnection | TrackedHTTPSConnection) or conn.sock is None:
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
                return failure(f"TLS error: {reason(exc)}", retriable=True)
            except (http.client.HTTPException, HTTPError, OSError) as exc:
                return failure(f"connection error: {reason(exc)}", retriable=True)
            return answer(response, self._exchange)
        finally:
            if response is not None:
                response.close()
            staged.close()

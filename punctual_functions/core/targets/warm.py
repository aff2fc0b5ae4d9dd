"""Connections opened before a run's second, so that at the second only the request goes out.

A worker holds a message for its head start (250 ms) before the run is due. It uses that time to
resolve and vet the target's address and open the TCP (and TLS) connection; at the second, the
delivery takes the parked connection and sends its request at once. Opening connections at the
second cost a burst of runs due together most of its lateness: 20 POSTs sent at one instant reached a
local receiver 8 to 11 ms late (p50), 13 to 22 ms for the last, and 2.6 / 5 to 9 ms on connections
opened beforehand (CHANGELOG.md, issue 26). On AWS a remote target adds a round trip (and TLS's) more.

A parked connection serves one request (it is never shared between runs) and is closed if nobody
takes it within ``PARK_SECONDS`` (a run cancelled meanwhile). Warming is best effort: any failure
leaves the delivery to connect as before, and report the failure itself.

The request is composed onto the connection before the second too (an :class:`Order`): the delivery's
thread orders a connection to its origin while it waits; the first connection parked for that origin
(or one already there) fills the order by writing the request into the connection's buffer, not yet to
the socket. At the second only its bytes are written. Composing it at the second through urllib3 took
about half a millisecond of CPU under the interpreter lock, so the last of 30 runs due at one second
in one process went out 10 to 13 ms after it; with the requests composed before, 4 to 6 ms.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from urllib3 import HTTPConnectionPool
from urllib3.util.wait import wait_for_read

# A parked connection nobody took within this long is closed.
PARK_SECONDS = 10.0
# At most this many parked connections per origin (a burst of runs due together to one target).
PARK_LIMIT = 64


@dataclass
class Parked:
    """A connected pool of one connection to a vetted ``address``, and the tracker holding a
    duplicate of its socket (``Exchange``), which the delivery adopts to be able to abort it."""

    address: str
    pool: HTTPConnectionPool
    tracker: Any
    parked_at: float = field(default_factory=time.monotonic)

    def usable(self, now: float) -> bool:
        """Fresh, and not closed by the other side meanwhile (an idle socket that reads is at EOF)."""
        if now - self.parked_at > PARK_SECONDS:
            return False
        conn = self.pool.pool.queue[0] if self.pool.pool is not None and self.pool.pool.queue else None
        sock = getattr(conn, "sock", None)
        if sock is None:
            return False
        try:
            return not wait_for_read(sock, timeout=0.0)
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()
        with contextlib.suppress(Exception):
            self.tracker.release()


class Order:
    """A delivery's wish for a parked connection with its request composed on it.

    ``compose`` writes the request onto a parked connection (the thread that fills the order runs it)
    and returns what the delivery sends at the second, or raises (then the order stays unfilled and the
    delivery connects at the second as without it)."""

    def __init__(self, compose: Callable[[Parked], Any]) -> None:
        self._compose = compose
        self._settled = threading.Event()
        self._lock = threading.Lock()
        self._withdrawn = False
        self.staged: Any = None

    def fill(self, parked: Parked) -> None:
        try:
            staged = self._compose(parked)
        except Exception:
            parked.close()
            staged = None
        with self._lock:
            if self._withdrawn:  # given up on while composing: nobody will send it
                _discard(staged, parked)
            else:
                self.staged = staged
        self._settled.set()

    def withdraw(self) -> Any:
        """What was staged, once any fill under way has ended (None: nothing); the order is over."""
        self._settled.wait()
        with self._lock:
            self._withdrawn = True
            staged, self.staged = self.staged, None
        return staged

    def settle_unfilled(self) -> None:
        self._settled.set()


def _discard(staged: Any, parked: Parked) -> None:
    close = getattr(staged, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()
    parked.close()


class ConnectionShelf:
    """Parked connections by origin (scheme, host, port), oldest first, and the orders waiting for one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parked: dict[tuple[str, str, int], list[Parked]] = {}
        self._orders: dict[tuple[str, str, int], list[Order]] = {}

    def park(self, origin: tuple[str, str, int], parked: Parked) -> None:
        order: Order | None = None
        with self._lock:
            expired = self._expired(time.monotonic())
            waiting = self._orders.get(origin)
            if waiting:
                order = waiting.pop(0)
                if not waiting:
                    del self._orders[origin]
            else:
                shelf = self._parked.setdefault(origin, [])
                if len(shelf) >= PARK_LIMIT:
                    expired.append(parked)
                else:
                    shelf.append(parked)
        for old in expired:
            old.close()
        if order is not None:
            order.fill(parked)

    def order(self, origin: tuple[str, str, int], order: Order) -> None:
        """Fill ``order`` now from a parked connection, or when the next one for ``origin`` is parked.
        The delivery calls ``cancel`` (then ``withdraw``) at its second either way."""
        taken = self.take(origin)
        if taken is not None:
            order.fill(taken)
            return
        with self._lock:
            self._orders.setdefault(origin, []).append(order)

    def cancel(self, origin: tuple[str, str, int], order: Order) -> None:
        """No more filling ``order`` from connections parked from now on."""
        with self._lock:
            waiting = self._orders.get(origin, [])
            if order in waiting:
                waiting.remove(order)
                if not waiting:
                    del self._orders[origin]
                order.settle_unfilled()

    def take(self, origin: tuple[str, str, int]) -> Parked | None:
        """The oldest usable connection to ``origin``, or None (then the delivery connects)."""
        now = time.monotonic()
        unusable: list[Parked] = []
        taken: Parked | None = None
        with self._lock:
            shelf = self._parked.get(origin, [])
            while shelf and taken is None:
                candidate = shelf.pop(0)
                if candidate.usable(now):
                    taken = candidate
                else:
                    unusable.append(candidate)
            if not shelf:
                self._parked.pop(origin, None)
        for old in unusable:
            old.close()
        return taken

    def __len__(self) -> int:
        with self._lock:
            return sum(len(shelf) for shelf in self._parked.values())

    def _expired(self, now: float) -> list[Parked]:
        """Remove and return the connections parked too long (called with the lock held)."""
        expired: list[Parked] = []
        for origin in list(self._parked):
            keep = [p for p in self._parked[origin] if now - p.parked_at <= PARK_SECONDS]
            expired += [p for p in self._parked[origin] if now - p.parked_at > PARK_SECONDS]
            if keep:
                self._parked[origin] = keep
            else:
                del self._parked[origin]
        return expired

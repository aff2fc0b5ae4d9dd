"""Time and concurrency as the engine sees them: one small port, so that the same logic runs on the
system's clock (AWS, the local stack) and in virtual time (tests; the simulator, ``punctual/sim/``).

The api service, the dispatcher and the worker take a ``Clock``; none of them reads the time, sleeps,
waits on an event or starts a thread any other way (``tests/unit/test_clock.py`` pins it). Waiting
and running concurrently belong to the same port as the time: in virtual time whatever keeps the
time must also schedule everything that waits on it, or a thread of its own would wait in real time
for a moment the virtual clock reaches in microseconds. The network edge (``core/targets``: real
sockets, real deadlines) and the worker's batch handler (the invocation around the records) keep the
system's own time and threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Final, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Joinable(Protocol):
    def join(self, timeout: float | None = None) -> None:
        """Wait for the background work to end, at most ``timeout`` seconds."""


class Monotonic(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for intervals (``time.monotonic``)."""


class Clock(Protocol):
    def __call__(self) -> datetime:
        """Now, timezone-aware UTC."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (virtual clocks move on instead)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for intervals (``time.monotonic``)."""

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait until ``event`` is set or ``timeout`` seconds have passed; whether it is set."""

    def parallel(self, function: Callable[[T], R], items: Sequence[T], workers: int, name: str) -> list[R]:
        """``function`` over ``items``, up to ``workers`` at a time; the results in their order."""

    def start(self, function: Callable[[], None], name: str) -> Joinable:
        """Run ``function`` in the background (the caller joins it before its invocation ends)."""


class SystemClock:
    """The production clock: the system's time, ``time.sleep`` and threads."""

    def __call__(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(timeout)

    def parallel(self, function: Callable[[T], R], items: Sequence[T], workers: int, name: str) -> list[R]:
        if workers <= 1 or len(items) <= 1:
            return [function(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix=name) as pool:
            return list(pool.map(function, items))

    def start(self, function: Callable[[], None], name: str) -> Joinable:
        thread = threading.Thread(target=function, name=name, daemon=True)
        thread.start()
        return thread


SYSTEM_CLOCK: Final = SystemClock()


def sleep_until(clock: Clock, moment: datetime) -> None:
    """Sleep until ``moment``, never waking before it (a sleep overshoots by a fraction of a
    millisecond; no spinning)."""
    while (remaining := (moment - clock()).total_seconds()) > 0:
        clock.sleep(max(remaining, 0.0001))

"""Time as the engine reads it: one small port, so that the same logic runs on the system's clock
(AWS, the local stack) and in virtual time (tests; a simulation).

The api service, the dispatcher and the worker take a ``Clock``; none of them reads the time or
sleeps any other way (``tests/unit/test_clock.py`` pins it). The network edge (``core/targets``:
real sockets, real deadlines) and the monotonic timers that pace SQS visibility keep the system's
own time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Final, Protocol


class Clock(Protocol):
    def __call__(self) -> datetime:
        """Now, timezone-aware UTC."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (virtual clocks move on instead)."""


class SystemClock:
    """The production clock: the system's time and ``time.sleep``."""

    def __call__(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Final = SystemClock()


def sleep_until(clock: Clock, moment: datetime) -> None:
    """Sleep until ``moment``, never waking before it (a sleep overshoots by a fraction of a
    millisecond; no spinning)."""
    while (remaining := (moment - clock()).total_seconds()) > 0:
        clock.sleep(max(remaining, 0.0001))

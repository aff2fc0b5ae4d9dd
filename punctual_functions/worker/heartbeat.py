"""The heartbeat of a running attempt: it renews the run's lease and hides its message meanwhile.

A lease is how long other workers wait before they take a RUNNING attempt over (its worker died).
Short attempts keep the short lease of the settings (``lease_seconds``, 4 s): a worker dying in the
first seconds of an attempt is replaced within seconds. A long attempt's lease grows with its age
(``lease_for``): each beat costs a conditional write and an SQS call, and an 840 s attempt beating
every 1.3 s would make about 630 of each; with the lease at half the attempt's age (at most
``MAX_LEASE_SECONDS``), it makes about 45. The price: a worker that dies ten minutes into an attempt
is replaced up to two minutes later, and a cancel reaches a long call at its next beat (a third of
its lease), which is what a ``cancel_other`` start waits for (``next_beat_by``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from punctual_functions.core.clock import Clock, Joinable
from punctual_functions.core.model import Run
from punctual_functions.core.observability import logger

if TYPE_CHECKING:
    from punctual_functions.core.ports import Queue, RunStore

# The lease is this share of the attempt's age, once that exceeds the base lease...
LEASE_GROWTH: Final = 0.5
# ...up to this: the longest a dead worker's attempt waits before another worker takes it over.
MAX_LEASE_SECONDS: Final = 120
# A beat renews the lease when a third of it has passed: two beats may fail before the lease ends.
BEATS_PER_LEASE: Final = 3
MIN_BEAT_SECONDS: Final = 1.0
# The first beat comes at least this long before the worker's hold of the message runs out.
FIRST_BEAT_MARGIN_SECONDS: Final = 0.5


def lease_for(age_seconds: float, base: int) -> int:
    """The lease (seconds) a beat takes for an attempt that has run ``age_seconds``."""
    return max(base, min(MAX_LEASE_SECONDS, math.floor(age_seconds * LEASE_GROWTH)))


def beat_interval(lease_seconds: float) -> float:
    """How long after a beat that took ``lease_seconds`` the next one comes."""
    return max(MIN_BEAT_SECONDS, lease_seconds / BEATS_PER_LEASE)


def beats_for(duration_seconds: float, base: int) -> int:
    """How many beats (each a write and an SQS call) an attempt of ``duration_seconds`` makes."""
    age, beats = beat_interval(base), 0
    while age < duration_seconds:
        beats += 1
        age += beat_interval(lease_for(age, base))
    return beats


def next_beat_by(run: Run, base: int, now: datetime) -> datetime:
    """The latest moment by which the worker holding ``run`` (RUNNING, with a lease) beats next.

    A beat at ``t`` sets ``lease_until = t + L`` and the next one comes at ``t + L / 3``, so by
    ``lease_until - 2 L / 3``. ``L`` is at least the base lease: with ``L = base`` the bound holds
    whatever the attempt's age (later than the true beat for a long attempt, never earlier). A beat
    already overdue (its write is slow, or its worker died) is given one more base interval.
    """
    lease = lease_for(0, base)
    if run.lease_until is not None:
        bound = run.lease_until - timedelta(seconds=lease - beat_interval(lease))
        if bound > now:
            return bound
    return now + timedelta(seconds=beat_interval(lease))


@dataclass(frozen=True)
class AgeAlarm:
    """Call ``action`` (with the attempt's age) once the attempt has run ``after_seconds``."""

    after_seconds: float
    action: Callable[[float], None]


class Heartbeat:
    """Renews the run's lease and the message's visibility while the target runs.

    It also notices when the run was cancelled or taken over (the renewal is refused), and then
    sets ``lost``: the target's call watches it and aborts. ``alarm`` fires once at its age (the
    ``running_long`` alert), between beats if need be.
    """

    def __init__(
        self,
        store: RunStore,
        queue: Queue,
        run: Run,
        receipt_handle: str | None,
        *,
        base_lease: int,
        clock: Clock,
        alarm: AgeAlarm | None = None,
        hidden_until: float | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.run = run
        self.receipt_handle = receipt_handle
        self.base_lease = base_lease
        self.clock = clock
        self.alarm = alarm
        self.started = clock.monotonic()
        # When the worker's hold of the message or the attempt's lease runs out, whichever is first
        # (the clock's monotonic time): the first beat must come before. Normally the hold ends 2 s
        # after the second and the first beat comes 1.3 s after it; a message received late, or a
        # start write that was slow (a throttled table), may have less left.
        self.hidden_until = hidden_until
        self.beats = 0
        self.stopped = threading.Event()
        self.lost = threading.Event()
        self.thread: Joinable | None = None

    def __enter__(self) -> Heartbeat:
        self.thread = self.clock.start(self._run, f"heartbeat-{self.run.run_id}")
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True once stopped."""
        return self.clock.wait(self.stopped, seconds)

    def _age(self) -> float:
        return self.clock.monotonic() - self.started

    def _run(self) -> None:
        next_beat = beat_interval(self.base_lease)
        if self.hidden_until is not None:
            left = self.hidden_until - self.started - FIRST_BEAT_MARGIN_SECONDS
            next_beat = max(0.0, min(next_beat, left))
        alarm = self.alarm
        while True:
            wake = next_beat if alarm is None else min(next_beat, alarm.after_seconds)
            if self.wait(max(0.0, wake - self._age())):
                return
            age = self._age()
            if alarm is not None and age >= alarm.after_seconds:
                self._ring(alarm, age)
                alarm = None
            if age < next_beat:
                continue
            lease = lease_for(age, self.base_lease)
            if not self.beat(lease):
                return
            next_beat = age + beat_interval(lease)

    def beat(self, lease: int) -> bool:
        """One renewal; False once the run is no longer ours (the caller stops beating)."""
        self.beats += 1
        until = self.clock() + timedelta(seconds=lease)
        try:
            # The message first: SQS answers in milliseconds, while a write to a busy table may take
            # longer than the third of a lease left, and the message must not reappear meanwhile.
            if self.receipt_handle:
                self.queue.change_visibility(self.receipt_handle, lease)
        except Exception:  # a missed beat is not fatal: the visibility still has two thirds to go
            logger.exception("heartbeat: visibility not extended", extra={"run_id": self.run.run_id})
        try:
            if not self.store.renew_lease(self.run, until):
                self.lost.set()
                return False
        except Exception:  # likewise for the lease
            logger.exception("heartbeat: lease not renewed", extra={"run_id": self.run.run_id})
        return True

    def _ring(self, alarm: AgeAlarm, age: float) -> None:
        try:
            alarm.action(age)
        except Exception:  # an alert is not worth the heartbeat
            logger.exception("heartbeat alarm failed", extra={"run_id": self.run.run_id})

"""The emulator's table turns: DynamoDB requests served one at a time, their senders taking turns."""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator


class TurnLock:
    """A lock whose waiters take turns by sender: ``weight(sender)`` requests of each waiting sender
    in round-robin order (one by default), a sender's own requests in their order of arrival.

    DynamoDB serves its clients side by side; the emulator serves them one at a time (see
    ``SerializedDynamoDB``). With a plain lock, whichever request the scheduler woke got the table
    next, so a dispatcher's tick (a hundred requests from 16 threads) queued ahead of a worker's
    start write, which then reached its target hundreds of milliseconds late: an artefact of the
    emulator, not of the design. Taking turns bounds a sender's wait to a few requests of each other.
    """

    def __init__(self, weight: Callable[[str], int] = lambda _sender: 1) -> None:
        self._condition = threading.Condition()
        self._held = False
        self._weight = weight
        # Waiting tickets by sender; the dict's order is the turn order (a sender served goes last).
        self._waiting: dict[str, collections.deque[object]] = {}
        # How many requests in a row the sender at the front has had.
        self._in_a_row = 0

    @contextlib.contextmanager
    def turn(self, sender: str) -> Iterator[None]:
        self.acquire(sender)
        try:
            yield
        finally:
            self.release()

    def acquire(self, sender: str) -> None:
        with self._condition:
            ticket = object()
            self._waiting.setdefault(sender, collections.deque()).append(ticket)
            while self._held or self._next() is not ticket:
                self._condition.wait()
            queue = self._waiting.pop(sender)
            queue.popleft()
            self._in_a_row += 1
            if queue and self._in_a_row < self._weight(sender):
                self._waiting = {sender: queue, **self._waiting}  # its turn goes on
            else:
                self._in_a_row = 0
                if queue:
                    self._waiting[sender] = queue  # its next request waits for the others' turns
            self._held = True

    def release(self) -> None:
        with self._condition:
            self._held = False
            self._condition.notify_all()

    def _next(self) -> object:
        return next(iter(self._waiting.values()))[0]


# A worker's request takes up to this many turns in a row on the emulator's table. On DynamoDB a
# worker's start write does not wait for the dispatcher's reads at all; here, taking one turn each,
# the start writes of the runs due just after a minute tick (whose sweep reads hundreds of runs) each
# waited for one of the sweep's requests, 30 to 50 ms apiece, and were made after their second: 24
# runs due one second after the tick, up to 250 ms late. The dispatcher works a minute and more ahead.
WORKER_TURNS = 8


def turns_of(sender: str) -> int:
    return WORKER_TURNS if sender.startswith("worker") else 1

"""The calls due at one moment go out before any of them has its outcome written.

At a busy second an execution environment calls many targets at once: the records of a batch due
together, or (locally, where one process runs many invocations) the runs the API sent one message
at a time. Each run's outcome then costs a table write and its message's deletion, requests whose
CPU (the SDK composing them) the calls still to be sent need at that very moment: measured locally
with twenty runs due at one second, the last calls reached their target 40-50 ms after it. So an
attempt's outcome waits until every call of this environment due at its moment has returned, or
``OUTCOME_GRACE`` after that moment if one takes longer (a slow target does not hold the others'
outcomes back for more than that).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from punctual_functions.core.clock import Clock

# The longest an outcome waits, counted from its due time, for the other calls due with it.
OUTCOME_GRACE: Final = timedelta(milliseconds=250)


@dataclass
class _Moment:
    calls: int = 0
    returned: threading.Event = field(default_factory=threading.Event)


class CallsDue:
    """The calls of one environment (one executor) that are due or under way, by due time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._moments: dict[datetime, _Moment] = {}

    def expect(self, due: datetime) -> None:
        """A call due at ``due`` is about to wait for its second and go out."""
        with self._lock:
            self._moments.setdefault(due, _Moment()).calls += 1

    def returned(self, due: datetime) -> None:
        """The call ``expect``-ed at ``due`` has returned (or failed, or never went out)."""
        with self._lock:
            moment = self._moments.get(due)
            if moment is None:
                return
            moment.calls -= 1
            if moment.calls <= 0:
                del self._moments[due]
                moment.returned.set()

    def wait_for_the_others(self, due: datetime, clock: Clock) -> None:
        """Wait until every call due at ``due`` has returned, at most until ``due + OUTCOME_GRACE``."""
        with self._lock:
            moment = self._moments.get(due)
        if moment is None:
            return
        remaining = (due + OUTCOME_GRACE - clock()).total_seconds()
        if remaining > 0:
            clock.wait(moment.returned, remaining)

"""An attempt's outcome is written once the calls due at its second have returned
(``punctual_functions/worker/calls.py``), and never more than the grace after that second."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from punctual_functions.worker.calls import OUTCOME_GRACE, CallsDue
from tests.conftest import Clock

DUE = datetime(2026, 11, 28, 12, 0, 5, tzinfo=UTC)


class WaitingClock(Clock):
    """Event waits in virtual time: a wait that is not ended by its event moves the clock on by its
    timeout; each wait's timeout is recorded."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.waits: list[float] = []

    def wait(self, event: threading.Event, timeout: float) -> bool:
        self.waits.append(timeout)
        if event.is_set():
            return True
        self.advance(timeout)
        return False


def test_an_outcome_waits_for_the_calls_due_with_it_until_the_grace_at_most() -> None:
    clock = WaitingClock(DUE + timedelta(milliseconds=3))
    calls = CallsDue()
    calls.expect(DUE)
    calls.expect(DUE)
    calls.returned(DUE)  # the first call is back; the second is still under way
    calls.wait_for_the_others(DUE, clock)
    assert clock.waits == [(OUTCOME_GRACE - timedelta(milliseconds=3)).total_seconds()]
    assert clock() == DUE + OUTCOME_GRACE


def test_once_every_call_of_its_second_has_returned_an_outcome_does_not_wait() -> None:
    clock = WaitingClock(DUE + timedelta(milliseconds=3))
    calls = CallsDue()
    for _ in range(3):
        calls.expect(DUE)
    for _ in range(3):
        calls.returned(DUE)
    calls.wait_for_the_others(DUE, clock)
    assert clock.waits == []


def test_the_last_call_of_a_second_to_return_wakes_the_outcomes_waiting_for_it() -> None:
    calls = CallsDue()
    calls.expect(DUE)
    calls.expect(DUE)
    calls.returned(DUE)
    woken = threading.Event()

    class RealWait(WaitingClock):
        def wait(self, event: threading.Event, timeout: float) -> bool:
            woken.set()
            return event.wait(5)

    waiter = threading.Thread(target=calls.wait_for_the_others, args=(DUE, RealWait(DUE)))
    waiter.start()
    assert woken.wait(5)
    calls.returned(DUE)
    waiter.join(5)
    assert not waiter.is_alive()


def test_calls_of_other_seconds_and_late_outcomes_are_not_waited_for() -> None:
    calls = CallsDue()
    calls.expect(DUE + timedelta(seconds=1))  # the next second's call
    calls.expect(DUE)
    clock = WaitingClock(DUE + timedelta(milliseconds=1))
    calls.returned(DUE)
    calls.wait_for_the_others(DUE, clock)
    assert clock.waits == []
    # A call of a second long gone: past the grace, its outcome is written at once.
    calls.expect(DUE)
    late = WaitingClock(DUE + OUTCOME_GRACE + timedelta(seconds=1))
    calls.wait_for_the_others(DUE, late)
    assert late.waits == []

"""A record's arrival: its message hidden for its wait, its run and job read, the wait for its second.

A batch arrives as one: ``Arrival.receive`` hides the batch's dispatched messages in one request and
reads all their runs and jobs in another, before the records' threads start. Ten records due at one
second used to make twenty requests on their way to their calls, which a table that is slow for a
moment (or the local emulator, which serves one request at a time) answered one after another.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from punctual_functions.core import pacing
from punctual_functions.core.clock import sleep_until
from punctual_functions.core.limits import Limit
from punctual_functions.core.model import Job, Run
from punctual_functions.core.observability import logger
from punctual_functions.core.queue import WorkMessage
from punctual_functions.worker.context import ReturnLater, WorkerContext

# How long past the due time a held message stays hidden if its worker dies. Longer than the first
# heartbeat (a third of a lease after the second: 1.3 s by default), which then keeps it hidden while
# the attempt runs. Short, so that a message whose worker died comes back within seconds.
HOLD_MARGIN_SECONDS: Final = 2
# The job is read again and the attempt's conditional start (a table write) is made this long before
# the second, so that nothing but a sleep stands between the second and the call to the target: a
# table that is slow for a moment (a dispatcher's burst of dispatches) no longer makes the call late. The
# price: a pause, cancel or change made in the last half second before a due time may not stop that
# run. Half a second covers the table's slow moments seen locally (a few hundred ms).
# Must stay well under two thirds of a lease, so that the first heartbeat comes before the lease ends.
PRESTART_SECONDS: Final = 0.5


@dataclass(frozen=True)
class Arrived:
    """What ``receive`` read for one record: its run and job as they were when it arrived."""

    at: datetime
    run: Run | None
    job: Job | None


class Arrival:
    """The holds and first reads of one executor's records, keyed by receipt handle (unique to a
    delivery, so the concurrent invocations of the local runtime never share one)."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context
        # When each held message becomes visible again (the clock's monotonic time), for its
        # attempt's first beat.
        self.hidden_until: dict[str, float] = {}
        self.arrived: dict[str, Arrived] = {}

    def receive(
        self, records: list[tuple[WorkMessage, str]], owners: Collection[str] = ()
    ) -> dict[str, list[Limit]]:
        """A batch arrived: hide its dispatched messages for their waits in one request and read its
        runs and jobs in one more, with the target limits of ``owners``
        (``punctual_functions/worker/limiting``).
        Best effort: a record whose hold or read failed here makes its own as it is handled."""
        if not records:
            return {}
        now = self.context.clock()
        holds: dict[str, float] = {}
        for message, receipt_handle in records:
            remaining = self._announced_wait(message, now)
            if remaining is not None:
                holds[receipt_handle] = remaining
        if holds:
            self._hold_all(holds)
        keys = [(message.job_id, message.run_id) for message, _ in records]
        try:
            runs, jobs, limits = self.context.store.get_runs_jobs_and_limits(keys, owners)
        except Exception:
            logger.exception("batch read failed: each record reads for itself", extra={"count": len(keys)})
            return {}
        for message, receipt_handle in records:
            run = runs.get((message.job_id, message.run_id))
            self.arrived[receipt_handle] = Arrived(now, run, jobs.get(message.job_id))
        return limits

    def take(self, receipt_handle: str | None) -> Arrived | None:
        """The record's reads from ``receive``, once (a second look reads the table again)."""
        return None if receipt_handle is None else self.arrived.pop(receipt_handle, None)

    def held_until(self, receipt_handle: str | None) -> float | None:
        """When the record's hold of its message ends (monotonic), once: its attempt's heartbeat
        takes over."""
        return None if receipt_handle is None else self.hidden_until.pop(receipt_handle, None)

    def forget(self, receipt_handle: str | None) -> None:
        """The record is done with its message: the executor outlives the invocation."""
        if receipt_handle is not None:
            self.hidden_until.pop(receipt_handle, None)
            self.arrived.pop(receipt_handle, None)

    def hold_on_arrival(self, message: WorkMessage, receipt_handle: str | None) -> None:
        """Hide a dispatched message for the wait its body announces before anything else: a worker
        killed during its first reads then leaves it hidden for seconds, not for the receive's
        visibility (on AWS the queue's 5,400 s). The hold before the wait finds it done already."""
        if receipt_handle is None:
            return
        remaining = self._announced_wait(message, self.context.clock())
        if remaining is not None:
            self.hold(receipt_handle, remaining)

    def hold(self, receipt_handle: str | None, seconds: float) -> None:
        """Keep the message hidden while this worker waits ``seconds``, plus a short margin; the
        attempt's heartbeat takes over before that runs out (``hidden_until``). A hold that already
        covers it (made on arrival) is not asked for again."""
        if receipt_handle is None:
            return
        asked = self.context.clock.monotonic()
        if self._covered(receipt_handle, asked, seconds):
            return
        hidden = self._hidden_for(seconds)
        self.context.queue.change_visibility(receipt_handle, hidden)
        self.hidden_until[receipt_handle] = asked + hidden

    def wait_until_due(self, run: Run, receipt_handle: str | None) -> bool:
        """Hold the message until the attempt is due, or give it back if that is too far off.

        Returns whether it waited (then the job is read again: it may have changed meanwhile). It
        returns ``PRESTART_SECONDS`` before the second; the caller sleeps the rest after starting.

        While holding, the message is hidden for the wait plus a short margin only: if this worker
        dies, the message comes back seconds after the run was due, not after the queue's long
        timeout. (Once the attempt starts, the heartbeat keeps it hidden lease by lease.)
        """
        due = run.next_attempt_at or run.scheduled_for
        remaining = (due - self.context.clock()).total_seconds()
        if remaining > self.context.settings.max_early_wait_seconds:
            back = pacing.delay_for(due, self.context.clock(), self.context.settings.head_start)
            raise ReturnLater("not due yet", max(1, back))
        # Always, even when due now: until the first heartbeat (a third of a lease into the attempt)
        # the message would otherwise stay hidden for the queue's timeout, which on AWS is six times
        # the worker's (an hour and a half) if this worker dies.
        self.hold(receipt_handle, remaining)
        if remaining <= PRESTART_SECONDS:
            return False
        self.sleep_until(due - timedelta(seconds=PRESTART_SECONDS))
        return True

    def sleep_until(self, moment: datetime) -> None:
        """Sleep until ``moment``, never before it. No spinning: ten records due at one second
        spinning together took the CPU a small Lambda has for the calls themselves."""
        sleep_until(self.context.clock, moment)

    # ------------------------------------------------------------------------------------------

    def _announced_wait(self, message: WorkMessage, now: datetime) -> float | None:
        """Seconds until the run a dispatched message announces is due, if the worker holds it for
        that long (not a message that names only its run, not one due too far off)."""
        if message.queued is None:
            return None
        due = message.queued.next_attempt_at or message.queued.scheduled_for
        remaining = (due - now).total_seconds()
        return remaining if remaining <= self.context.settings.max_early_wait_seconds else None

    def _hold_all(self, holds: dict[str, float]) -> None:
        asked = self.context.clock.monotonic()
        hidden = {handle: self._hidden_for(seconds) for handle, seconds in holds.items()}
        try:
            refused = set(self.context.queue.change_visibilities(list(hidden.items())))
        except Exception:
            logger.exception("batch hold failed: each record holds for itself", extra={"count": len(hidden)})
            return
        for handle, seconds in hidden.items():
            if handle not in refused:
                self.hidden_until[handle] = asked + seconds

    def _covered(self, receipt_handle: str, asked: float, seconds: float) -> bool:
        wanted = asked + max(0.0, seconds) + HOLD_MARGIN_SECONDS
        return self.hidden_until.get(receipt_handle, 0.0) >= wanted - 0.5

    @staticmethod
    def _hidden_for(seconds: float) -> int:
        return math.ceil(max(0.0, seconds)) + HOLD_MARGIN_SECONDS

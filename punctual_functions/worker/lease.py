"""An attempt's lease at its call: long enough left that no other delivery takes the attempt over
while the call is made.

The start's answer may come late (a throttled table: the SDK retries for seconds) with the lease it
wrote nearly spent. The simulator showed what followed: the message, no longer hidden, reached
another worker, which found the lease run out and took the attempt over while the first worker
called the target; the call went out twice. So the lease is renewed before the call when less than
a beat's interval of it is left (a write, for a slow start only), and the heartbeat's first beat
comes before the lease ends as well as before the message's hold does.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from punctual_functions.core.model import Run
from punctual_functions.core.observability import logger
from punctual_functions.worker.context import ReturnLater, WorkerContext
from punctual_functions.worker.heartbeat import beat_interval

# Renewals before the call: each answered too late for the call to go out within its lease is made
# again; after this many, the message waits (``ReturnLater``) and the attempt goes on from it later.
RENEWALS = 3


def for_the_call(context: WorkerContext, run: Run, due: datetime) -> Run:
    """``run`` (just started) with at least a beat's interval of lease left at its call; if another
    delivery took the attempt over meanwhile, this message waits for that one's lease to end."""
    seconds = context.settings.lease_seconds
    beat = beat_interval(seconds)
    for _ in range(RENEWALS):
        call_at = max(context.clock(), due)
        if run.lease_until is None or (run.lease_until - call_at).total_seconds() >= beat:
            return run
        until = call_at + timedelta(seconds=seconds)
        if not context.store.renew_lease(run, until):
            break
        # Renewed; but a renewal answered late (throttled too) may have landed after the lease it
        # extended had run out, and another delivery may have taken the attempt over meanwhile and
        # been refused by it, or not: only a renewal answered with a beat of its lease left tells.
        run = replace(run, lease_until=until)
    logger.warning("attempt taken over while its start was written", extra={"run_id": run.run_id})
    raise ReturnLater("attempt taken over while its start was written", seconds)


def renew_by(context: WorkerContext, run: Run, held_until: float | None) -> float | None:
    """When the heartbeat's first beat must come by (the clock's monotonic time): before the
    worker's hold of the message (``held_until``) or the attempt's lease runs out, whichever is first."""
    if run.lease_until is None:
        return held_until
    leased = context.clock.monotonic() + (run.lease_until - context.clock()).total_seconds()
    return leased if held_until is None else min(held_until, leased)

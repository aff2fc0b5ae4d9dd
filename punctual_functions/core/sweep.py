"""The dispatcher's tick: each shard's buckets from its cursor to the look-ahead, read, dispatched,
and passed. What dispatching one trigger means is ``punctual_functions.core.dispatching``; the protocol is in
docs/architecture.md, "Dispatcher".
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from punctual_functions.core.clock import Joinable
from punctual_functions.core.frontier import Frontier, covers_bucket, earliest, first_seen, vouched_for
from punctual_functions.core.model import Trigger, TriggerState, bucket_of, bucket_start, next_bucket
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import ShardState
from punctual_functions.core.resources import TICK_SECONDS

if TYPE_CHECKING:
    from punctual_functions.core.dispatching import Dispatcher

# A bucket is read again after a dispatch when the cursor may pass it (to see it done) or when the
# dispatch left next occurrences behind (missed ones of a run_all catch-up may land in it), while
# its reads find triggers to dispatch; this bounds the rounds of one sweep over it.
MAX_ROUNDS_PER_BUCKET = 1000
# A sweep holds its shard this long, renewed while it runs, released when it ends: a tick that comes
# while the last one's sweep of a shard is still under way (a busy minute) leaves that shard to it,
# instead of reading and dispatching the same triggers again, which doubled the work of an
# overloaded dispatcher (docs/scale.md). Short, renewed every half of it: a sweeper that died holding
# a shard keeps it from the next tick for 20 s at most (a tick comes each minute on AWS, every 10 s
# in the local stack's tests).
SHARD_HOLD = timedelta(seconds=20)
# A fanned-out tick starts its sweeps spread over this much of the minute, group by group, instead of
# all at once: each sweep reads its buckets within its first seconds, and at a million a minute the
# 96 sweeps' reads at the same moment held the table at its read maximum while the workers' reads
# were refused with them (docs/scale.md). The look-ahead leaves the time: the planner sizes the sweeps'
# work to end within the tick after their staggered start (punctual/scale/plan.py, ``sweep_seconds``).
FANOUT_SPREAD = timedelta(seconds=10)


@dataclass
class DispatchReport:
    dispatched: int = 0
    sent: int = 0
    skipped: int = 0
    stale: int = 0
    recovered: int = 0
    lost_races: int = 0
    # Next occurrences written but not followed (already missed: a run_all catch-up): the sweep reads
    # their bucket again for them.
    left_behind: int = 0
    # The earliest time of a trigger left as it was, to be sent later (its job's create still under
    # way): the sweep's frontier stops before it.
    waiting: datetime | None = None

    def add(self, other: DispatchReport) -> None:
        for name in self.__dataclass_fields__:
            if name != "waiting":
                setattr(self, name, getattr(self, name) + getattr(other, name))
        self.waiting = earliest(self.waiting, other.waiting)


@dataclass
class SweepReport:
    dispatch: DispatchReport = field(default_factory=DispatchReport)
    buckets_swept: int = 0
    # Buckets not read: the shard's frontier vouched for them and the cursor may not pass them yet.
    buckets_skipped: int = 0
    # Triggers within the horizon whose run the sweep read (not those the shard's frontier vouches
    # for, nor those no sweep can have sent: ``punctual_functions.core.frontier``).
    triggers_checked: int = 0
    cursors_advanced: int = 0
    # Shards left to the sweep that held them (the last tick's, still under way).
    shards_busy: int = 0
    lag_seconds: float = 0.0

    def add(self, other: SweepReport) -> None:
        """Sum the counts; the lag is the largest (the oldest cursor wins)."""
        self.dispatch.add(other.dispatch)
        self.buckets_swept += other.buckets_swept
        self.buckets_skipped += other.buckets_skipped
        self.triggers_checked += other.triggers_checked
        self.cursors_advanced += other.cursors_advanced
        self.shards_busy += other.shards_busy
        self.lag_seconds = max(self.lag_seconds, other.lag_seconds)


def trigger_key(trigger: Trigger) -> tuple[str, str]:
    return (trigger.job_id, trigger.run_id)


def staggered_starts(groups: int, now: datetime) -> list[datetime]:
    """When each of a fanned-out tick's ``groups`` sweeps starts: spread evenly over
    ``FANOUT_SPREAD`` from ``now``."""
    return [now + FANOUT_SPREAD * index / groups for index in range(groups)]


def shard_groups(shard_count: int, sweeps: int) -> list[list[int]]:
    """The shards split into at most ``sweeps`` contiguous groups of nearly equal size."""
    count = max(1, min(shard_count, sweeps))
    size, extra = divmod(shard_count, count)
    groups: list[list[int]] = []
    start = 0
    for index in range(count):
        end = start + size + (index < extra)
        groups.append(list(range(start, end)))
        start = end
    return groups


def sweep_lag(oldest_cursor: str | None, now: datetime, safety_seconds: float) -> float | None:
    """How far the slowest shard's sweep is behind where a healthy one would be, in seconds (None:
    no shard swept yet). A cursor passes a bucket once the bucket has ended a safety margin ago, at
    the first tick after that: until then it stays on it, healthy, and only the time beyond is lag.
    So a healthy dispatcher reads 0 at its ticks and between them, and one stopped for five minutes
    about four (its first minute is within a tick's cadence)."""
    if oldest_cursor is None:
        return None
    passed_by = bucket_start(oldest_cursor) + timedelta(minutes=1, seconds=safety_seconds + TICK_SECONDS)
    return max(0.0, (now - passed_by).total_seconds())


def sweep(dispatcher: Dispatcher, now: datetime, shards: Sequence[int] | None = None) -> SweepReport:
    """One tick over ``shards`` (all by default), in parallel, each from its cursor to now +
    look-ahead. A tick fanned out over several invocations gives each its group of shards."""
    settings, store = dispatcher.settings, dispatcher.store
    shards = list(range(settings.shard_count)) if shards is None else list(shards)
    report = SweepReport()
    workers = max(1, min(len(shards), 16))
    for shard_report in dispatcher.clock.parallel(
        lambda shard: dispatcher.sweep_shard(shard, now), shards, workers, "sweep"
    ):
        report.add(shard_report)
    lag = sweep_lag(store.oldest_cursor(shards), dispatcher.clock(), settings.bucket_safety_seconds)
    if lag is not None:
        report.lag_seconds = lag
    return report


class ShardHold:
    """A sweep's hold of its shard, renewed in the background every half hold while the sweep runs
    (a single bucket's dispatch may outlast a hold), released when it ends. ``lost`` is set if
    another sweep took the shard after a renewal failed to land in time."""

    def __init__(self, dispatcher: Dispatcher, shard: int) -> None:
        self.store, self.clock, self.shard = dispatcher.store, dispatcher.clock, shard
        self.token = uuid.uuid4().hex
        self.stopped = threading.Event()
        self.lost = threading.Event()
        self.beat: Joinable | None = None
        # Set by a sweep that finished: released with the hold, for the next sweep of the shard.
        self.frontier: Frontier | None = None

    def take(self) -> ShardState:
        """Hold the shard; whether it is held, its cursor and its frontier."""
        now = self.clock()
        return self.store.hold_shard(self.shard, token=self.token, now=now, until=now + SHARD_HOLD)

    def __enter__(self) -> ShardHold:
        self.beat = self.clock.start(self._renew, f"hold-{self.shard}")
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopped.set()
        if self.beat is not None:
            self.beat.join(5)
        self.store.release_shard(self.shard, token=self.token, frontier=self.frontier)

    def _renew(self) -> None:
        while not self.clock.wait(self.stopped, SHARD_HOLD.total_seconds() / 2):
            try:
                held = self.take().held
            except Exception:  # the hold has half of it left: the next beat tries again
                logger.exception("shard hold not renewed", extra={"shard": self.shard})
                continue
            if not held:
                self.lost.set()
                return


def sweep_shard(dispatcher: Dispatcher, shard: int, now: datetime) -> SweepReport:
    """One shard's buckets from its cursor to ``now`` + look-ahead, if no other sweep holds it (then
    it is left to that one): each bucket read until nothing in it is left to dispatch, its sends paced
    (``dispatch(paced=True)``); the cursor then passes the buckets that ended a safety margin ago with
    every trigger dispatched."""
    hold = ShardHold(dispatcher, shard)
    state = hold.take()
    if not state.held:
        return SweepReport(shards_busy=1)
    with hold:
        return _sweep_held(dispatcher, shard, now, state, hold)


def _sweep_held(
    dispatcher: Dispatcher, shard: int, now: datetime, state: ShardState, hold: ShardHold
) -> SweepReport:
    settings, store = dispatcher.settings, dispatcher.store
    report = SweepReport()
    cursor, frontier = state.cursor, state.frontier
    start = cursor or bucket_of(now - timedelta(seconds=settings.initial_catchup_seconds))
    lookahead = timedelta(seconds=settings.lookahead_seconds)
    horizon = now + lookahead
    claim_timeout = timedelta(seconds=settings.claim_timeout_seconds)
    safety = timedelta(seconds=settings.bucket_safety_seconds)
    advance_to = start
    can_advance = True
    bucket = start
    # This sweep's frontier, for the next: its horizon, unless it leaves a trigger waiting.
    until = horizon
    sent: set[tuple[str, str]] = set()  # dispatched by this sweep (its own reads may lag its writes)
    while bucket_start(bucket) <= horizon:
        passed = bucket_start(bucket) + timedelta(minutes=1) + safety <= now
        if not passed and covers_bucket(bucket_start(bucket) + timedelta(minutes=1), frontier):
            # Everything pending written ahead into it was dispatched by an earlier sweep: the read
            # waits for the sweep that passes it (with the default look-ahead, one read of five).
            report.buckets_skipped += 1
            can_advance = False
            bucket = next_bucket(bucket)
            continue
        remaining: list[Trigger] = []
        for _ in range(MAX_ROUNDS_PER_BUCKET):
            if hold.lost.is_set():  # another sweep took the shard: the rest is its
                return _advance(dispatcher, shard, cursor, advance_to, report)
            # Only a read that may let the cursor pass the bucket must see every write before it: the
            # others read eventually consistent, at half the units (a trigger written in the last
            # second or so that they miss is read by the next tick, or by the pass).
            listed = [
                t for t in store.query_bucket(bucket, shard, consistent=passed) if trigger_key(t) not in sent
            ]
            # Beyond the horizon nothing is dispatched, so nothing is checked (a bucket with such a
            # trigger is never one the cursor may pass).
            within = [t for t in listed if t.fire_at <= horizon and not vouched_for(t, frontier, lookahead)]
            if not passed:
                # A trigger its writer holds is not sent now whatever its run: its run is read only
                # where the cursor may pass it.
                within = [t for t in within if _sendable(t, now, claim_timeout)]
            # What no sweep can have sent yet is sent without reading its run: a tick's new triggers.
            fresh = [t for t in within if first_seen(t, frontier, state.clean)]
            checked = [t for t in within if not first_seen(t, frontier, state.clean)]
            report.triggers_checked += len(checked)
            remaining = fresh + dispatcher.undispatched(checked)
            due = [t for t in remaining if _sendable(t, now, claim_timeout)]
            if not due:
                break
            dispatched = dispatcher.dispatch(due, now, checked=True, paced=True)
            report.dispatch.add(dispatched)
            until = earliest(until, dispatched.waiting) or until
            sent.update(trigger_key(t) for t in due if not t.is_retry)
            if not dispatched.left_behind and not passed:
                # A bucket the cursor cannot pass yet need not be read again to show it is done, and
                # nothing new can be in it: what the dispatch chained, it followed itself. A read less
                # per bucket with work and tick (the reads limit a million a minute: docs/scale.md).
                break
        else:  # its rounds ran out with triggers still due: the frontier stops before it
            until = min(until, bucket_start(bucket))
        report.buckets_swept += 1
        if can_advance and passed and not remaining:
            advance_to = next_bucket(bucket)
        else:
            can_advance = False
        bucket = next_bucket(bucket)
    hold.frontier = Frontier(until=until, read_at=now, horizon=horizon)
    return _advance(dispatcher, shard, cursor, advance_to, report)


def _sendable(trigger: Trigger, now: datetime, claim_timeout: timedelta) -> bool:
    """Whether a sweep sends ``trigger`` if its occurrence has no run: pending, or held by a writer
    (a claim) for longer than ``claim_timeout``."""
    return trigger.state is TriggerState.PENDING or (
        trigger.claimed_at is not None and now - trigger.claimed_at > claim_timeout
    )


def _advance(
    dispatcher: Dispatcher, shard: int, cursor: str | None, advance_to: str, report: SweepReport
) -> SweepReport:
    """Move the cursor past the buckets the sweep finished."""
    if advance_to != cursor and (cursor is None or advance_to > cursor):
        dispatcher.crash_point("before_cursor_advance")
        report.cursors_advanced += int(dispatcher.store.advance_cursor(shard, cursor, advance_to))
    return report

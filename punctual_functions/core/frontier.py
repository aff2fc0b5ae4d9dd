"""A shard's frontier: what the last sweep of it that finished vouches for, so that the next one
neither reads the runs of occurrences already dispatched nor reads again buckets it has nothing to
do in (docs/architecture.md, "Reads").

A trigger stays in its bucket after it is sent (its run marks it dispatched), so without this every
tick would check again, with a read of its run, each trigger within its window until the cursor
passes its minute. A dispatcher process remembers what it dispatched (``Dispatcher._dispatched``),
but a tick fanned out over several invocations lands each group on whichever container Lambda
picks: at a million jobs a minute that memory rarely helps. The frontier lives on the shard's cursor
item instead, written with the release of the sweep's hold (no extra write).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual_functions.core.model import Trigger, TriggerState

# A write this long before a sweep's reads is in them, eventually consistent or not (DynamoDB's
# replicas catch up within about a second), and clocks of Lambda hosts agree far better than this.
MARGIN = timedelta(seconds=5)


@dataclass(frozen=True)
class Frontier:
    """Recorded by a sweep that finished its shard (every bucket up to its horizon read or vouched
    for by the frontier before it, every trigger it could send sent). ``read_at``: the sweep's
    moment, before its reads; ``until``: its horizon, or earlier if it left a trigger waiting (a job
    whose create was under way) or a bucket unfinished."""

    until: datetime
    read_at: datetime
    horizon: datetime  # the sweep's horizon: it sent no pending trigger due after it


def ms_up(moment: datetime) -> int:
    """``moment`` in epoch milliseconds, rounded up (a horizon stored a little later, never earlier:
    ``first_seen`` must not take a trigger the sweep sent for one it did not)."""
    return -(-int(moment.timestamp() * 1_000_000) // 1000)


def vouched_for(trigger: Trigger, frontier: Frontier | None, lookahead: timedelta) -> bool:
    """Whether ``frontier`` vouches that ``trigger`` was dispatched (or found stale and deleted).

    It does for a pending occurrence due before its ``until`` (less the margin) and written, at
    least the look-ahead before its time, before the sweep read (less the margin). Such a trigger
    was written ahead of every horizon, so the sweep that recorded the frontier read it in its
    bucket, or skipped the bucket because the frontier before vouched for all of that kind in it.
    Every other trigger is checked as before: a retry wake-up (claimed, never vouched for), one
    held by the writer that sends it, one written late into the past (a catch-up's missed
    occurrence), one written after the sweep read.
    """
    if frontier is None or trigger.is_retry or trigger.state is not TriggerState.PENDING:
        return False
    written = trigger.written_at
    return (
        written is not None
        and trigger.fire_at < frontier.until - MARGIN
        and written < frontier.read_at - MARGIN
        and trigger.fire_at - written > lookahead
    )


def first_seen(trigger: Trigger, frontier: Frontier | None, clean: bool) -> bool:
    """Whether no sweep can have sent ``trigger`` yet, so that a sweep sends it without reading its
    run: a pending occurrence due after the horizon of the last sweep of its shard, when that sweep
    finished (``clean``: no sweep took the shard after it). Writers that send a trigger themselves
    write it held, never pending; a sweep that died after sending leaves the shard unclean."""
    return (
        clean
        and frontier is not None
        and not trigger.is_retry
        and trigger.state is TriggerState.PENDING
        and trigger.fire_at > frontier.horizon
    )


def covers_bucket(bucket_end: datetime, frontier: Frontier | None) -> bool:
    """Whether ``frontier`` vouches for every pending trigger written ahead into a bucket ending at
    ``bucket_end``: a sweep that may not pass the bucket yet need not read it (what else it may hold,
    a held trigger whose writer died or a late catch-up, waits for the read that passes it)."""
    return frontier is not None and bucket_end <= frontier.until - MARGIN


def earliest(*moments: datetime | None) -> datetime | None:
    """The earliest of the given moments (None when there is none)."""
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None

"""When a work message becomes visible: ``head_start`` before its due time, not whole seconds before.

SQS delays count whole seconds from the moment a message is accepted. Rounding the delay down would
make a message arrive up to a second early, and its worker would hold it (billed Lambda time) for
that second. Instead the sweep times each send so that ``now + delay`` lands on the moment it wants
(``plan``); everyone else sends at once with the rounded delay (``delay_for``). The scheme is in
docs/architecture.md, "Arrival".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from functions.core.resources import SQS_MAX_DELAY_SECONDS

# Messages whose send moments lie this close together are sent together (a SendMessageBatch takes
# ten): the later ones arrive up to this much earlier than they need to.
GROUP_WINDOW = timedelta(milliseconds=50)
# A request is made this long before its moment. Made a microsecond after it, its delays would round
# down to a whole second less (a second early); and SQS counts a delay from when the request reaches
# it, a few milliseconds after it is made. A sleep that overshoots by more still makes the message
# early, never late.
SEND_LEAD = timedelta(milliseconds=20)

T = TypeVar("T")


def visible_at(fire_at: datetime, head_start: timedelta) -> datetime:
    """When a message for ``fire_at`` should become visible: its worker gets ``head_start``."""
    return fire_at - head_start


def delay_for(fire_at: datetime, now: datetime, head_start: timedelta) -> int:
    """``DelaySeconds`` for a message sent at ``now``: it becomes visible at most ``head_start`` before
    ``fire_at``, less than a second earlier than that, never later (0 when that moment has passed)."""
    seconds = math.floor((visible_at(fire_at, head_start) - now).total_seconds())
    return max(0, min(SQS_MAX_DELAY_SECONDS, seconds))


def send_moment(fire_at: datetime, now: datetime, head_start: timedelta) -> datetime:
    """The moment, at or after ``now`` and within the next second, at which a message sent with
    ``delay_for`` becomes visible exactly at ``visible_at(fire_at, head_start)`` (``now`` when that
    cannot be: the moment has passed, or it is beyond the queue's longest delay)."""
    visible = visible_at(fire_at, head_start)
    delay = delay_for(fire_at, now, head_start)
    if visible <= now or delay >= SQS_MAX_DELAY_SECONDS:
        return now
    return visible - timedelta(seconds=delay)


@dataclass(frozen=True)
class Group(Generic[T]):
    """Items to send together at ``at``."""

    at: datetime
    items: list[T]


def plan(
    items: Sequence[T],
    fire_at: Sequence[datetime],
    now: datetime,
    head_start: timedelta,
    window: timedelta = GROUP_WINDOW,
) -> list[Group[T]]:
    """``items`` (due at ``fire_at``, pairwise) as groups in the order of their send moments: each
    group is sent ``SEND_LEAD`` before its first item's moment (or now), with the items whose moments
    follow within ``window``."""
    moments = sorted(
        ((send_moment(fire, now, head_start), index) for index, fire in enumerate(fire_at)),
        key=lambda pair: pair[0],
    )
    groups: list[Group[T]] = []
    first = now
    for moment, index in moments:
        if groups and moment - first <= window:
            groups[-1].items.append(items[index])
        else:
            first = moment
            groups.append(Group(max(now, moment - SEND_LEAD), [items[index]]))
    return groups

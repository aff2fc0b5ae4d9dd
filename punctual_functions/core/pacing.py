"""When a work message becomes visible: ``head_start`` before its due time, not whole seconds before.

SQS delays count whole seconds from the moment a message is accepted. Rounding the delay down would
make a message arrive up to a second early, and its worker would hold it (billed Lambda time) for
that second. Instead the sweep times each send so that ``now + delay`` lands on the moment it wants
(``plan``); everyone else sends at once with the rounded delay (``delay_for``). A message due later
than a second from now may go at any whole second before its moment, so a large round's sends are
spread over several seconds rather than crowded into one that the sender cannot keep up with. The
scheme is in docs/architecture.md, "Arrival".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from punctual_functions.core.resources import SQS_MAX_DELAY_SECONDS

# Messages whose send moments lie this close together are sent together (a SendMessageBatch takes
# ten): the later ones arrive up to this much earlier than they need to.
GROUP_WINDOW = timedelta(milliseconds=50)
# A request is made this long before its moment. Made a microsecond after it, its delays would round
# down to a whole second less (a second early); and SQS counts a delay from when the request reaches
# it, a few milliseconds after it is made. A sleep that overshoots by more still makes the message
# early, never late.
SEND_LEAD = timedelta(milliseconds=20)
# A round's sends are spread over at most this many seconds: its runs are written after its sends, and
# until then another dispatcher that finds the occurrences (after the claim timeout, 30 s at least)
# could send them again.
MAX_SPREAD_SECONDS = 10

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
    per_second: int | None = None,
    booked: list[int] | None = None,
) -> list[Group[T]]:
    """``items`` (due at ``fire_at``, pairwise) as groups in the order of their send moments: each
    group is sent ``SEND_LEAD`` before its first item's moment (or now), with the items whose moments
    follow within ``window``.

    ``per_second``: how many messages the sender can send in a second. A message whose moment is
    later than the next second may be sent a whole number of seconds later than ``send_moment`` (its
    delay a second shorter for each), up to ``MAX_SPREAD_SECONDS``: the messages with the least room
    take the earliest seconds, at most ``per_second`` to each, so that every request is made at its
    moment and each message becomes visible when it should, not a second early. ``booked``: how many
    messages other sends of the same sender already have in each of the next seconds (from ``now``,
    ``MAX_SPREAD_SECONDS + 1`` of them); the plan counts them and adds its own."""
    moments = sorted(
        (
            (_spread_moment(fire, now, head_start, slot), index)
            for index, fire, slot in _slots(fire_at, now, head_start, per_second, booked)
        ),
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


def _room(fire_at: datetime, now: datetime, head_start: timedelta) -> int:
    """How many whole seconds after ``send_moment`` a message may still be sent to become visible on
    time (its delay then 0); 0 when its moment has passed or lies beyond the queue's longest delay."""
    delay = delay_for(fire_at, now, head_start)
    if visible_at(fire_at, head_start) <= now or delay >= SQS_MAX_DELAY_SECONDS:
        return 0
    return min(delay, MAX_SPREAD_SECONDS)


def _slots(
    fire_at: Sequence[datetime],
    now: datetime,
    head_start: timedelta,
    per_second: int | None,
    booked: list[int] | None = None,
) -> list[tuple[int, datetime, int]]:
    """Each message's second (0: within the next second). A moment so close to ``now`` that a group
    could not start early enough for it goes a second later when it has the room. With ``per_second``,
    the messages with the least room go first, each to the earliest second within its room with a
    place left; when all are full, to the least full."""
    rooms = [_room(fire, now, head_start) for fire in fire_at]
    firsts = [
        int(room > 0 and send_moment(fire, now, head_start) - now < SEND_LEAD + GROUP_WINDOW)
        for fire, room in zip(fire_at, rooms, strict=True)
    ]
    used = booked if booked is not None else [0] * (MAX_SPREAD_SECONDS + 1)
    if per_second is None or len(fire_at) + used[0] <= per_second:
        for first in firsts:
            used[first] += 1
        return [(index, fire, firsts[index]) for index, fire in enumerate(fire_at)]
    slots: list[tuple[int, datetime, int]] = []
    for index in sorted(range(len(fire_at)), key=lambda i: (rooms[i], fire_at[i])):
        room, first = rooms[index], firsts[index]
        slot = next((s for s in range(first, room + 1) if used[s] < per_second), None)
        if slot is None:
            slot = min(range(first, room + 1), key=lambda s: used[s])
        used[slot] += 1
        slots.append((index, fire_at[index], slot))
    return slots


def _spread_moment(fire_at: datetime, now: datetime, head_start: timedelta, slot: int) -> datetime:
    """``send_moment`` ``slot`` whole seconds later: the message's delay is as many seconds shorter."""
    return send_moment(fire_at, now, head_start) + timedelta(seconds=slot)

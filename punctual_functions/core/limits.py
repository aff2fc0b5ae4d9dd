"""Target limits, as pure rules (docs/architecture.md, "Target limits"; docs/concepts.md).

A limit of an owner matches targets by URL prefix (scheme, host and an optional path prefix, on
their boundaries) or by ARN (exact, with a qualifier, or a prefix ending in ``*``), and caps them with
``max_concurrent`` (attempts in flight at once, across all workers: slots held as leases) and/or
``per_second`` (a token bucket holding up to ``burst`` tokens). A job's own ``max_concurrent`` is a
limit of its runs alone (``job_limit_name``). No I/O here: the store keeps the slots and the bucket,
the worker (``punctual_functions/worker/limiting.py``) takes and releases them by these rules.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final
from urllib.parse import urlsplit

# A limit's name: what a run's history and the alerts name; no colon (``job:<id>`` names a job's own).
LIMIT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_LIMITS_PER_OWNER: Final = 100
MAX_CONCURRENT_CAP: Final = 1000
MAX_PER_SECOND: Final = 10_000.0
MAX_BURST: Final = 10_000
JOB_LIMIT_PREFIX: Final = "job:"
# A slot's holder: the run id, this separator, and the token of the delivery that took it.
HOLDER_SEPARATOR: Final = "/"
# A slot handed over by its releaser to a waiting run: its token starts so (``handed_holder``).
HANDED_PREFIX: Final = "handed-"
# How long a slot handed over waits for its run's delivery to claim it: a wake-up message's way
# through the queue. Unclaimed by then (the run ended meanwhile, its worker is slow), it is free.
HANDOFF_SECONDS: Final = 5
ANY_TOKEN: Final = "*"
# A run waiting for a slot comes back on its own after this, up to twice it (jitter): its fallback.
SLOT_WAIT_SECONDS: Final = 10
# What a target is matched by: the one field of its spec that names where it goes.
_TARGET_FIELD: Final = {
    "http": "url",
    "sqs": "queue_url",
    "lambda": "function",
    "sns": "topic_arn",
    "eventbridge": "bus",
}


class LimitMatchError(ValueError):
    """A limit's ``match`` that is neither a URL prefix nor an ARN."""


@dataclass(frozen=True)
class Limit:
    """One of an owner's limits (the item ``LIMIT#<owner>`` / ``<name>``)."""

    name: str
    match: str
    max_concurrent: int | None = None
    per_second: float | None = None
    burst: int | None = None  # the bucket's size: per_second rounded up when not given
    version: int = 1
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def bucket_size(self) -> int:
        if self.per_second is None:
            return 0
        return self.burst if self.burst is not None else max(1, math.ceil(self.per_second))

    def matches(self, target: Mapping[str, Any]) -> bool:
        return matches(self.match, target)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "match": self.match,
            "max_concurrent": self.max_concurrent,
            "per_second": self.per_second,
            "burst": self.burst,
            "version": self.version,
        }


def job_limit_name(job_id: str) -> str:
    """The name of a job's own ``max_concurrent`` (its slots' partition; never a limit's name)."""
    return f"{JOB_LIMIT_PREFIX}{job_id}"


def check_match(match: str) -> str:
    """``match`` as stored: an http(s) URL prefix (its scheme and host lower-cased) or an ARN; raises
    ``LimitMatchError`` naming what is wrong."""
    if match.startswith("arn:"):
        if len(match.split(":")) < 3 or not match.split(":")[2]:
            raise LimitMatchError("must be an ARN naming its service (arn:<partition>:<service>:...)")
        if "*" in match[:-1]:
            raise LimitMatchError("an ARN may end with * (a prefix), nowhere else")
        return match
    try:
        parts = urlsplit(match)
        port = parts.port
    except ValueError as error:  # a port out of range, a malformed IPv6 host
        raise LimitMatchError(f"not a URL prefix: {error}") from error
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise LimitMatchError("must be an http(s) URL prefix (scheme and host) or an ARN")
    if parts.query or parts.fragment or parts.username or parts.password or any(c.isspace() for c in match):
        raise LimitMatchError("a URL prefix has a scheme, a host, a port and a path, nothing else")
    netloc = parts.hostname.lower() + (f":{port}" if port is not None else "")
    return f"{parts.scheme.lower()}://{netloc}{parts.path}"


def target_identity(target: Mapping[str, Any]) -> str | None:
    """What a target is matched by: its URL (http, sqs), its function, topic or bus (ARN or name)."""
    name = _TARGET_FIELD.get(str(target.get("type", "")))
    value = target.get(name) if name else None
    return str(value) if value else None


def matches(match: str, target: Mapping[str, Any]) -> bool:
    """Whether a limit's ``match`` covers ``target``.

    A URL prefix matches a URL of the same scheme and host (and port: the scheme's default when
    absent) whose path starts with the prefix's path on a segment boundary: ``/v1`` covers ``/v1`` and
    ``/v1/jobs``, not ``/v10``. An ARN matches the same ARN, the same with a qualifier (``:alias``),
    or, ending with ``*``, any ARN starting with what precedes it.
    """
    identity = target_identity(target)
    if identity is None:
        return False
    if match.startswith("arn:"):
        if match.endswith("*"):
            return identity.startswith(match[:-1])
        return identity == match or identity.startswith(match + ":")
    return _url_covers(match, identity)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _url_covers(prefix: str, url: str) -> bool:
    try:
        want, have = urlsplit(prefix), urlsplit(url)
        want_port = want.port or _default_port(want.scheme.lower())
        have_port = have.port or _default_port(have.scheme.lower())
    except ValueError:
        return False
    if (want.scheme.lower(), (want.hostname or "").lower(), want_port) != (
        have.scheme.lower(),
        (have.hostname or "").lower(),
        have_port,
    ):
        return False
    base = want.path.rstrip("/")
    path = have.path or "/"
    return not base or path == base or path.startswith(base + "/")


def matching(limits: Iterable[Limit], target: Mapping[str, Any]) -> list[Limit]:
    """The limits covering ``target``, by name (the order every worker takes them in)."""
    return sorted((limit for limit in limits if limit.matches(target)), key=lambda limit: limit.name)


# ------------------------------------------------------------------------------------- slots


@dataclass(frozen=True)
class Slot:
    """A slot of a limit as stored: who holds it and until when (a lease)."""

    index: int
    holder: str
    lease_until: datetime
    taken_at: datetime | None = None
    job_id: str | None = None

    def live(self, now: datetime) -> bool:
        return self.lease_until > now

    @property
    def run_id(self) -> str:
        """The run holding it (its holder without the delivery's token)."""
        return self.holder.split(HOLDER_SEPARATOR, 1)[0]

    @property
    def handed(self) -> bool:
        """Handed over to its run by the slot's last holder, and not claimed by a delivery yet."""
        return self.holder.partition(HOLDER_SEPARATOR)[2].startswith(HANDED_PREFIX)


def handed_holder(run_id: str, token: str) -> str:
    """The holder of a slot handed over to ``run_id`` (any delivery of that run may claim it)."""
    return f"{run_id}{HOLDER_SEPARATOR}{HANDED_PREFIX}{token}"


def run_of_holder(holder: str) -> str:
    return holder.split(HOLDER_SEPARATOR, 1)[0]


def any_handed(run_id: str) -> str:
    """A holder naming every slot handed over to ``run_id`` and not claimed: what a delivery of that
    run that will not start it releases (``holds``), so that the slot goes on to the next."""
    return handed_holder(run_id, ANY_TOKEN)


def holds(slot: Slot, holder: str) -> bool:
    """Whether ``holder`` may release ``slot``: its own, or (``any_handed``) one handed to its run."""
    if slot.holder == holder:
        return True
    return holder == any_handed(slot.run_id) and slot.handed


def in_use(slots: Iterable[Slot], now: datetime) -> list[Slot]:
    """The slots whose lease has not ended."""
    return [slot for slot in slots if slot.live(now)]


def handed_to(slots: Iterable[Slot], holder: str, now: datetime) -> Slot | None:
    """A live slot handed over to the run of ``holder``, which this delivery may claim (a conditional
    write on the handed holder: of two deliveries of the run, one gets it). None for a holder that
    holds a slot already (a retake keeps its own)."""
    slots = [slot for slot in slots if slot.live(now)]
    if any(slot.holder == holder for slot in slots):
        return None
    run_id = run_of_holder(holder)
    return next((slot for slot in slots if slot.handed and slot.run_id == run_id), None)


@dataclass(frozen=True)
class Place:
    """A slot a release may hand over: its index and the item as read (None: never taken)."""

    index: int
    seen: Slot | None


def hand_over_places(
    slots: Iterable[Slot], max_concurrent: int | None, holder: str, now: datetime
) -> list[Place]:
    """The slots a release by ``holder`` hands to waiting runs: its own, then free or lapsed ones (a
    raised limit, a holder that died, a hand-over nobody claimed), as many as the limit has room for
    beside the slots others hold. None for a limit lowered below them, or gone (``max_concurrent``
    None): the releaser's slot is freed instead; none either for a holder that holds nothing (its
    slot lapsed and was taken)."""
    slots = list(slots)
    mine = [slot for slot in slots if holds(slot, holder)]
    if max_concurrent is None or not mine:
        return []
    others = [slot for slot in in_use(slots, now) if not holds(slot, holder)]
    room = max_concurrent - len(others)
    if room <= 0:
        return []
    seen = {slot.index: slot for slot in slots}
    busy = {slot.index for slot in others} | {slot.index for slot in mine}
    places = [Place(slot.index, slot) for slot in mine]
    places += [Place(index, seen.get(index)) for index in range(max_concurrent) if index not in busy]
    return places[:room]


def in_turn(waiting: Iterable[Waiter], releasing: str, spread: int = 1) -> list[Waiter]:
    """The runs a release hands slots to, longest waiting first (never the releasing run). Releases
    at the same moment would all try the run first in line, and all but one miss (a write each): so
    each starts at a place derived from its holder among the first ``spread`` (the limit's slots)
    and goes round them first. Runs are served in the order they began to wait, give or take that
    many."""
    run_id = run_of_holder(releasing)
    ordered = sorted(waiting, key=lambda waiter: (waiter.since, waiter.run_id))
    line = [waiter for waiter in ordered if waiter.run_id != run_id]
    first = min(max(1, spread), len(line))
    if first <= 1:
        return line
    start = int(hashlib.sha256(releasing.encode()).hexdigest()[:8], 16) % first
    return line[start:first] + line[:start] + line[first:]


def choose_slot(slots: Iterable[Slot], max_concurrent: int, holder: str, now: datetime) -> int | None:
    """The slot ``holder`` should take: its own (a retake is idempotent), else a free or lapsed one
    among the first ``max_concurrent``, starting at a place derived from the holder so that workers
    racing for slots mostly try different ones; None when ``max_concurrent`` are held (a lowered limit
    counts the slots still held beyond it)."""
    slots = list(slots)
    for slot in slots:
        if slot.holder == holder and slot.live(now):
            return slot.index
    if len(in_use(slots, now)) >= max_concurrent:
        return None
    held = {slot.index for slot in slots if slot.live(now)}
    start = int(hashlib.sha256(holder.encode()).hexdigest()[:8], 16) % max_concurrent
    for step in range(max_concurrent):
        index = (start + step) % max_concurrent
        if index not in held:
            return index
    return None


# ------------------------------------------------------------------------------ token bucket


@dataclass(frozen=True)
class Bucket:
    """A token bucket as stored: ``tokens`` as counted at ``counted_at``."""

    tokens: float
    counted_at: datetime


@dataclass(frozen=True)
class TokenTaken:
    bucket: Bucket  # what to write


@dataclass(frozen=True)
class TokenRefused:
    wait_seconds: float  # until the next token


def refill(bucket: Bucket | None, now: datetime, per_second: float, size: int) -> Bucket:
    """The bucket at ``now``: full when new, refilled at ``per_second`` up to ``size`` since counted
    (a clock that went back refills nothing)."""
    if bucket is None:
        return Bucket(float(size), now)
    elapsed = max(0.0, (now - bucket.counted_at).total_seconds())
    return Bucket(min(float(size), bucket.tokens + elapsed * per_second), max(now, bucket.counted_at))


def take_token(
    bucket: Bucket | None, now: datetime, per_second: float, size: int
) -> TokenTaken | TokenRefused:
    """Take one token: the bucket to write, or how long until one is there."""
    current = refill(bucket, now, per_second, size)
    if current.tokens >= 1.0:
        return TokenTaken(replace(current, tokens=current.tokens - 1.0))
    return TokenRefused((1.0 - current.tokens) / per_second)


# ------------------------------------------------------------------------- the wait's shape


@dataclass(frozen=True)
class LimitUse:
    """A limit's current use, as the API shows it: slots held, the bucket, the runs waiting."""

    slots: tuple[Slot, ...] = ()
    bucket: Bucket | None = None
    waiting: tuple[Waiter, ...] = field(default=())


@dataclass(frozen=True)
class Waiter:
    """A run waiting on a limit (an item beside its slots, written once when it is refused)."""

    job_id: str
    run_id: str
    since: datetime


def retry_in(waited: timedelta, rng_value: float, wait_seconds: float | None = None) -> int:
    """Whole seconds until a refused run's message comes back (jittered by ``rng_value`` in [0, 1)).
    A release hands slots to the runs waiting longest and wakes them, so a waiting run's own return
    is a fallback (a limit whose every holder died): ten to twenty seconds, which keeps a long line
    of waiting runs from crowding the table and the queue. A rate's wait: until its next token."""
    if wait_seconds is not None:
        return max(1, min(900, math.ceil(max(1.0 + rng_value, wait_seconds))))  # SQS allows 12 h
    return math.ceil(SLOT_WAIT_SECONDS * (1.0 + rng_value))

"""The answers of ``/v1/limits`` (``limits.py``), as TypedDicts, and a limit with its current use:
each is checked against its answer model in ``responses.py`` (tests/unit/test_api_views.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from punctual_functions.core.limits import Limit, LimitUse, in_use, refill
from punctual_functions.core.model import iso


class LimitSlotView(TypedDict):
    job_id: str | None
    run_id: str
    taken_at: str | None
    lease_until: str | None


class LimitWaiterView(TypedDict):
    job_id: str
    run_id: str
    since: str | None
    waited_ms: int


class LimitView(TypedDict):
    name: str
    match: str
    max_concurrent: int | None
    per_second: float | None
    burst: int | None
    version: int
    created_at: str | None
    updated_at: str | None
    in_use: int
    running: list[LimitSlotView]
    tokens: float | None
    waiting_count: int
    waiting: list[LimitWaiterView]


class LimitPageView(TypedDict):
    items: list[LimitView]


def limit_view(limit: Limit, use: LimitUse, now: datetime, shown: int = 100) -> LimitView:
    """A limit with its current use: the slots held now (by which runs) and the runs waiting on it,
    longest waiting first (the first ``shown``; ``waiting_count`` counts them all)."""
    held = sorted(in_use(use.slots, now), key=lambda slot: (slot.taken_at or now, slot.index))
    tokens = None
    if limit.per_second is not None:
        tokens = round(refill(use.bucket, now, limit.per_second, limit.bucket_size).tokens, 3)
    return {
        "name": limit.name,
        "match": limit.match,
        "max_concurrent": limit.max_concurrent,
        "per_second": limit.per_second,
        "burst": limit.burst,
        "version": limit.version,
        "created_at": iso(limit.created_at),
        "updated_at": iso(limit.updated_at),
        "in_use": len(held),
        "running": [
            {
                "job_id": slot.job_id,
                "run_id": slot.run_id,
                "taken_at": iso(slot.taken_at),
                "lease_until": iso(slot.lease_until),
            }
            for slot in held
        ],
        "tokens": tokens,
        "waiting_count": len(use.waiting),
        "waiting": [
            {
                "job_id": waiter.job_id,
                "run_id": waiter.run_id,
                "since": iso(waiter.since),
                "waited_ms": max(0, round((now - waiter.since).total_seconds() * 1000)),
            }
            for waiter in use.waiting[:shown]
        ],
    }

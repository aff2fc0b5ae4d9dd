"""``MemoryLimits``: the ``LimitStore`` port in memory, with DynamoDB's conditional semantics (mixed
into ``MemoryStore``, under its lock)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from punctual_functions.core import limits as rules
from punctual_functions.core.limits import Bucket, Limit, LimitUse, Slot, TokenTaken, Waiter
from punctual_functions.core.model import Job, Reason, Run, RunStatus, from_ms, to_ms
from punctual_functions.core.ports import LimitExists, VersionChanged


def _ms(moment: datetime) -> datetime:
    return from_ms(to_ms(moment))


class MemoryLimits:
    """Implements ``punctual_functions.core.ports.LimitStore`` (its state created on first use)."""

    lock: threading.RLock
    runs: dict[str, dict[str, Run]]

    if TYPE_CHECKING:  # MemoryStore's

        def get_runs_and_jobs(
            self, keys: list[tuple[str, str]]
        ) -> tuple[dict[tuple[str, str], Run], dict[str, Job]]: ...

    @property
    def limits(self) -> dict[tuple[str, str], Limit]:
        return self._limit_state("_limits")

    @property
    def slots(self) -> dict[tuple[str, str], dict[int, Slot]]:
        return self._limit_state("_slots")

    @property
    def buckets(self) -> dict[tuple[str, str], Bucket]:
        return self._limit_state("_buckets")

    @property
    def waiters(self) -> dict[tuple[str, str], dict[tuple[str, str], Waiter]]:
        return self._limit_state("_waiters")

    def _limit_state(self, name: str) -> dict:  # type: ignore[type-arg]
        with self.lock:
            if name not in self.__dict__:
                self.__dict__[name] = {}
            return self.__dict__[name]  # type: ignore[no-any-return]

    def get_runs_jobs_and_limits(
        self, keys: list[tuple[str, str]], owners: Collection[str]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job], dict[str, list[Limit]]]:
        with self.lock:
            runs, jobs = self.get_runs_and_jobs(keys)
            return runs, jobs, {owner: self._limits_of(owner) for owner in owners}

    def get_limit(self, owner: str, name: str) -> Limit | None:
        with self.lock:
            return self.limits.get((owner, name))

    def list_limits(self, owner: str) -> list[Limit]:
        return self._limits_of(owner)

    def _limits_of(self, owner: str) -> list[Limit]:
        with self.lock:
            return sorted(
                (limit for (o, _), limit in self.limits.items() if o == owner), key=lambda lim: lim.name
            )

    def put_limit(self, owner: str, limit: Limit, *, expected_version: int | None) -> None:
        stored = replace(
            limit,
            created_at=None if limit.created_at is None else _ms(limit.created_at),
            updated_at=None if limit.updated_at is None else _ms(limit.updated_at),
        )
        with self.lock:
            current = self.limits.get((owner, limit.name))
            if expected_version is None and current is not None:
                raise LimitExists(f"limit {limit.name} exists")
            if expected_version is not None and (current is None or current.version != expected_version):
                raise VersionChanged(f"limit {limit.name} changed")
            self.limits[(owner, limit.name)] = stored

    def delete_limit(self, owner: str, name: str) -> bool:
        with self.lock:
            return self.limits.pop((owner, name), None) is not None

    def limit_use(self, owner: str, name: str) -> LimitUse:
        with self.lock:
            slots = tuple(sorted(self.slots.get((owner, name), {}).values(), key=lambda slot: slot.index))
            waiting = sorted(self.waiters.get((owner, name), {}).values(), key=lambda w: (w.since, w.run_id))
            return LimitUse(slots, self.buckets.get((owner, name)), tuple(waiting))

    def take_slot(
        self,
        owner: str,
        name: str,
        max_concurrent: int,
        *,
        holder: str,
        job_id: str,
        now: datetime,
        lease_until: datetime,
    ) -> bool:
        now = _ms(now)
        with self.lock:
            slots = self.slots.setdefault((owner, name), {})
            handed = rules.handed_to(slots.values(), holder, now)
            index = (
                handed.index
                if handed is not None
                else rules.choose_slot(slots.values(), max_concurrent, holder, now)
            )
            if index is None:
                return False
            slots[index] = Slot(index, holder, _ms(lease_until), now, job_id)
            return True

    def release_slot(
        self, owner: str, name: str, *, holder: str, max_concurrent: int | None, now: datetime
    ) -> list[Waiter]:
        now = _ms(now)
        with self.lock:
            slots = self.slots.setdefault((owner, name), {})
            mine = [slot for slot in slots.values() if rules.holds(slot, holder)]
            if not mine:
                return []
            waiting = self.waiters.get((owner, name), {})
            line = rules.in_turn(waiting.values(), holder, max_concurrent or 1)
            places = rules.hand_over_places(slots.values(), max_concurrent, holder, now)
            handed: list[Waiter] = []
            for place, waiter in zip(places, line, strict=False):
                del waiting[(waiter.job_id, waiter.run_id)]
                to = rules.handed_holder(waiter.run_id, uuid.uuid4().hex[:12])
                lease_until = now + timedelta(seconds=rules.HANDOFF_SECONDS)
                slots[place.index] = Slot(place.index, to, lease_until, now, waiter.job_id)
                handed.append(waiter)
            given = {place.index for place in places[: len(handed)]}
            for slot in mine:
                if slot.index not in given:
                    del slots[slot.index]
            return handed

    def take_token(self, owner: str, name: str, per_second: float, burst: int, *, now: datetime) -> float:
        with self.lock:
            decision = rules.take_token(self.buckets.get((owner, name)), _ms(now), per_second, burst)
            if isinstance(decision, TokenTaken):
                self.buckets[(owner, name)] = decision.bucket
                return 0.0
            return decision.wait_seconds

    def add_waiter(self, owner: str, name: str, run: Run, *, since: datetime) -> None:
        with self.lock:
            waiting = self.waiters.setdefault((owner, name), {})
            waiting[(run.job_id, run.run_id)] = Waiter(run.job_id, run.run_id, _ms(since))

    def remove_waiter(self, owner: str, name: str, run: Run) -> None:
        with self.lock:
            self.waiters.get((owner, name), {}).pop((run.job_id, run.run_id), None)

    def mark_limited(self, run: Run, limit: str, *, since: datetime) -> bool:
        with self.lock:
            stored = self.runs.get(run.job_id, {}).get(run.run_id)
            if stored is None or stored.status is not run.status or stored.job_version != run.job_version:
                return False
            if stored.status not in (RunStatus.QUEUED, RunStatus.RETRYING):
                return False
            self.runs[run.job_id][run.run_id] = replace(
                stored, reason=Reason.LIMITED, limited_by=limit, limited_since=_ms(since)
            )
            return True

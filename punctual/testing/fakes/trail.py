"""The ``TrailStore`` port in memory, mixed into ``MemoryStore``: a job's changes as
``punctual_functions/core/store/trail.py`` keeps them (one entry a change, by the item's sort key, put
once, read newest first; a page's cursor is the job and the last key read)."""

from __future__ import annotations

import threading
from dataclasses import replace

from punctual_functions.core.ports import BadCursorError
from punctual_functions.core.store.trail import change_sk, revision_prefix
from punctual_functions.core.trail import Change


class MemoryTrail:
    """Implements ``punctual_functions.core.ports.TrailStore`` on ``self.changes`` (job id -> sort
    key -> change) under ``self.lock``."""

    lock: threading.RLock
    changes: dict[str, dict[str, Change]]

    def put_change(self, change: Change) -> None:
        with self.lock:
            self.changes.setdefault(change.job_id, {}).setdefault(change_sk(change), _stored(change))

    def put_change_with_job(self, change: Change) -> bool:
        """The change as the job's transaction writes it: False if its key is taken (the whole write
        is refused)."""
        with self.lock:
            trail = self.changes.setdefault(change.job_id, {})
            if change_sk(change) in trail:
                return False
            trail[change_sk(change)] = _stored(change)
            return True

    def list_changes(self, job_id: str, limit: int, cursor: str | None) -> tuple[list[Change], str | None]:
        with self.lock:
            keys = sorted(self.changes.get(job_id, {}), reverse=True)
            if cursor is not None:
                of, _, after = cursor.partition("|")
                if of != job_id or after not in keys:
                    raise BadCursorError("not a cursor of this listing")
                keys = keys[keys.index(after) + 1 :]
            page = keys[:limit]
            more = len(keys) > limit
            return [self.changes[job_id][key] for key in page], f"{job_id}|{page[-1]}" if more else None

    def revision_changes(self, job_id: str, revision: int) -> list[Change]:
        with self.lock:
            low, high = revision_prefix(revision), revision_prefix(revision + 1) + "0#~"
            trail = self.changes.get(job_id, {})
            kept = (trail[key] for key in sorted(trail) if low <= key <= high)
            return [change for change in kept if change.makes_revision]


def _stored(change: Change) -> Change:
    """As the table keeps it: the time to the millisecond."""
    return replace(change, at=change.at.replace(microsecond=change.at.microsecond // 1000 * 1000))

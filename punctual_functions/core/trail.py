"""The audit trail: each change a caller makes to a job, who made it, when and why, and what changed
(docs/architecture.md, "The audit trail"). Plain Python: the store keeps a change as one item, the
API makes them and reads them back."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from punctual_functions.core.model import PAUSED_BY_PUNCTUAL, Job, JobStatus, OnComplete, iso

# Revisions are written with this many digits in the change item's key, so that they sort.
REVISION_DIGITS = 8


class ChangeAction(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    PAUSED = "paused"
    RESUMED = "resumed"
    CANCELLED = "cancelled"
    RESTORED = "restored"
    RUN_NOW = "run_now"
    BACKFILLED = "backfilled"


@dataclass(frozen=True)
class Caller:
    """Who makes a request, as the API saw it: the owner its jobs belong to, the principal itself (an
    assumed role's session, an API key's id, a local token's owner), and the request's id."""

    owner: str
    principal: str
    request_id: str


@dataclass(frozen=True)
class Change:
    """One change of a job. ``revision``: the job's revision after it (a change that did not write
    the job, such as run now, keeps the job's current one); ``before``: the job's definition before a
    change that wrote it (``definition_of``): revision N's definition is kept by the change that made
    N + 1 (the job itself holds the current one, so a create writes none); ``diff``: each field that
    changed, ``[before, after]``; ``details``: what an action did besides (a run's id, a backfill's
    range, the revision a restore restored)."""

    job_id: str
    revision: int
    at: datetime
    action: ChangeAction
    by: str
    request_id: str
    note: str | None = None
    diff: dict[str, list[Any]] = field(default_factory=dict)
    before: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def makes_revision(self) -> bool:
        """Whether the change wrote the job (and so made its revision), rather than acting on it."""
        return self.action not in (ChangeAction.RUN_NOW, ChangeAction.BACKFILLED)


def definition_of(job: Job) -> dict[str, Any]:
    """The job's definition as the API shows it: what the job says of itself (not its runs, nor the
    time, nor its id and counters), the part of its view a change can change."""
    schedule: dict[str, Any] = dict(job.schedule.to_dict())
    schedule.pop("anchor", None)
    schedule.update(
        misfire=job.misfire.value,
        overlap=job.overlap.value,
        catchup_seconds=job.catchup_seconds,
        calendar=job.calendar,
        on_excluded=job.on_excluded.value if job.calendar is not None else None,
    )
    pause = None
    if job.status is JobStatus.PAUSED:
        pause = {
            "at": iso(job.paused_at),
            "by": job.paused_by,
            "note": job.pause_note,
            "until": iso(job.pause_until),
        }
    return {
        "name": job.name,
        "status": job.status.value,
        "schedule": schedule,
        "target": job.target,
        "payload": job.payload,
        "retry": job.retry.to_dict(),
        "timeout_seconds": job.timeout_seconds,
        "jitter_seconds": job.jitter_seconds,
        "pause_on_failures": job.pause_on_failures,
        "max_runs": job.max_runs,
        "max_concurrent": job.max_concurrent,
        "alerts": job.alerts.to_dict() if job.alerts is not None else None,
        "dead_letter": job.dead_letter,
        "on_complete": job.on_complete.value,
        "delete_after_days": job.delete_after_days if job.on_complete is OnComplete.DELETE else None,
        "pause": pause,
        "tags": job.tags,
        "has_signing_secret": job.secret is not None,
    }


def change_of(
    action: ChangeAction,
    before: Job | None,
    after: Job,
    at: datetime,
    *,
    by: str,
    request_id: str,
    note: str | None = None,
    details: dict[str, Any] | None = None,
) -> Change:
    """The record of a change that wrote ``after`` (``before``: the job as it was; None for a create,
    which keeps no definition: the job holds it)."""
    earlier = definition_of(before) if before is not None else None
    return Change(
        job_id=after.job_id,
        revision=after.revision,
        at=at,
        action=action,
        by=by,
        request_id=request_id,
        note=note,
        diff=diff(earlier, definition_of(after)) if earlier is not None else {},
        before=earlier,
        details=details or {},
    )


def diff(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, list[Any]]:
    """The fields of ``after`` that differ from ``before``, each ``[before, after]`` (a field absent
    on one side is None there); nested objects by their dotted path (``schedule.cron``,
    ``retry.max_attempts``), lists and scalars whole."""
    changed: dict[str, list[Any]] = {}
    _walk("", before or {}, after, changed)
    return changed


def _walk(prefix: str, before: dict[str, Any], after: dict[str, Any], changed: dict[str, list[Any]]) -> None:
    for key in sorted({*before, *after}):
        old, new = before.get(key), after.get(key)
        path = f"{prefix}{key}"
        if isinstance(old, dict) and isinstance(new, dict):
            _walk(path + ".", old, new, changed)
        elif old != new:
            changed[path] = [old, new]


def by_punctual(
    action: ChangeAction, before: Job, after: Job, now: datetime, note: str | None
) -> tuple[Job, Change]:
    """A change Punctual makes itself (a pause after failures, the end of a pause's ``until``): the
    job at its next revision and the change's record, by ``punctual``."""
    after = replace(after, revision=before.revision + 1)
    return after, change_of(action, before, after, now, by=PAUSED_BY_PUNCTUAL, request_id="", note=note)

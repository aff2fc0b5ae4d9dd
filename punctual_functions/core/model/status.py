"""Statuses and kinds: of jobs, runs and triggers, why a run did not run, and the run state machine."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class RunStatus(StrEnum):
    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    RETRYING = "RETRYING"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_RUN_STATUSES


TERMINAL_RUN_STATUSES = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.SKIPPED}
)

# The run state machine: which status may follow which. RUNNING -> RUNNING is a takeover of an attempt
# whose worker died (its lease expired).
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.SCHEDULED: frozenset({RunStatus.QUEUED, RunStatus.SKIPPED, RunStatus.CANCELLED}),
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.SKIPPED, RunStatus.CANCELLED}),
    RunStatus.RUNNING: frozenset(
        {RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.RETRYING, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.RETRYING: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
    RunStatus.SKIPPED: frozenset(),
}


class InvalidTransitionError(ValueError):
    pass


def check_transition(current: RunStatus, new: RunStatus) -> None:
    if new not in RUN_TRANSITIONS[current]:
        raise InvalidTransitionError(f"a {current} run cannot become {new}")


class TriggerState(StrEnum):
    """An occurrence's trigger is written PENDING, or CLAIMED (``claimed_at``, no token) when its
    writer dispatches it itself at once (``make_trigger(held=True)``); it is never updated after: it
    counts as dispatched once its run exists, and expires by TTL (``TRIGGER_RETENTION``). A sweep
    leaves a CLAIMED trigger alone until ``claim_timeout``. A retry wake-up is claimed (CLAIMED, with
    the claim's token) and deleted once sent; a claimed one whose dispatcher died is claimed again
    after ``claim_timeout``."""

    PENDING = "PENDING"
    CLAIMED = "CLAIMED"


class RunKind(StrEnum):
    SCHEDULED = "scheduled"
    MANUAL = "manual"
    PAUSE = "pause"  # a row standing for a pause span: the occurrences not run while paused
    BACKFILL = "backfill"  # a past occurrence run again on request (POST /v1/jobs/{job_id}/backfill)


class Reason(StrEnum):
    """Why a run did not run (SKIPPED, CANCELLED): the history of non-runs (docs/architecture.md)."""

    PAUSED = "paused"
    SUPERSEDED = "superseded"
    OVERLAP = "overlap"
    MISFIRE_SKIPPED = "misfire_skipped"
    MISFIRE_COLLAPSED = "misfire_collapsed"
    JOB_CANCELLED = "job_cancelled"
    CANCELLED = "cancelled"
    CALENDAR = "calendar"  # its day is one the job's calendar excludes (on_excluded: skip)
    LIMITED = "limited"  # a QUEUED run waiting for a slot of a target limit

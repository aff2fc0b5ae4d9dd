"""The run lifecycle as pure decisions: given a run, its job and what happened, what comes next.

The worker executes these decisions (the store's conditional writes make each one land once); they
hold no I/O, so every rule is tested in microseconds (``tests/unit/test_lifecycle.py``). The statuses
they lead to are those of the state machine in ``functions/core/model.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from functions.core.model import Job, JobStatus, Reason, Run, RunKind, RunStatus

CANCELLED_ERROR = "cancelled"  # what a target reports when the attempt was aborted for a cancel


@dataclass(frozen=True)
class Ignore:
    """Nothing to do: the run is gone or has finished (a duplicate or late message)."""


@dataclass(frozen=True)
class Cancel:
    """End the run CANCELLED without starting it."""

    reason: str
    code: Reason = Reason.JOB_CANCELLED


@dataclass(frozen=True)
class Skip:
    """End the run SKIPPED without starting it."""

    reason: str
    code: Reason


@dataclass(frozen=True)
class Proceed:
    """Go on towards an attempt."""


@dataclass(frozen=True)
class Finish:
    """Record the attempt's outcome; the run ends ``status`` (a one-off job follows it: see
    ``model.job_history``)."""

    status: RunStatus
    attempt_outcome: str  # SUCCEEDED | FAILED | CANCELLED, as the attempt is recorded


@dataclass(frozen=True)
class RetryAt:
    """Record the attempt as RETRIABLE; the run is RETRYING until ``at``."""

    at: datetime
    delay_seconds: float


def on_arrival(run: Run | None, job: Job | None) -> Ignore | Cancel | Proceed:
    """What a work message comes to, read with its run and job (and again after waiting)."""
    if run is None or run.status.is_terminal:
        return Ignore()
    if job is None or job.status is JobStatus.CANCELLED:
        return Cancel("job cancelled")
    return Proceed()


def overtook_newer_dispatch(stored: Run, queued: Run) -> bool:
    """A message of a newer dispatch of the occurrence (``queued``, a later job version: a resume or a
    reschedule) read the older version's never-started run, which that dispatch is about to replace.
    Acting on the stored run would drop the newer one (it is ended, or skipped as superseded)."""
    return (
        stored.job_version < queued.job_version
        and stored.status in (RunStatus.QUEUED, RunStatus.SKIPPED)
        and stored.attempt == 0
    )


def superseded(run: Run, job: Job) -> Skip | None:
    """A scheduled occurrence queued before its job was paused or changed must not start (run now
    fires regardless, and an attempt under way is not stopped by it)."""
    if run.status is not RunStatus.QUEUED or run.kind is not RunKind.SCHEDULED:
        return None
    if job.status is JobStatus.PAUSED and not job.pause_ended(run.next_attempt_at or run.due_at):
        return Skip("job paused", Reason.PAUSED)
    if job.version != run.job_version:
        return Skip("superseded by a change to the job", Reason.SUPERSEDED)
    return None


def overlap_blocks(run: Run, job: Job, earlier: list[Run]) -> Skip | None:
    """The ``skip`` overlap policy: a queued run does not start while an earlier one is under way."""
    if job.overlap.value != "skip" or run.status is not RunStatus.QUEUED:
        return None
    if any(other.status in (RunStatus.RUNNING, RunStatus.RETRYING) for other in earlier):
        return Skip("previous run still running", Reason.OVERLAP)
    return None


def after_attempt(
    job: Job,
    run: Run,
    *,
    succeeded: bool,
    retriable: bool,
    error: str | None,
    finished_at: datetime,
    rng: random.Random,
) -> Finish | RetryAt:
    """The outcome of attempt ``run.attempt``: done, failed for good, cancelled, or retried."""
    cancelled = error == CANCELLED_ERROR
    if not succeeded and retriable and not cancelled and job.retry.has_attempts_left(run.attempt):
        delay = job.retry.delay_after(run.attempt, rng)
        return RetryAt(finished_at + timedelta(seconds=delay), delay)
    if succeeded:
        status, outcome = RunStatus.SUCCEEDED, "SUCCEEDED"
    elif cancelled:
        status, outcome = RunStatus.CANCELLED, "CANCELLED"
    else:
        status, outcome = RunStatus.FAILED, "FAILED"
    return Finish(status, outcome)

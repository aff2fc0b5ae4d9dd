"""The run lifecycle as pure decisions: given a run, its job and what happened, what comes next.

The worker executes these decisions (the store's conditional writes make each one land once); they
hold no I/O, so every rule is tested in microseconds (``tests/unit/test_lifecycle.py``). The statuses
they lead to are those of the state machine in ``punctual_functions/core/model/status.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual_functions.core.model import Job, JobStatus, OverlapPolicy, Reason, Run, RunKind, RunStatus

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
    overlap_with: str | None = None  # the run it is skipped for (the overlap policy)


@dataclass(frozen=True)
class Wait:
    """Do not start yet: wait behind ``behind``, an earlier run that has not ended (a buffering
    overlap policy)."""

    behind: Run


@dataclass(frozen=True)
class CancelOther:
    """Cancel ``other``, an earlier run that has not ended, before starting (``cancel_other``)."""

    other: Run


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


def run_of_message(stored: Run | None, queued: Run | None, now: datetime, retention: timedelta) -> Run | None:
    """The run a work message stands for: the stored one, or, when the dispatcher's write of it has not
    landed yet (it writes the QUEUED run just after sending, so a message can come first), the one the
    message carries. Never a carried run older than the runs' retention: its run may have expired, and
    it must not run again. Its age counts from its dispatch (a backfill may stand for an occurrence
    long past)."""
    if stored is not None or queued is None:
        return stored
    age = now - (queued.queued_at or queued.scheduled_for)
    return queued if age < retention else None


def lease_left(run: Run, now: datetime) -> float | None:
    """Seconds another worker's lease on ``run``'s attempt still holds (it holds the attempt, or held
    it and died); None when no lease holds it."""
    if run.status is RunStatus.RUNNING and run.lease_until is not None and now < run.lease_until:
        return (run.lease_until - now).total_seconds()
    return None


def short_of_time(
    run: Run, job: Job, now: datetime, deadline: datetime, *, max_early_wait: float, margin: float
) -> float | None:
    """The seconds left before ``deadline`` (the invocation is stopped) when they are fewer than the
    attempt needs: the wait for its second, the job's timeout and the time to record its outcome.
    None when they suffice, or when the run is not due within ``max_early_wait`` (its message goes
    back to the queue anyway)."""
    wait = max(0.0, ((run.next_attempt_at or run.scheduled_for) - now).total_seconds())
    if wait > max_early_wait:
        return None
    left = (deadline - now).total_seconds()
    return left if left < wait + job.timeout_seconds + margin else None


def late_by(run: Run, job: Job) -> str | None:
    """The ``late`` alert's detail when the run's first attempt started later than its job allows."""
    if job.alerts is None or job.alerts.late_seconds is None:
        return None
    late_ms = run.lateness_ms or 0
    if late_ms <= job.alerts.late_seconds * 1000:
        return None
    return f"started {late_ms / 1000:.1f} s after its due time"


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


# How many runs scheduled just before an occurrence its overlap decision reads (one consistent Query).
OVERLAP_LOOKBACK = 10
_UNDER_WAY = (RunStatus.RUNNING, RunStatus.RETRYING)


def overlap_applies(run: Run, job: Job) -> bool:
    """Whether ``run`` meets its job's overlap policy: a queued occurrence of a job that does not
    allow overlap. A backfill has its own policy (``allow`` or ``buffer_all``, chained by the worker)."""
    return (
        job.overlap is not OverlapPolicy.ALLOW
        and run.status is RunStatus.QUEUED
        and run.kind is not RunKind.BACKFILL
    )


def overlap_blocker(job: Job, earlier: list[Run], fetch: Callable[[str], Run | None]) -> Run | None:
    """The nearest earlier run that has not ended, from the runs scheduled before (newest first).

    Rows that did not run for another reason (a pause, a misfire stretch, a superseded occurrence)
    are passed over; a run that ran and ended stops the search (under these policies runs end in
    order, so nothing before it is still under way). A row skipped for overlap names the run it was
    skipped for: that run is read (``fetch``), however far back it lies. Under ``skip`` a queued
    earlier run is passed over too (it meets the policy itself, at its own second)."""
    for other in earlier:
        if other.status in _UNDER_WAY:
            return other
        if other.status is RunStatus.QUEUED:
            if job.overlap is OverlapPolicy.SKIP:
                continue
            return other
        if other.status is RunStatus.SKIPPED and other.reason is Reason.OVERLAP and other.overlap_with:
            pointed = fetch(other.overlap_with)
            if pointed is None or pointed.status not in (*_UNDER_WAY, RunStatus.QUEUED):
                return None
            return pointed
        if other.attempt > 0:
            return None
    return None


def overlap_decision(run: Run, job: Job, blocker: Run | None) -> Proceed | Skip | Wait | CancelOther:
    """The job's overlap policy for a queued occurrence, given the nearest earlier run not ended
    (``overlap_blocker``). The table of docs/architecture.md ("Overlap policies")."""
    if blocker is None or not overlap_applies(run, job):
        return Proceed()
    under_way = blocker.status in _UNDER_WAY
    policy = job.overlap
    if policy is OverlapPolicy.SKIP:
        if not under_way:
            return Proceed()
        return Skip(f"run {blocker.run_id} still under way", Reason.OVERLAP, blocker.run_id)
    if policy is OverlapPolicy.CANCEL_OTHER:
        return CancelOther(blocker)
    if policy is OverlapPolicy.BUFFER_ONE and blocker.status is RunStatus.QUEUED and blocker.overlap_with:
        return Skip(
            f"run {blocker.run_id} already waits for the one under way", Reason.OVERLAP, blocker.run_id
        )
    return Wait(blocker)


def wait_limit(blocker: Run, job: Job, now: datetime, margin_seconds: float) -> float:
    """How long a waiting run's message stays away at most: until the run it waits behind could end
    at the latest (its attempt's timeout, or its next attempt's), when nothing woke it earlier."""
    timeout = timedelta(seconds=job.timeout_seconds + margin_seconds)
    if blocker.status is RunStatus.RUNNING:
        ends = max(blocker.lease_until or now, (blocker.started_at or now) + timeout)
    elif blocker.status is RunStatus.RETRYING:
        ends = (blocker.next_attempt_at or now) + timeout
    else:  # waiting itself, or about to start
        ends = now + timeout
    return max(1.0, (ends - now).total_seconds())


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

"""Runs and their attempts, and what a job's view derives from its history."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from punctual_functions.core.model.ids import iso, parse_iso, run_id_for, to_ms
from punctual_functions.core.model.status import JobStatus, Reason, RunKind, RunStatus

if TYPE_CHECKING:
    from punctual_functions.core.model.job import Job


@dataclass(frozen=True)
class Attempt:
    """One attempt of a run, as recorded in its history."""

    number: int
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str | None = None  # SUCCEEDED | FAILED | RETRIABLE | CANCELLED | TAKEN_OVER
    duration_ms: int | None = None
    status_code: int | None = None
    error: str | None = None
    response: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "outcome": self.outcome,
            "duration_ms": self.duration_ms,
            "status_code": self.status_code,
            "error": self.error,
            "response": self.response,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            number=int(data["attempt"]),
            started_at=parse_iso(data["started_at"]),
            finished_at=parse_iso(data["finished_at"]) if data.get("finished_at") else None,
            outcome=data.get("outcome"),
            duration_ms=data.get("duration_ms"),
            status_code=data.get("status_code"),
            error=data.get("error"),
            response=data.get("response") or "",
        )


@dataclass(frozen=True)
class Run:
    job_id: str
    run_id: str
    owner: str
    scheduled_for: datetime
    status: RunStatus
    kind: RunKind = RunKind.SCHEDULED
    attempt: int = 0
    queued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    lateness_ms: int | None = None
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    lease_token: str | None = None
    executions: int = 0  # attempt starts including takeovers: more than `attempt` only after a crash
    job_version: int = 1  # the job version it was dispatched for: a later schedule change supersedes it
    error: str | None = None
    attempts: tuple[Attempt, ...] = ()
    jitter_ms: int = 0  # its first attempt is due this long after scheduled_for (the job's jitter)
    reason: Reason | None = None  # why it did not run (SKIPPED, CANCELLED without an attempt)
    covers: int = 1  # a row standing for several occurrences that did not run (a pause, a misfire stretch)
    covers_until: datetime | None = None  # the last of them
    note: str | None = None  # a pause span's note
    by: str | None = None  # who paused, for a pause span
    overlap_with: str | None = None  # the run it was skipped for, waits behind, or was cancelled for
    alerts_sent: frozenset[str] = frozenset()  # the alert kinds sent for it (once each)
    # A buffered backfill's run: its end dispatches the next occurrence, up to this one.
    backfill_until: datetime | None = None
    # The job's calendar, on a row of a day it excluded (reason calendar) or a run it moved: the
    # occurrences moved onto this run's time from excluded days (their original times).
    calendar: str | None = None
    moved_from: tuple[datetime, ...] = ()
    # Target limits: the limit it waits on, or last waited on (``reason`` LIMITED while it waits),
    # since when, and how long its attempts waited in all (set as an attempt starts).
    limited_by: str | None = None
    limited_since: datetime | None = None
    limited_ms: int | None = None

    @property
    def due_at(self) -> datetime:
        """When its first attempt is due: the scheduled time plus the occurrence's jitter."""
        return self.scheduled_for + timedelta(milliseconds=self.jitter_ms)

    def summary(self) -> dict[str, Any]:
        """What the job view shows as its ``last_run``."""
        return {
            "run_id": self.run_id,
            "status": self.status.value,
            "scheduled_for": iso(self.scheduled_for),
            "finished_at": iso(self.finished_at),
            "lateness_ms": self.lateness_ms,
            "attempt": self.attempt,
            "error": self.error,
        }


def lateness_of(run: Run, started: datetime) -> int:
    """Milliseconds from the run's due time (its scheduled time, plus its jitter; for a backfill, its
    dispatch) to ``started``, when its first attempt called its target (never negative: the worker
    waits for the second)."""
    due = run.queued_at if run.kind is RunKind.BACKFILL and run.queued_at is not None else run.due_at
    return to_ms(started) - to_ms(due)


def started_run(run: Run, *, token: str, now: datetime, lease_until: datetime) -> Run:
    """The run as ``start_attempt`` leaves it: the next attempt RUNNING under our lease, or the same
    attempt taken over when its worker's lease lapsed. Lateness is the first attempt's, kept."""
    takeover = run.status is RunStatus.RUNNING
    waited = run.reason is Reason.LIMITED and run.limited_since is not None
    return replace(
        run,
        reason=None if run.reason is Reason.LIMITED else run.reason,
        limited_ms=(
            (run.limited_ms or 0) + max(0, to_ms(now) - to_ms(run.limited_since))
            if waited and run.limited_since is not None
            else run.limited_ms
        ),
        status=RunStatus.RUNNING,
        attempt=run.attempt if takeover else run.attempt + 1,
        lease_token=token,
        lease_until=lease_until,
        started_at=run.started_at or now,
        lateness_ms=(run.lateness_ms if run.lateness_ms is not None else lateness_of(run, now)),
        executions=run.executions + 1,
    )


# How many of a job's newest runs its view reads to derive ``last_run`` and ``run_counts``.
RUN_COUNT_WINDOW = 1000


# Rows of scheduled occurrences that do not count against max_runs: the misfire policy's (never set
# off) and those a pause or a change of schedule stopped (the chain that follows counts again).
_NOT_COUNTED = (Reason.MISFIRE_SKIPPED, Reason.MISFIRE_COLLAPSED, Reason.PAUSED, Reason.SUPERSEDED)


def runs_made(runs: list[Run]) -> int:
    """How many of ``runs`` count against ``max_runs``: the scheduled occurrences the dispatcher set
    off, whatever became of them (an overlap skip or a failure counts), except those a pause or a
    schedule change stopped; not run now or backfills, nor the misfire policy's rows."""
    return sum(1 for run in runs if run.kind is RunKind.SCHEDULED and run.reason not in _NOT_COUNTED)


@dataclass(frozen=True)
class JobHistory:
    """What a job's view derives from its newest runs. None of it is written on the job item: the
    worker records an outcome on the run alone (docs/architecture.md, "The write path")."""

    status: JobStatus
    last_run: Run | None  # the newest finished run
    run_counts: dict[str, int]  # finished runs by status, over the newest RUN_COUNT_WINDOW runs


def job_history(job: Job, runs: list[Run]) -> JobHistory:
    """Derive the job's view from ``runs``, its newest runs, newest first.

    A one-off job follows its run: ``COMPLETED`` once the run of its ``at`` time succeeded, ``FAILED``
    once it failed for good. A paused or cancelled job keeps the status it was given.
    """
    # A pause span is a row of the history, not a run: it is neither the last run nor counted.
    finished = [run for run in runs if run.status.is_terminal and run.kind is not RunKind.PAUSE]
    counts: dict[str, int] = {}
    for run in finished:
        counts[run.status.value] = counts.get(run.status.value, 0) + 1
    status = job.status
    if status is JobStatus.ACTIVE and not job.schedule.is_recurring:
        at = job.schedule.first_fire_time()
        due = to_ms(at) if at is not None else None
        own = next((r for r in runs if r.kind is RunKind.SCHEDULED and to_ms(r.scheduled_for) == due), None)
        if own is not None and own.status is RunStatus.SUCCEEDED:
            status = JobStatus.COMPLETED
        elif own is not None and own.status is RunStatus.FAILED:
            status = JobStatus.FAILED
        elif own is not None and own.status is RunStatus.CANCELLED:
            status = JobStatus.CANCELLED  # its one run was cancelled: nothing is left to run
    return JobHistory(status, finished[0] if finished else None, counts)


# The most occurrences one row of the history of non-runs counts (run_once's own bound).
MAX_ROW_COVERS = 100_000


def not_run_row(
    job: Job,
    start: datetime,
    occurrences: list[datetime],
    reason: Reason,
    now: datetime,
    *,
    kind: RunKind = RunKind.SCHEDULED,
    error: str,
    note: str | None = None,
    by: str | None = None,
) -> Run:
    """One SKIPPED row for a stretch of occurrences that did not run, at ``start`` (its first one, or
    for a pause span the pause's start): ``covers`` them, up to ``covers_until``."""
    return Run(
        job_id=job.job_id,
        run_id=run_id_for(job.job_id, start, kind),
        owner=job.owner,
        scheduled_for=start,
        status=RunStatus.SKIPPED,
        kind=kind,
        queued_at=now,
        finished_at=now,
        job_version=job.version,
        error=error,
        reason=reason,
        covers=len(occurrences),
        covers_until=occurrences[-1] if occurrences else None,
        note=note,
        by=by,
    )

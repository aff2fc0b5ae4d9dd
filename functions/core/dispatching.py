"""Claim → send: turning due triggers into work messages.

Used by the dispatcher's sweep and by the API (a job due within the look-ahead is dispatched at once,
because the sweep for its minute may already have run). The protocol is in docs/architecture.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from functions.core import crash_points
from functions.core.model import (
    Job,
    JobStatus,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    TriggerState,
    bucket_of,
    bucket_start,
    make_trigger,
    next_bucket,
    plan_claim,
    run_id_for,
    utcnow,
)
from functions.core.observability import logger
from functions.core.ports import ClaimResult, Queue, Tables
from functions.core.queue import WorkMessage, delay_for
from functions.core.settings import Settings

MAX_ROUNDS_PER_BUCKET = 1000


@dataclass
class DispatchReport:
    claimed: int = 0
    sent: int = 0
    skipped: int = 0
    stale: int = 0
    recovered: int = 0
    lost_races: int = 0

    def add(self, other: DispatchReport) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class SweepReport:
    dispatch: DispatchReport = field(default_factory=DispatchReport)
    buckets_swept: int = 0
    cursors_advanced: int = 0
    lag_seconds: float = 0.0

    def add(self, other: SweepReport) -> None:
        """Sum the counts; the lag is the largest (the oldest cursor wins)."""
        self.dispatch.add(other.dispatch)
        self.buckets_swept += other.buckets_swept
        self.cursors_advanced += other.cursors_advanced
        self.lag_seconds = max(self.lag_seconds, other.lag_seconds)


@dataclass(frozen=True)
class _Outgoing:
    trigger: Trigger
    message: WorkMessage
    fire_at: datetime


@dataclass(frozen=True)
class _Outcome:
    """What claiming one trigger came to: counts, and a message to send or a trigger to delete."""

    report: DispatchReport
    outgoing: _Outgoing | None = None
    finished: Trigger | None = None
    # The next occurrence this claim wrote (recurring jobs), to be claimed too if it is due soon.
    chained: Trigger | None = None


def shard_groups(shard_count: int, sweeps: int) -> list[list[int]]:
    """The shards split into at most ``sweeps`` contiguous groups of nearly equal size."""
    count = max(1, min(shard_count, sweeps))
    size, extra = divmod(shard_count, count)
    groups: list[list[int]] = []
    start = 0
    for index in range(count):
        end = start + size + (index < extra)
        groups.append(list(range(start, end)))
        start = end
    return groups


class Dispatcher:
    """Claims due triggers with conditional writes and sends them to SQS with ``DelaySeconds``."""

    def __init__(
        self,
        store: Tables,
        queue: Queue,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        crash_point: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.settings = settings
        self.clock = clock
        # Tests make the dispatcher "die" at named points to prove nothing is lost.
        self.crash_point = crash_point or crash_points.crash_point

    # ---------------------------------------------------------------------------------- dispatch

    def dispatch(self, triggers: Iterable[Trigger], now: datetime) -> DispatchReport:
        """Claim each trigger, send the claimed ones in batches, then delete their triggers.

        A claim of a recurring occurrence writes the next one; when that is still to come but falls
        due within the look-ahead (a seconds-level cron), it is claimed and sent in the next round
        here rather than left for the next tick, which may come too late for it. Whoever dispatches
        (the sweep, or the API right after a create, PATCH, resume or run now) thus sends the chain up
        to ``now + look-ahead``, and the next tick carries on from there. Occurrences already missed
        (a ``run_all`` catch-up) are not followed here: the sweep re-reads their bucket, within its
        own time budget, and an API request is not held up by an outage's worth of claims.
        """
        horizon = now + timedelta(seconds=self.settings.lookahead_seconds)
        jobs: dict[str, Job | None] = {}
        report = DispatchReport()
        pending = list(triggers)
        while pending:
            chained = self._dispatch_round(pending, now, jobs, report)
            pending = [trigger for trigger in chained if now < trigger.fire_at <= horizon]
        return report

    def _dispatch_round(
        self, pending: list[Trigger], now: datetime, jobs: dict[str, Job | None], report: DispatchReport
    ) -> list[Trigger]:
        """Claim ``pending``, send what was claimed, delete the sent triggers; return the next
        occurrences the claims wrote.

        Claims are independent conditional writes, so a page of triggers is claimed
        ``claim_concurrency`` at a time: one sweep waits on several round trips at once.
        """
        concurrency = min(self.settings.claim_concurrency, len(pending))
        if concurrency > 1:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="claim") as pool:
                outcomes = list(pool.map(lambda trigger: self._dispatch_one(trigger, now, jobs), pending))
        else:
            outcomes = [self._dispatch_one(trigger, now, jobs) for trigger in pending]
        outgoing: list[_Outgoing] = []
        finished: list[Trigger] = []
        chained: list[Trigger] = []
        for outcome in outcomes:
            report.add(outcome.report)
            if outcome.outgoing is not None:
                outgoing.append(outcome.outgoing)
            if outcome.finished is not None:
                finished.append(outcome.finished)
            if outcome.chained is not None:
                chained.append(outcome.chained)
        self.crash_point("after_claim_before_send")
        if outgoing:
            send_time = self.clock()
            self.queue.send([(item.message, delay_for(item.fire_at, send_time)) for item in outgoing])
            report.sent += len(outgoing)
            for item in outgoing:
                logger.info(
                    "run dispatched",
                    extra={"job_id": item.message.job_id, "run_id": item.message.run_id},
                )
        self.crash_point("after_send_before_delete")
        self.store.delete_triggers([item.trigger for item in outgoing] + finished)
        return chained

    def _dispatch_one(self, trigger: Trigger, now: datetime, jobs: dict[str, Job | None]) -> _Outcome:
        """Claim one trigger; ``jobs`` caches the jobs read so far (shared by concurrent claims)."""
        report = DispatchReport()
        token = uuid.uuid4().hex
        if trigger.state is TriggerState.CLAIMED or trigger.is_retry:
            # The run exists already: a retry wake-up, or a claim whose dispatcher died before
            # sending. Sending again is safe: the worker ignores a duplicate.
            if self.store.claim_trigger_only(trigger, token=token, now=now):
                report.recovered += trigger.state is TriggerState.CLAIMED
                report.claimed += 1
                message = WorkMessage(trigger.job_id, trigger.run_id)
                return _Outcome(report, outgoing=_Outgoing(trigger, message, trigger.fire_at))
            report.lost_races += 1
            return _Outcome(report)
        if trigger.job_id not in jobs:
            jobs[trigger.job_id] = self.store.get_job(trigger.job_id)
        job = jobs[trigger.job_id]
        if job is None or (
            trigger.kind is RunKind.SCHEDULED
            and (job.status is not JobStatus.ACTIVE or job.version != trigger.job_version)
        ):
            self.store.delete_trigger(trigger)
            report.stale += 1
            return _Outcome(report)
        result, run, next_trigger = self._claim(trigger, job, token, now)
        if result is ClaimResult.LOST:
            report.lost_races += 1
            return _Outcome(report)
        if result is ClaimResult.STALE:
            self.store.delete_trigger(trigger)
            jobs.pop(trigger.job_id, None)
            report.stale += 1
            return _Outcome(report)
        report.claimed += 1
        if run.status is RunStatus.QUEUED:
            message = WorkMessage(job.job_id, run.run_id)
            fire_at = max(run.scheduled_for, trigger.fire_at)
            return _Outcome(report, outgoing=_Outgoing(trigger, message, fire_at), chained=next_trigger)
        report.skipped += 1
        return _Outcome(report, finished=trigger, chained=next_trigger)

    def _claim(
        self, trigger: Trigger, job: Job, token: str, now: datetime
    ) -> tuple[ClaimResult, Run, Trigger | None]:
        """The claim's result, the run it created (QUEUED, or SKIPPED by the misfire policy) and the
        next occurrence it wrote."""
        next_trigger = None
        if trigger.kind is RunKind.MANUAL:
            run = _new_run(job, trigger.scheduled_for, RunKind.MANUAL, RunStatus.QUEUED, now)
            result = self.store.claim(trigger, job, token=token, now=now, run=run, next_trigger=None)
        else:
            threshold = timedelta(seconds=self.settings.misfire_threshold_seconds)
            plan = plan_claim(job, trigger.scheduled_for, now, threshold)
            if plan.run_scheduled_for is not None:
                run = _new_run(job, plan.run_scheduled_for, RunKind.SCHEDULED, RunStatus.QUEUED, now)
            else:
                assert plan.skipped is not None
                run = _new_run(job, plan.skipped, RunKind.SCHEDULED, RunStatus.SKIPPED, now)
                run = replace(run, finished_at=now, error="missed (misfire policy)")
            if plan.next_occurrence is not None:
                next_trigger = make_trigger(
                    job, plan.next_occurrence, now=now, shard_count=self.settings.shard_count
                )
            # A recurring schedule that ran out (end_at, year field) completes with its last claim.
            job_status = JobStatus.COMPLETED if job.schedule.is_recurring and next_trigger is None else None
            result = self.store.claim(
                trigger, job, token=token, now=now, run=run, next_trigger=next_trigger, job_status=job_status
            )
        return result, run, next_trigger

    # ------------------------------------------------------------------------------------- sweep

    def sweep(self, now: datetime | None = None, shards: Sequence[int] | None = None) -> SweepReport:
        """One tick over ``shards`` (all by default), in parallel, each from its cursor to now +
        look-ahead. A tick fanned out over several invocations gives each its group of shards."""
        now = now or self.clock()
        shards = list(range(self.settings.shard_count)) if shards is None else list(shards)
        report = SweepReport()
        workers = max(1, min(len(shards), 16))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sweep") as pool:
            for shard_report in pool.map(lambda shard: self.sweep_shard(shard, now), shards):
                report.add(shard_report)
        oldest = self.store.oldest_cursor(shards)
        if oldest is not None:
            report.lag_seconds = max(0.0, (self.clock() - bucket_start(oldest)).total_seconds())
        return report

    def sweep_shard(self, shard: int, now: datetime) -> SweepReport:
        report = SweepReport()
        cursor = self.store.get_cursor(shard)
        start = cursor or bucket_of(now - timedelta(seconds=self.settings.initial_catchup_seconds))
        horizon = now + timedelta(seconds=self.settings.lookahead_seconds)
        claim_timeout = timedelta(seconds=self.settings.claim_timeout_seconds)
        safety = timedelta(seconds=self.settings.bucket_safety_seconds)
        advance_to = start
        can_advance = True
        bucket = start
        while bucket_start(bucket) <= horizon:
            remaining: list[Trigger] = []
            for _ in range(MAX_ROUNDS_PER_BUCKET):
                remaining = self.store.query_bucket(bucket, shard)
                due = [
                    t
                    for t in remaining
                    if t.fire_at <= horizon
                    and (
                        t.state is TriggerState.PENDING
                        or (t.claimed_at is not None and now - t.claimed_at > claim_timeout)
                    )
                ]
                if not due:
                    break
                report.dispatch.add(self.dispatch(due, now))
            report.buckets_swept += 1
            passed = bucket_start(bucket) + timedelta(minutes=1) + safety <= now
            if can_advance and passed and not remaining:
                advance_to = next_bucket(bucket)
            else:
                can_advance = False
            bucket = next_bucket(bucket)
        if advance_to != cursor and (cursor is None or advance_to > cursor):
            self.crash_point("before_cursor_advance")
            report.cursors_advanced += int(self.store.advance_cursor(shard, cursor, advance_to))
        return report


def _new_run(job: Job, scheduled_for: datetime, kind: RunKind, status: RunStatus, now: datetime) -> Run:
    return Run(
        job_id=job.job_id,
        run_id=run_id_for(job.job_id, scheduled_for, kind),
        owner=job.owner,
        scheduled_for=scheduled_for,
        status=status,
        kind=kind,
        queued_at=now,
        next_attempt_at=scheduled_for,
        job_version=job.version,
    )

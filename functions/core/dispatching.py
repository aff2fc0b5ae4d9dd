"""Claim → send: turning due triggers into work messages.

Used by the dispatcher's sweep and by the API (a job due within the look-ahead is dispatched at once,
because the sweep for its minute may already have run). The protocol is in docs/architecture.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from functions.core import faults
from functions.core.model import (
    Job,
    JobStatus,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    bucket_of,
    bucket_start,
    make_trigger,
    next_bucket,
    plan_claim,
    run_id_for,
    utcnow,
)
from functions.core.observability import logger
from functions.core.queue import WorkMessage, WorkQueue, delay_for
from functions.core.settings import Settings
from functions.core.store import Store

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


@dataclass(frozen=True)
class _Outgoing:
    trigger: Trigger
    message: WorkMessage
    fire_at: datetime


class Dispatcher:
    """Claims due triggers with conditional writes and sends them to SQS with ``DelaySeconds``."""

    def __init__(
        self,
        store: Store,
        queue: WorkQueue,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        crash_point: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.settings = settings
        self.clock = clock
        # Tests make the dispatcher "die" at named points to prove nothing is lost.
        self.crash_point = crash_point or faults.crash_point

    # ---------------------------------------------------------------------------------- dispatch

    def dispatch(self, triggers: Iterable[Trigger], now: datetime) -> DispatchReport:
        report = DispatchReport()
        jobs: dict[str, Job | None] = {}
        outgoing: list[_Outgoing] = []
        finished: list[Trigger] = []
        for trigger in triggers:
            token = uuid.uuid4().hex
            if trigger.state == "CLAIMED" or trigger.is_retry:
                # The run exists already: a retry wake-up, or a claim whose dispatcher died before
                # sending. Sending again is safe: the worker ignores a duplicate.
                if self.store.claim_trigger_only(trigger, token=token, now=now):
                    report.recovered += trigger.state == "CLAIMED"
                    report.claimed += 1
                    message = WorkMessage(trigger.job_id, trigger.run_id)
                    outgoing.append(_Outgoing(trigger, message, trigger.fire_at))
                else:
                    report.lost_races += 1
                continue
            if trigger.job_id not in jobs:
                jobs[trigger.job_id] = self.store.get_job(trigger.job_id)
            job = jobs[trigger.job_id]
            if job is None or (
                trigger.kind is RunKind.SCHEDULED
                and (job.status is not JobStatus.ACTIVE or job.version != trigger.job_version)
            ):
                self.store.delete_trigger(trigger)
                report.stale += 1
                continue
            result = self._claim(trigger, job, token, now)
            if result is None:
                report.lost_races += 1
            elif result == "stale":
                self.store.delete_trigger(trigger)
                jobs.pop(trigger.job_id, None)
                report.stale += 1
            elif isinstance(result, Run):
                report.claimed += 1
                if result.status is RunStatus.QUEUED:
                    message = WorkMessage(job.job_id, result.run_id)
                    outgoing.append(_Outgoing(trigger, message, max(result.scheduled_for, trigger.fire_at)))
                else:
                    report.skipped += 1
                    finished.append(trigger)
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
        return report

    def _claim(self, trigger: Trigger, job: Job, token: str, now: datetime) -> Run | str | None:
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
            next_trigger = None
            if plan.next_occurrence is not None:
                next_trigger = make_trigger(
                    job, plan.next_occurrence, now=now, shard_count=self.settings.shard_count
                )
            # A recurring schedule that ran out (end_at, year field) completes with its last claim.
            job_status = JobStatus.COMPLETED if job.schedule.is_recurring and next_trigger is None else None
            result = self.store.claim(
                trigger, job, token=token, now=now, run=run, next_trigger=next_trigger, job_status=job_status
            )
        if result.stale:
            return "stale"
        if not result.claimed:
            return None
        return run

    # ------------------------------------------------------------------------------------- sweep

    def sweep(self, now: datetime | None = None) -> SweepReport:
        """One tick: every shard in parallel, each from its cursor to now + look-ahead."""
        now = now or self.clock()
        report = SweepReport()
        workers = min(self.settings.shard_count, 16)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sweep") as pool:
            for shard_report in pool.map(
                lambda shard: self.sweep_shard(shard, now), range(self.settings.shard_count)
            ):
                report.dispatch.add(shard_report.dispatch)
                report.buckets_swept += shard_report.buckets_swept
                report.cursors_advanced += shard_report.cursors_advanced
        oldest = self.store.oldest_cursor(self.settings.shard_count)
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
                        t.state == "PENDING"
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

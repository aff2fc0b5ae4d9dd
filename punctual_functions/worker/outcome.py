"""A run's outcome: an attempt's (the decision ``lifecycle.after_attempt``, its write, its log line, and
what follows it: a retry, an alert, a dead letter, the follow-ups of a run's end), or the end of a run
that never started (cancelled or skipped)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from punctual_functions.core import lifecycle, pacing, tracing
from punctual_functions.core.alerts import AlertSender
from punctual_functions.core.model import (
    AlertKind,
    Attempt,
    Job,
    Run,
    RunStatus,
    Trigger,
    bucket_of,
    shard_of,
)
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import RunNotOurs
from punctual_functions.core.resources import SQS_MAX_DELAY_SECONDS
from punctual_functions.core.targets.outcome import TargetOutcome, traceparent_of
from punctual_functions.worker.context import ReturnLater, WorkerContext
from punctual_functions.worker.dead_letter import DeadLetters
from punctual_functions.worker.followups import FollowUps


class Outcomes:
    def __init__(
        self,
        context: WorkerContext,
        alerts: AlertSender,
        dead_letters: DeadLetters,
        follow_ups: FollowUps,
    ) -> None:
        self.context = context
        self.alerts = alerts
        self.dead_letters = dead_letters
        self.follow_ups = follow_ups

    def record(
        self,
        job: Job,
        run: Run,
        started_at: datetime,
        outcome: TargetOutcome,
        *,
        started_late: datetime | None = None,
        hold_ms: int | None = None,
    ) -> None:
        """Record the attempt that called its target at ``started_at`` (``started_late``: see
        ``Tables.finish_attempt``; ``hold_ms``: see ``fields``)."""
        context = self.context
        log = {"job_id": job.job_id, "run_id": run.run_id, "attempt": run.attempt}
        finished_at = context.clock()
        decision = lifecycle.after_attempt(
            job,
            run,
            succeeded=outcome.succeeded,
            retriable=outcome.retriable,
            error=outcome.error,
            finished_at=finished_at,
            rng=context.rng,
        )
        attempt = Attempt(
            number=run.attempt,
            started_at=started_at,
            finished_at=finished_at,
            outcome="RETRIABLE" if isinstance(decision, lifecycle.RetryAt) else decision.attempt_outcome,
            duration_ms=outcome.duration_ms,
            status_code=outcome.status_code,
            error=outcome.error,
            response=outcome.response_excerpt,
        )
        # The attempt's X-Ray segment, before its outcome is written: a retry leaves below by
        # ReturnLater, and a run taken over meanwhile still had its target called by this attempt.
        tracing.attempt_span(job, run, attempt, percent=context.settings.run_trace_percent)
        try:
            if isinstance(decision, lifecycle.RetryAt):
                self._schedule_retry(job, run, attempt, finished_at, decision, started_late, hold_ms)
                return
            context.store.finish_attempt(
                run, attempt, status=decision.status, now=finished_at, started_late=started_late
            )
        except RunNotOurs:
            logger.warning("outcome not recorded: the run was cancelled or taken over", extra=log)
            self.follow_ups.wake_waiting(job, run)  # cancelled: the next may start (taken over: it waits)
            return
        logger.info(
            f"run {decision.status.value.lower()}",
            extra={**log, **self.fields(run, attempt, hold_ms)},
        )
        failed = None
        if decision.status is RunStatus.FAILED:
            failed = replace(
                run,
                status=RunStatus.FAILED,
                attempts=(*run.attempts, attempt),
                error=outcome.error,
                finished_at=finished_at,
            )
            self.alerts.send(AlertKind.FAILED, job, failed, outcome.error or "failed", finished_at)
            if job.pause_on_failures:
                self.follow_ups.pause_after_failures(job, finished_at)
        self.follow_ups.end_of_one_off(job, run, finished_at)
        self.follow_ups.next_backfill(job, run)
        self.follow_ups.wake_waiting(job, run)
        if failed is not None:  # last: if it raises, a redelivery sends it again (``RunExecutor``)
            self.dead_letters.send(job, failed, finished_at)

    def end_unstarted(
        self,
        run: Run,
        decision: lifecycle.Cancel | lifecycle.Skip,
        *,
        create: bool = False,
        job: Job | None = None,
    ) -> None:
        """End a run that never started an attempt, unless it changed meanwhile (``create``: its item
        is not written yet). A run waiting behind it (``job``'s buffering policy) is woken."""
        status = RunStatus.CANCELLED if isinstance(decision, lifecycle.Cancel) else RunStatus.SKIPPED
        overlap_with = decision.overlap_with if isinstance(decision, lifecycle.Skip) else None
        marked = self.context.store.mark_run(
            run,
            status,
            now=self.context.clock(),
            error=decision.reason,
            create=create,
            reason=decision.code,
            overlap_with=overlap_with,
        )
        if marked:
            logger.info(
                f"run {status.value.lower()}",
                extra={"job_id": run.job_id, "run_id": run.run_id, "reason": decision.reason},
            )
            if job is not None:
                self.follow_ups.wake_waiting(job, run)

    def fields(self, run: Run, attempt: Attempt, hold_ms: int | None) -> dict[str, object]:
        """What an outcome's log line says of the attempt: the run's lateness is its first attempt's;
        ``hold_ms`` is how long before the attempt's due time its message reached the worker (negative:
        after it; absent for an attempt the worker did not call). The deployment's dashboard plots
        both from these lines (punctual/cdk/monitoring.py)."""
        percent = self.context.settings.run_trace_percent
        return {
            "attempt": attempt.number,
            "lateness_ms": run.lateness_ms,
            **({"hold_ms": hold_ms} if hold_ms is not None else {}),
            "duration_ms": attempt.duration_ms,
            "status_code": attempt.status_code,
            "error": attempt.error,
            # The trace the target saw (its traceparent): the worker's line joins the target's own spans.
            "traceparent": traceparent_of(
                run.job_id, run.run_id, attempt.number, sampled=tracing.sampled(run.run_id, percent)
            ),
        }

    def _schedule_retry(
        self,
        job: Job,
        run: Run,
        attempt: Attempt,
        finished_at: datetime,
        retry: lifecycle.RetryAt,
        started_late: datetime | None,
        hold_ms: int | None,
    ) -> None:
        context = self.context
        delay, next_at = retry.delay_seconds, retry.at
        # Short: the same message comes back when the attempt is due. Long (beyond the queue's reach):
        # a trigger in the table, written with the outcome, wakes the run up; this message is done.
        short = delay <= SQS_MAX_DELAY_SECONDS
        retry_trigger = None
        if not short:
            retry_trigger = Trigger(
                job_id=job.job_id,
                run_id=run.run_id,
                scheduled_for=run.scheduled_for,
                fire_at=next_at,
                job_version=job.version,
                shard=shard_of(job.job_id, context.settings.shard_count),
                bucket=bucket_of(max(next_at, finished_at)),
                kind=run.kind,
                is_retry=True,
            )
        context.store.finish_attempt(
            run,
            attempt,
            status=RunStatus.RETRYING,
            now=finished_at,
            next_attempt_at=next_at,
            retry_trigger=retry_trigger,
            started_late=started_late,
        )
        logger.info(
            "retry scheduled",
            extra={
                "job_id": run.job_id,
                "run_id": run.run_id,
                **self.fields(run, attempt, hold_ms),
                "next_attempt_at": next_at.isoformat(),
                "wake_up": "message" if short else "trigger",
            },
        )
        if short:
            back = pacing.delay_for(next_at, context.clock(), context.settings.head_start)
            raise ReturnLater("retry scheduled", back)

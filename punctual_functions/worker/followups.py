"""What a run's end sets going: the next run of a buffered backfill, the run waiting behind it, a
one-off job's expiry, a pause after a streak of failures. Each is idempotent: a redelivery of the
ended run (after a crash here) does it again, harmlessly."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from punctual_functions.core.model import (
    PAUSED_BY_PUNCTUAL,
    Job,
    JobStatus,
    Run,
    RunKind,
    RunStatus,
    make_trigger,
)
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import VersionChanged
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.timing import FireTimes, timing_of
from punctual_functions.core.trail import ChangeAction, by_punctual
from punctual_functions.worker.context import WorkerContext


class FollowUps:
    def __init__(self, context: WorkerContext) -> None:
        self.context = context

    def _timing(self, job: Job) -> FireTimes:
        """The job's fire times, under its calendar if it follows one (as the backfill listed them)."""
        if job.calendar is None:
            return job.schedule
        calendar = self.context.store.get_calendar(job.owner, job.calendar)
        return timing_of(job.schedule, calendar, job.on_excluded)

    def next_backfill(self, job: Job, run: Run) -> None:
        """A buffered backfill goes on: the end of one of its runs dispatches the next occurrence up
        to ``backfill_until``. Idempotent (the same trigger, the same run id), so a redelivery of the
        ended run, after a crash here, goes on all the same."""
        if (
            run.kind is not RunKind.BACKFILL
            or run.backfill_until is None
            or job.status is JobStatus.CANCELLED
        ):
            return
        following = self._timing(job).next_after(run.scheduled_for)
        if following is None or following > run.backfill_until:
            return
        from punctual_functions.core.dispatching import Dispatcher  # only a buffered backfill needs it

        context = self.context
        now = context.clock()
        current = context.store.get_job(job.job_id)  # ours was read before the run: it may be cancelled
        if current is None or current.status is JobStatus.CANCELLED or current.gone(now):
            return
        trigger = replace(
            make_trigger(
                current,
                following,
                now=now,
                shard_count=context.settings.shard_count,
                kind=RunKind.BACKFILL,
                fire_at=now,
                held=True,
            ),
            backfill_until=run.backfill_until,
        )
        context.store.put_trigger(trigger)
        # The worker may not delete items: a trigger found stale meanwhile is the next sweep's to delete.
        Dispatcher(
            context.store, context.queue, context.settings, clock=context.clock, deletes=False
        ).dispatch([trigger], now)

    def wake_waiting(self, job: Job, run: Run) -> None:
        """A buffering job's run ended: the run waiting behind it gets a fresh message and starts now
        (its own message, away until the latest end, comes back later as a duplicate)."""
        if not job.overlap.buffers:
            return
        for later in self.context.store.runs_after(job.job_id, run.run_id, limit=5):
            if later.status is RunStatus.QUEUED and later.overlap_with == run.run_id:
                self.context.queue.send([(WorkMessage(job.job_id, later.run_id), 0)])
                logger.info("waiting run woken", extra={"job_id": job.job_id, "run_id": later.run_id})
                return

    def end_of_one_off(self, job: Job, run: Run, now: datetime) -> None:
        """A one-off job ends with its own run (its status follows the run when read): with
        ``on_complete: delete`` it is gone ``delete_after_days`` from now."""
        expires_at = job.expiry_after_end(now)
        if expires_at is None or job.schedule.is_recurring or run.kind is not RunKind.SCHEDULED:
            return
        self.context.store.expire_job(job.job_id, expires_at)
        logger.info("job to be deleted", extra={"job_id": job.job_id, "deletes_at": expires_at.isoformat()})

    def pause_after_failures(self, job: Job, now: datetime) -> None:
        """``pause_on_failures``: pause the job once its newest N finished runs all FAILED (a skipped
        or cancelled occurrence neither breaks nor extends the streak). Only for jobs that ask."""
        streak = job.pause_on_failures
        assert streak is not None
        store = self.context.store
        runs, _ = store.list_runs(job.job_id, limit=min(100, 2 * streak + 10))
        outcomes = [run for run in runs if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)][:streak]
        if len(outcomes) < streak or any(run.status is not RunStatus.FAILED for run in outcomes):
            return
        current = store.get_job(job.job_id)
        if current is None or current.as_of(now).status is not JobStatus.ACTIVE:
            return
        last = outcomes[0]
        note = (
            f"paused after {streak} consecutive failed runs; "
            f"the last, {last.run_id}: {last.error or 'failed'}"
        )
        try:
            paused = current.as_of(now).paused(now, by=PAUSED_BY_PUNCTUAL, note=note[:500], until=None)
            paused, change = by_punctual(ChangeAction.PAUSED, current, paused, now, note[:500])
            store.update_job(current, paused, change=change)
        except VersionChanged:
            return  # changed meanwhile (paused, resumed, rescheduled): the caller's change stands
        logger.warning("job paused", extra={"job_id": job.job_id, "reason": note})

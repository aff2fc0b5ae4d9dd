"""Dispatch: turning due triggers into work messages and QUEUED runs.

Used by the dispatcher's sweep and by the API (a job due within the look-ahead is dispatched at once,
because the sweep for its minute may already have run). The protocol is in docs/architecture.md.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from punctual_functions.core import crash_points
from punctual_functions.core.calendars import Calendar
from punctual_functions.core.clock import SYSTEM_CLOCK, Clock
from punctual_functions.core.model import (
    MAX_ROW_COVERS,
    RUN_COUNT_WINDOW,
    AlertKind,
    Job,
    JobStatus,
    Reason,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    TriggerState,
    calendar_row,
    completed_by,
    fire_time,
    is_dispatched,
    is_orphan,
    iso,
    make_trigger,
    new_run,
    not_run_row,
    plan_dispatch,
    reached_max_runs,
    resumes,
    run_id_for,
)
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue, Tables, VersionChanged
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.sending import Sender
from punctual_functions.core.settings import Settings
from punctual_functions.core.sweep import DispatchReport, SweepReport, sweep, sweep_shard, trigger_key
from punctual_functions.core.timing import FireTimes
from punctual_functions.core.trail import ChangeAction, by_punctual


@dataclass(frozen=True)
class _Outgoing:
    trigger: Trigger
    message: WorkMessage
    fire_at: datetime


@dataclass(frozen=True)
class _Outcome:
    """What dispatching one trigger came to: counts, and a message to send (then its run to write,
    or its retry trigger to delete)."""

    report: DispatchReport
    outgoing: _Outgoing | None = None
    # A trigger whose run is another occurrence (the misfire policy ran the latest missed one, or
    # skipped): its own run never exists, so it is deleted once the run is written.
    finished: Trigger | None = None
    # The next occurrence this dispatch wrote (recurring jobs), to be dispatched too if due soon.
    chained: Trigger | None = None
    # The row of the occurrences run_once collapsed into the one it runs: written after that run, so a
    # crash before it leaves the trigger without its run, for the next sweep to dispatch again.
    collapsed: Run | None = None


# How long after their time a dispatcher remembers dispatched occurrences (the cursor passes a
# minute a few ticks after it ends).
MEMORY_MINUTES = 10


def _memo_key(trigger: Trigger) -> tuple[str, str, int]:
    return (trigger.job_id, trigger.run_id, trigger.job_version)


class Dispatcher:
    """Dispatches due triggers: decides each occurrence (``plan_dispatch``), sends its work message to
    SQS with ``DelaySeconds`` so that it arrives at its second, then writes its QUEUED run. Nothing is
    claimed on the way: an occurrence dispatched twice names the same run, and the worker absorbs the
    duplicate. Only a retry wake-up is claimed (by its state and token) before it is sent."""

    def __init__(
        self,
        store: Tables,
        queue: Queue,
        settings: Settings,
        clock: Clock = SYSTEM_CLOCK,
        crash_point: Callable[[str], None] | None = None,
        *,
        deletes: bool = True,
    ) -> None:
        self.store = store
        self.queue = queue
        self.settings = settings
        self.clock = clock
        self.sender = Sender(queue, settings.head_start, clock)
        # False for a worker going on with a buffered backfill: its role may not delete items, so a
        # trigger it finds stale (the job was cancelled meanwhile) is left for the next sweep.
        self.deletes = deletes
        # Occurrences this process saw dispatched (their run exists), by trigger key and job version,
        # with their fire time. A sent trigger stays in its bucket until the cursor passes its minute,
        # so every tick lists it again; remembering it spares the re-check of its run (a read, and on
        # the local emulator a burst of them at each tick that made the workers' writes wait). Only an
        # optimisation: a fresh process (a cold Lambda container) checks the runs as before.
        self._dispatched: dict[tuple[str, str, int], datetime] = {}
        self._dispatched_lock = threading.Lock()
        self._pruned_at = datetime.min.replace(tzinfo=UTC)
        # Tests make the dispatcher "die" at named points to prove nothing is lost.
        self.crash_point = crash_point or crash_points.crash_point

    # ---------------------------------------------------------------------------------- dispatch

    def dispatch(
        self, triggers: Iterable[Trigger], now: datetime, *, checked: bool = False, paced: bool = False
    ) -> DispatchReport:
        """Send each trigger's occurrence that has not been dispatched yet, and write its run.

        The order makes every crash harmless (docs/architecture.md, "The write path"): a recurring
        job's next occurrence is written first, then the message is sent, then the run is written.
        Until the run exists the occurrence counts as not dispatched, so a crash anywhere in between
        costs a duplicate message that the worker's conditional start absorbs, never a lost run.
        ``checked``: the caller has just read the runs of ``triggers`` and none exists. ``paced``: each
        message is sent at the moment that makes it visible ``head_start`` before its second (the
        sweep: a round then takes up to a second longer, ten when spread); otherwise at once
        (docs/architecture.md, "Arrival").

        A recurring occurrence's next one, when still to come but due within the look-ahead (a
        seconds-level cron), is dispatched in the next round here rather than left for the next tick,
        which may come too late for it. Whoever dispatches (the sweep, or the API right after a
        create, PATCH, resume or run now) thus sends the chain up to ``now + look-ahead``. Occurrences
        already missed (a ``run_all`` catch-up) are not followed here: the sweep re-reads their
        bucket, within its own time budget, and an API request is not held up by an outage's worth.
        """
        jobs: dict[str, Job | None] = {}
        calendars = _Calendars(self.store)
        report = DispatchReport()
        pending = list(triggers)
        while pending:
            if not checked:
                pending = self.undispatched(pending)
            chained = self._dispatch_round(pending, now, jobs, calendars, report, paced=paced)
            pending = [trigger for trigger in chained if self._follows(trigger.fire_at, now)]
            report.left_behind += len(chained) - len(pending)
            checked = False
        return report

    def _follows(self, fire_at: datetime, now: datetime) -> bool:
        """Whether a dispatch at ``now`` follows a recurring job's chain to an occurrence firing at
        ``fire_at``: one still to come and due within the look-ahead."""
        return now < fire_at <= now + timedelta(seconds=self.settings.lookahead_seconds)

    def undispatched(self, triggers: list[Trigger]) -> list[Trigger]:
        """The triggers still to dispatch: a retry wake-up until it is deleted, an occurrence until
        its run exists (one batch read, for the occurrences not already known to be dispatched)."""
        with self._dispatched_lock:
            unknown = [t for t in triggers if t.is_retry or _memo_key(t) not in self._dispatched]
        occurrences = [t for t in unknown if not t.is_retry]
        runs = self.store.get_runs([trigger_key(t) for t in occurrences]) if occurrences else {}
        seen = [t for t in occurrences if is_dispatched(t, runs.get(trigger_key(t)))]
        self._remember(seen)
        done = {_memo_key(t) for t in seen}
        return [t for t in unknown if t.is_retry or _memo_key(t) not in done]

    def _remember(self, triggers: list[Trigger]) -> None:
        """Note occurrences whose run exists; forget those of long past minutes (the cursor passed
        them, or if it did not, one read brings them back)."""
        if not triggers:
            return
        now = self.clock()
        with self._dispatched_lock:
            for trigger in triggers:
                self._dispatched[_memo_key(trigger)] = trigger.fire_at
            # At most once a minute (a busy sweeper remembers tens of thousands): drop the occurrences
            # of minutes long past, which the cursor has passed (if it has not, one read brings them
            # back).
            if now - self._pruned_at >= timedelta(minutes=1):
                forget_before = now - timedelta(minutes=MEMORY_MINUTES)
                self._dispatched = {
                    key: fire_at for key, fire_at in self._dispatched.items() if fire_at >= forget_before
                }
                self._pruned_at = now

    def _dispatch_round(
        self,
        pending: list[Trigger],
        now: datetime,
        jobs: dict[str, Job | None],
        calendars: _Calendars,
        report: DispatchReport,
        *,
        paced: bool,
    ) -> list[Trigger]:
        """Dispatch ``pending``; return the next occurrences written on the way.

        Triggers are independent, so a page of them is prepared ``dispatch_concurrency`` at a time: one
        sweep waits on several round trips at once.
        """
        concurrency = min(self.settings.dispatch_concurrency, len(pending))
        outcomes = self.clock.parallel(
            lambda trigger: self._dispatch_one(trigger, now, jobs, calendars),
            pending,
            concurrency,
            "dispatch",
        )
        outgoing: list[_Outgoing] = []
        chained: list[Trigger] = []
        finished: list[Trigger] = []
        collapsed: list[Run] = []
        for outcome in outcomes:
            report.add(outcome.report)
            if outcome.collapsed is not None:
                collapsed.append(outcome.collapsed)
            if outcome.outgoing is not None:
                outgoing.append(outcome.outgoing)
            if outcome.chained is not None:
                chained.append(outcome.chained)
            if outcome.finished is not None:
                finished.append(outcome.finished)
        self.crash_point("after_plan_before_send")
        if not outgoing:
            self._delete(finished)
            return chained
        self.sender.send([(item.message, item.fire_at) for item in outgoing], paced=paced)
        report.sent += len(outgoing)
        self.crash_point("after_send_before_record")
        runs = [item.message.queued for item in outgoing if item.message.queued is not None]
        written = self.clock.parallel(self.store.put_run, runs, concurrency, "dispatch")
        # False: the worker started it first, or another dispatcher wrote it (its message was a
        # duplicate, absorbed by the worker). Either way the run exists now.
        report.lost_races += written.count(False)
        for row in collapsed:  # the history of what run_once merged, once the run it ran exists
            self.store.put_run(row)
            self._tell_missed(jobs.get(row.job_id), row)
        self._remember([item.trigger for item in outgoing if not item.trigger.is_retry])
        self._delete(finished + [item.trigger for item in outgoing if item.trigger.is_retry])
        return chained

    def _delete(self, triggers: list[Trigger]) -> None:
        """Delete triggers that are done but have no run of their own: a sent retry wake-up, an
        occurrence the misfire policy replaced (both rare), a stale one."""
        if self.deletes:
            for trigger in triggers:
                self.store.delete_trigger(trigger)

    def _dispatch_one(
        self, trigger: Trigger, now: datetime, jobs: dict[str, Job | None], calendars: _Calendars
    ) -> _Outcome:
        """Prepare one trigger; ``jobs`` and ``calendars`` cache what was read so far (shared by
        concurrent threads)."""
        report = DispatchReport()
        if trigger.is_retry:
            # A retry wake-up: its run exists, and the claim keeps two dispatchers from both sending it.
            if self.store.claim_trigger_only(trigger, token=uuid.uuid4().hex, now=now):
                report.recovered += trigger.state is TriggerState.CLAIMED
                report.dispatched += 1
                message = WorkMessage(trigger.job_id, trigger.run_id)
                return _Outcome(report, outgoing=_Outgoing(trigger, message, trigger.fire_at))
            report.lost_races += 1
            return _Outcome(report)
        if trigger.job_id not in jobs:
            # A one-off's trigger read from its bucket carries its job (the same item): no read of
            # the job's own. Otherwise eventually consistent, as the bucket's read: a change of the
            # last second that it misses is the worker's to see (it reads the job before the call,
            # consistently, and skips an occurrence the change superseded).
            jobs[trigger.job_id] = (
                trigger.job
                if trigger.job is not None
                else self.store.get_job(trigger.job_id, consistent=False)
            )
        job = jobs[trigger.job_id]
        if job is None and not is_orphan(trigger.written_at, now):
            # Its create writes the job just after the trigger and may still be under way.
            jobs.pop(trigger.job_id, None)
            report.waiting = trigger.fire_at
            return _Outcome(report)
        if job is not None and resumes(job, trigger):
            if job.pause_ended(now):
                resumed = self._resume(job, trigger, now)
                if resumed is None:
                    jobs.pop(trigger.job_id, None)
                    report.lost_races += 1
                    report.waiting = trigger.fire_at  # the next sweep finds it stale, or sends it
                    return _Outcome(report)
                job = jobs[trigger.job_id] = resumed
            else:
                # Its pause ends before this occurrence: dispatched ahead, so that it fires at its second.
                job = job.as_of(job.pause_until or now)
                if reached_max_runs(job, trigger):
                    # max_runs was lowered while paused: it ends instead, but only a job whose pause
                    # has ended can be completed (the write expects it ACTIVE). The trigger stays for
                    # the first sweep after ``until``, which writes the pause's end, then completes it.
                    report.waiting = trigger.fire_at
                    return _Outcome(report)
        if (
            job is not None
            and reached_max_runs(job, trigger)
            and self.store.complete_job(job, job.expiry_after_end(now))
        ):
            # max_runs was lowered below the runs made: the job ends instead of this occurrence.
            self._delete([trigger])
            logger.info("job completed: max_runs reached", extra={"job_id": job.job_id})
            report.stale += 1
            return _Outcome(report)
        if job is None or (
            job.status is JobStatus.CANCELLED
            or job.gone(now)
            or (
                trigger.kind is RunKind.SCHEDULED
                and (job.status is not JobStatus.ACTIVE or job.version != trigger.job_version)
                and not completed_by(job, trigger)
            )
        ):
            # Paused, changed or ended since the trigger was written: it must not fire.
            self._delete([trigger])
            report.stale += 1
            return _Outcome(report)
        run, next_trigger, collapsed = self._plan(trigger, job, now, calendars)
        if run is None:
            # The calendar changed since it was written: the chain goes on from what it says now.
            report.stale += 1
            return _Outcome(report, finished=trigger, chained=next_trigger)
        report.dispatched += 1
        other = trigger if run.run_id != trigger.run_id else None
        if run.status is RunStatus.QUEUED:
            fire_at = max(run.due_at, trigger.fire_at)
            if run.run_id == trigger.run_id and fire_at > run.due_at:
                # A one-off whose time passed while it was paused until later: due at the pause's end.
                run = replace(run, next_attempt_at=fire_at)
            message = WorkMessage(job.job_id, run.run_id, queued=run)
            outgoing = _Outgoing(trigger, message, fire_at)
            return _Outcome(
                report, outgoing=outgoing, finished=other, chained=next_trigger, collapsed=collapsed
            )
        # Skipped by the misfire policy: nothing to send, the run records it.
        report.skipped += 1
        if not self.store.put_run(run):
            report.lost_races += 1
        self._tell_missed(job, run)
        return _Outcome(report, finished=other, chained=next_trigger)

    def _tell_missed(self, job: Job | None, row: Run) -> None:
        """A job that wants ``missed`` alerts: the worker sends them (the target machinery is its),
        on a message naming the row of what the misfire policy skipped or collapsed."""
        if job is not None and job.alerts_on(AlertKind.MISSED):
            self.queue.send([(WorkMessage(row.job_id, row.run_id), 0)])

    def pause_row(self, job: Job, end: datetime, now: datetime) -> Run | None:
        """The row of ``job``'s pause span ending at ``end`` (``Job.pause_row``), without the
        occurrences that have a row of their own: those dispatched ahead before the pause (skipped
        by the worker as they come). Read here, at a pause's end only: one consistent Query."""
        if job.paused_at is None:
            return None
        since = run_id_for(job.job_id, job.paused_at)
        later = self.store.runs_after(job.job_id, since, limit=RUN_COUNT_WINDOW)
        own = {run.scheduled_for for run in later if run.kind is RunKind.SCHEDULED}
        return job.pause_row(end, now, own)

    def _resume(self, job: Job, trigger: Trigger, now: datetime) -> Job | None:
        """Write the end of a pause whose ``until`` has come (readers count the job active from then
        on already; this is the first dispatch of it since): the same version, so its chain goes on.
        None if the job changed meanwhile."""
        resumed = job.resumed(now, trigger.scheduled_for, new_version=False)
        resumed, change = by_punctual(ChangeAction.RESUMED, job, resumed, now, "its pause's until came")
        try:
            self.store.update_job(job, resumed, change=change)
        except VersionChanged:
            return None
        row = self.pause_row(job, job.pause_until or now, now)
        if row is not None:
            self.store.put_run(row)  # the pause in the history: what did not run, why, who paused
        logger.info(
            "job resumed", extra={"job_id": job.job_id, "paused_at": iso(job.paused_at), "by": "until"}
        )
        return resumed

    def _plan(
        self, trigger: Trigger, job: Job, now: datetime, calendars: _Calendars
    ) -> tuple[Run | None, Trigger | None, Run | None]:
        """The run this trigger dispatches (QUEUED, or a SKIPPED row for the stretch the misfire
        policy skips or the day the calendar drops; None: nothing, the calendar changed), the next
        occurrence of a recurring job, written first (an idempotent put: a crash after it rewrites
        it), and the row of the occurrences ``run_once`` collapsed, if any."""
        if trigger.kind is RunKind.MANUAL:
            return new_run(job, trigger.scheduled_for, RunKind.MANUAL, RunStatus.QUEUED, now), None, None
        if trigger.kind is RunKind.BACKFILL:
            # A past occurrence run on request: due at once (its trigger's time), outside the chain.
            backfill = new_run(job, trigger.scheduled_for, RunKind.BACKFILL, RunStatus.QUEUED, now)
            backfill = replace(
                backfill, next_attempt_at=trigger.fire_at, backfill_until=trigger.backfill_until
            )
            return backfill, None, None
        threshold = timedelta(seconds=self.settings.misfire_threshold_seconds)
        calendar = calendars.get(job.owner, job.calendar) if job.calendar is not None else None
        plan = plan_dispatch(job, trigger.scheduled_for, now, threshold, calendar)
        timing: FireTimes = plan.timing or job.schedule
        collapsed = None
        run: Run | None
        if plan.run_scheduled_for is not None:
            run = new_run(job, plan.run_scheduled_for, RunKind.SCHEDULED, RunStatus.QUEUED, now)
            if plan.moved_from:
                run = replace(run, calendar=job.calendar, moved_from=plan.moved_from)
            if plan.run_scheduled_for > trigger.scheduled_for:
                # run_once: the missed occurrences before the latest collapse into its run.
                merged = timing.occurrences_from(
                    trigger.scheduled_for, plan.run_scheduled_for, MAX_ROW_COVERS
                )
                error = f"missed: collapsed into the run of {iso(plan.run_scheduled_for)} (misfire run_once)"
                collapsed = not_run_row(
                    job, trigger.scheduled_for, merged, Reason.MISFIRE_COLLAPSED, now, error=error
                )
        elif plan.dropped is not None:
            covers = plan.timing.covered(plan.dropped) if plan.timing is not None else []
            run = calendar_row(job, plan.dropped, covers, now)
        elif plan.skipped is None:
            run = None
        else:
            before = plan.next_occurrence or now + timedelta(microseconds=1)
            skipped = timing.occurrences_from(plan.skipped, before, MAX_ROW_COVERS)
            error = f"missed: skipped by the misfire policy ({job.misfire.value})"
            run = not_run_row(job, plan.skipped, skipped, Reason.MISFIRE_SKIPPED, now, error=error)
        next_trigger = None
        # max_runs counts the occurrences set off; the chain carries the count (runs_before).
        runs = trigger.runs_before + (1 if run is not None and run.status is RunStatus.QUEUED else 0)
        limited = job.max_runs is not None and runs >= job.max_runs
        if plan.next_occurrence is not None and not limited:
            # Held when this dispatch follows the chain to it (``dispatch``): a sweep listing it
            # meanwhile must not send it too.
            next_trigger = make_trigger(
                job,
                plan.next_occurrence,
                now=now,
                shard_count=self.settings.shard_count,
                held=self._follows(fire_time(job, plan.next_occurrence), now),
                runs_before=runs,
            )
            self.store.put_trigger(next_trigger)
        elif job.schedule.is_recurring:
            # A recurring schedule that ran out (end_at, a year field) or reached max_runs completes
            # with its last occurrence.
            self.store.complete_job(job, job.expiry_after_end(now))
        return run, next_trigger, collapsed

    # ------------------------------------------------------------------------------------- sweep

    def sweep(
        self,
        now: datetime | None = None,
        shards: Sequence[int] | None = None,
        *,
        start_at: datetime | None = None,
    ) -> SweepReport:
        """One tick over ``shards`` (all by default): ``punctual_functions.core.sweep.sweep``; a fanned-out
        group's sweep first waits until its ``start_at`` (``staggered_starts``)."""
        if start_at is not None:
            self.clock.sleep(max(0.0, (start_at - self.clock()).total_seconds()))
        return sweep(self, now or self.clock(), shards)

    def sweep_shard(self, shard: int, now: datetime) -> SweepReport:
        return sweep_shard(self, shard, now)


class _Calendars:
    """The calendars one dispatch reads, each once (shared by its threads; a race reads one twice)."""

    def __init__(self, store: Tables) -> None:
        self.store = store
        self.read: dict[tuple[str, str], Calendar | None] = {}

    def get(self, owner: str, name: str) -> Calendar | None:
        key = (owner, name)
        if key not in self.read:
            self.read[key] = self.store.get_calendar(owner, name)
        return self.read[key]

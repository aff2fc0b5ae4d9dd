"""Executing one run attempt: wait for its second, start it exactly once, deliver, record.

Called once per SQS record; the records of a batch run concurrently. A message only names a run: the
run item decides what happens, so duplicate or late messages are harmless.
"""

from __future__ import annotations

import math
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import NoReturn

from functions.core import crash_points, lifecycle, pacing, tracing
from functions.core.alerts import ALERT_TIMEOUT_SECONDS, AlertSender
from functions.core.model import (
    MISSED_REASONS,
    PAUSED_BY_PUNCTUAL,
    AlertKind,
    Attempt,
    Job,
    JobStatus,
    Reason,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    bucket_of,
    lateness_of,
    make_trigger,
    shard_of,
    utcnow,
)
from functions.core.observability import logger
from functions.core.ports import Queue, RunNotOurs, Tables, Targets, VersionChanged
from functions.core.queue import WorkMessage
from functions.core.resources import (
    OUTCOME_MARGIN_SECONDS,
    SQS_MAX_DELAY_SECONDS,
    SQS_MAX_VISIBILITY_SECONDS,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
)
from functions.core.settings import Settings
from functions.core.targets.outcome import Delivery, TargetOutcome, traceparent_of
from functions.worker.dead_letter import DeadLetters, DeadLetterUndelivered
from functions.worker.heartbeat import AgeAlarm, Heartbeat, next_beat_by

# How long past the due time a held message stays hidden if its worker dies. Longer than the first
# heartbeat (a third of a lease after the second: 1.3 s by default), which then keeps it hidden while
# the attempt runs. Short, so that a message whose worker died comes back within seconds.
HOLD_MARGIN_SECONDS = 2
# A last delivery that could not end its run (a table error) is tried again this much later.
LAST_DELIVERY_RETRY_SECONDS = 30
# The job is read again and the attempt's conditional start (a table write) is made this long before
# the second, so that nothing but a sleep stands between the second and the call to the target: a
# table that is slow for a moment (a dispatcher's burst of claims) no longer makes the call late. The
# price: a pause, cancel or change made in the last half second before a due time may not stop that
# run. Half a second covers the table's slow moments seen locally (a few hundred ms).
# Must stay well under two thirds of a lease, so that the first heartbeat comes before the lease ends.
PRESTART_SECONDS = 0.5
# cancel_other: how many runs not yet ended one start may cancel before it starts (normally one; a
# second only when an earlier occurrence was about to start as well).
OVERLAP_CANCELS = 3
# cancel_other starts the newer run this long after its cancel beyond a heartbeat's interval: by then
# the cancelled attempt's worker has seen the cancel and aborted its call.
CANCEL_SETTLE_SECONDS = 0.25


class ReturnLater(Exception):
    """Give the message back to SQS; it comes back after ``seconds`` (a batch item failure)."""

    def __init__(self, reason: str, seconds: int | None = None) -> None:
        super().__init__(reason)
        self.seconds = seconds


class RunExecutor:
    def __init__(
        self,
        store: Tables,
        queue: Queue,
        targets: Targets,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], None] = time.sleep,
        crash_point: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.targets = targets
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.crash_point = crash_point or crash_points.crash_point
        self.rng = random.Random()
        self.alerts = AlertSender(store, targets)
        self.dead_letters = DeadLetters(store, targets)
        # When each held message becomes visible again (monotonic), for its attempt's first beat.
        self._hidden_until: dict[str, float] = {}

    def handle(
        self,
        message: WorkMessage,
        receipt_handle: str | None = None,
        body: str = "",
        *,
        receive_count: int = 1,
        time_left_seconds: float | None = None,
    ) -> None:
        """Process one work message; raise ``ReturnLater`` to leave it on the queue.

        ``receive_count`` is how often SQS has delivered this message (its last delivery ends the
        run, see ``_last_delivery``); ``time_left_seconds`` is how long the invocation has before it
        is stopped (an attempt that could not finish by then is left to a fresh invocation).
        """
        arrived_at = self.clock()
        deadline = None if time_left_seconds is None else arrived_at + timedelta(seconds=time_left_seconds)
        last = receive_count >= WORK_QUEUE_MAX_RECEIVE_COUNT or message.exhausted
        try:
            self._hold_on_arrival(message, receipt_handle)
            self._handle(
                message, receipt_handle, receive_count=receive_count, deadline=deadline, arrived_at=arrived_at
            )
        except ReturnLater as later:
            if not last:
                raise
            delay = LAST_DELIVERY_RETRY_SECONDS if later.seconds is None else later.seconds
            self._renew_last(message, delay, str(later))
        except DeadLetterUndelivered as error:
            if not last:
                raise
            # The run has ended; only its dead letter is missing: the deployment's DLQ keeps it,
            # with the reason (``punctual dlq``), rather than a renewal that may never succeed.
            self.queue.send_to_dlq(body or message.to_json(), str(error))
            logger.error("dead letter given up: message kept in the DLQ", extra={"run_id": message.run_id})
        except Exception as error:
            if not last:
                raise  # SQS delivers it again
            self._renew_last(message, LAST_DELIVERY_RETRY_SECONDS, f"{type(error).__name__}: {error}")
        finally:
            if receipt_handle is not None:  # a hold whose attempt never started (the executor is reused)
                self._hidden_until.pop(receipt_handle, None)

    def _renew_last(self, message: WorkMessage, delay: int, why: str) -> None:
        """The last delivery of a message could not end its run (the table erred, say): SQS would move
        it to the DLQ with the run still open. A fresh copy, marked ``exhausted``, ends it later as
        that delivery would have (if sending fails too, the message reaches the DLQ: its alarm)."""
        renewed = replace(message, exhausted=True)
        self.queue.send([(renewed, max(1, min(SQS_MAX_DELAY_SECONDS, delay)))])
        logger.warning(
            "last delivery could not end the run: message renewed",
            extra={"job_id": message.job_id, "run_id": message.run_id, "why": why},
        )

    def _handle(
        self,
        message: WorkMessage,
        receipt_handle: str | None,
        *,
        receive_count: int,
        deadline: datetime | None,
        arrived_at: datetime,
        held: bool = False,
    ) -> None:
        log = {"job_id": message.job_id, "run_id": message.run_id}
        run, job = self.store.get_run_and_job(message.job_id, message.run_id)
        if job is not None and job.gone(self.clock()):
            job = None  # deleted by on_complete (DynamoDB's TTL removes the item later)
        if run is None and message.queued is not None:
            # The dispatcher writes the QUEUED run just after sending: this message came first. (A
            # message older than the run retention may belong to a run that expired: never re-run it.
            # Its age counts from its dispatch: a backfill may stand for an occurrence long past.)
            age = self.clock() - (message.queued.queued_at or message.queued.scheduled_for)
            if age < timedelta(days=self.settings.run_retention_days):
                run = message.queued
        create = run is not None and run is message.queued  # the start (or end) writes the run item
        if (
            run is not None
            and message.queued is not None
            and lifecycle.overtook_newer_dispatch(run, message.queued)
        ):
            # A resume or a new schedule dispatched this occurrence again, and its message came before
            # the dispatcher's write replacing the older version's never-started run: that write follows
            # the send at once (or, if its dispatcher died, the next sweep dispatches it again).
            raise ReturnLater("the run of this newer dispatch is not written yet", 2)
        arrival = lifecycle.on_arrival(run, job)
        if isinstance(arrival, lifecycle.Ignore):
            logger.info("nothing to do for message", extra={**log, "status": run.status if run else None})
            if run is not None and job is not None:
                # A redelivery of a run that ended: its worker may have died before going on with a
                # backfill, or before waking the run waiting behind it.
                self._next_backfill(job, run)
                self._wake_waiting(job, run)
                if run.reason in MISSED_REASONS:  # the dispatcher's note of a misfire row, or a redelivery
                    self.alerts.send(AlertKind.MISSED, job, run, run.error or str(run.reason), self.clock())
                if run.status is RunStatus.FAILED:  # its dead letter may not have gone out yet
                    self.dead_letters.send(job, run, self.clock())
            return
        assert run is not None
        if isinstance(arrival, lifecycle.Cancel) or job is None:
            self._end(run, lifecycle.Cancel("job cancelled"), create=create)
            return
        if receive_count >= WORK_QUEUE_MAX_RECEIVE_COUNT or message.exhausted:
            self._last_delivery(message, run, job, receive_count)
            return
        now = self.clock()
        if run.status is RunStatus.RUNNING and run.lease_until is not None and now < run.lease_until:
            # Another worker holds this attempt, or held it and died (its message came back). When
            # the lease runs out within seconds, hold the message and take over the moment it does:
            # going back to the queue would add a receive's latency to a run that is already late.
            remaining = (run.lease_until - now).total_seconds()
            if held or remaining > self.settings.max_early_wait_seconds:
                raise ReturnLater("attempt in progress elsewhere", math.ceil(remaining))
            self._hold(receipt_handle, remaining)
            self._sleep_until(run.lease_until)
            self._handle(
                message,
                receipt_handle,
                receive_count=receive_count,
                deadline=deadline,
                arrived_at=arrived_at,
                held=True,
            )
            return
        skip = lifecycle.superseded(run, job)
        if skip is not None:
            self._end(run, skip, create=create, job=job)
            return
        self._check_time_left(run, job, deadline)
        if self._wait_until_due(run, receipt_handle):
            # A pause, cancel or reschedule may have landed while we waited for the second.
            job = self.store.get_job(run.job_id)
            if isinstance(lifecycle.on_arrival(run, job), lifecycle.Cancel) or job is None:
                self._end(run, lifecycle.Cancel("job cancelled"), create=create)
                return
            skip = lifecycle.superseded(run, job)
            if skip is not None:
                self._end(run, skip, create=create, job=job)
                return
        if lifecycle.overlap_applies(run, job) and self._meet_overlap(
            run, job, receipt_handle, create=create
        ):
            return
        token = uuid.uuid4().hex
        # The start is written a moment before the second (see PRESTART_SECONDS); it is recorded as
        # the due time, when the target is called.
        due = run.next_attempt_at or run.scheduled_for
        started_at = max(self.clock(), due)
        sets_lateness = run.lateness_ms is None  # the run's first start: its lateness is this one's
        try:
            run = self.store.start_attempt(
                run,
                token=token,
                now=started_at,
                lease_until=self.clock() + timedelta(seconds=self.settings.lease_seconds),
                create=create,
            )
        except RunNotOurs:
            # Either another delivery started it, or our own write took effect and only its answer
            # was lost (the SDK retried it): the lease token tells which.
            current = self.store.get_run(run.job_id, run.run_id)
            if (
                current is not None
                and current.status is RunStatus.RUNNING
                and current.lease_token != token
                and current.lease_until is not None
            ):
                # Another delivery holds the attempt. This message may be the only copy left (SQS can
                # deliver one message twice): keep it until the lease ends, so that if the holder
                # dies, it brings the run back; if the holder finishes, it finds the run done.
                remaining = (current.lease_until - self.clock()).total_seconds()
                logger.info("attempt started by another delivery", extra=log)
                raise ReturnLater("attempt in progress elsewhere", max(1, math.ceil(remaining))) from None
            if current is None or current.status is not RunStatus.RUNNING or current.lease_token != token:
                logger.info("duplicate delivery ignored", extra=log)
                return
            run = current
        self.crash_point("after_start_before_execute")
        if due > self.clock():  # its connection opens while the worker waits for the second
            self.targets.prepare(job.target, float(job.timeout_seconds))
        self._sleep_until(due)
        called_at = self.clock()
        started_late = None
        if sets_lateness and called_at - started_at >= timedelta(milliseconds=1):
            # The start write outlasted its head start, so the target is called after the second the
            # write recorded: the outcome corrects the run's start and lateness to the truth.
            started_late = called_at
            run = replace(run, started_at=called_at, lateness_ms=lateness_of(run, called_at))
        # At DEBUG: the outcome's line says all of it (one line a run at INFO; logs are billed by the
        # byte). A run that never ends shows as RUNNING in its history.
        logger.debug(
            "attempt started",
            extra={
                **log,
                "attempt": run.attempt,
                "lateness_ms": run.lateness_ms,
                "executions": run.executions,
            },
        )
        sending: list[threading.Thread | None] = []
        if sets_lateness and job.alerts is not None and job.alerts.late_seconds is not None:
            late_ms = run.lateness_ms or 0
            if late_ms > job.alerts.late_seconds * 1000:
                detail = f"started {late_ms / 1000:.1f} s after its due time"
                sending.append(self.alerts.send_soon(AlertKind.LATE, job, run, detail, called_at))
        with Heartbeat(
            self.store,
            self.queue,
            run,
            receipt_handle,
            base_lease=self.settings.lease_seconds,
            clock=self.clock,
            alarm=self._running_long(job, run, sending),
            hidden_until=self._hidden_until.pop(receipt_handle, None) if receipt_handle else None,
        ) as heartbeat:
            outcome = self._deliver(job, run, heartbeat.lost)
        self.crash_point("after_execute_before_record")
        try:
            # The hold: how long before the attempt's due time its message reached this worker
            # (negative: after it), what the head start of the message's arrival is tuned by.
            hold_ms = round((due - arrived_at).total_seconds() * 1000)
            self._record(job, run, called_at, outcome, started_late=started_late, hold_ms=hold_ms)
        finally:
            for thread in sending:  # an alert sent beside the call ends with this invocation
                if thread is not None:
                    thread.join(ALERT_TIMEOUT_SECONDS + 2)

    def _running_long(self, job: Job, run: Run, sending: list[threading.Thread | None]) -> AgeAlarm | None:
        """The heartbeat's alarm for the ``running_long`` alert: once, when the attempt has run for
        the job's ``running_seconds`` (None for a job that does not want it)."""
        if job.alerts is None or job.alerts.running_seconds is None:
            return None

        def alert(elapsed: float) -> None:
            detail = f"attempt {run.attempt} still running after {elapsed:.0f} s"
            sending.append(self.alerts.send_soon(AlertKind.RUNNING_LONG, job, run, detail, self.clock()))

        return AgeAlarm(float(job.alerts.running_seconds), alert)

    # -------------------------------------------------------------------------------------------

    def _meet_overlap(self, run: Run, job: Job, receipt_handle: str | None, *, create: bool) -> bool:
        """The job's overlap policy, as the attempt would start (docs/architecture.md, "Overlap
        policies"). Returns whether the run ended (skipped); raises ``ReturnLater`` while it waits
        behind another; otherwise the attempt goes on, after any run it cancelled has stopped."""
        settle_until: datetime | None = None
        for _ in range(OVERLAP_CANCELS):
            earlier = self.store.runs_before(run.job_id, run.run_id, limit=lifecycle.OVERLAP_LOOKBACK)
            blocker = lifecycle.overlap_blocker(
                job, earlier, lambda run_id: self.store.get_run(run.job_id, run_id)
            )
            decision = lifecycle.overlap_decision(run, job, blocker)
            if isinstance(decision, lifecycle.Proceed):
                break
            if isinstance(decision, lifecycle.Skip):
                self._end(run, decision, create=create)
                skipped = replace(run, status=RunStatus.SKIPPED)
                self.alerts.send(AlertKind.MISSED, job, skipped, decision.reason, self.clock())
                return True
            if isinstance(decision, lifecycle.Wait):
                self._wait_behind(run, job, decision.behind, create=create)
            other = decision.other
            now = self.clock()
            if self.store.mark_run(
                other,
                RunStatus.CANCELLED,
                now=now,
                error=f"cancelled for run {run.run_id} (overlap: cancel_other)",
                reason=Reason.OVERLAP,
                overlap_with=run.run_id,
            ):
                logger.info(
                    "run cancelled",
                    extra={
                        "job_id": run.job_id,
                        "run_id": other.run_id,
                        "reason": "overlap",
                        "for": run.run_id,
                    },
                )
                if other.status is RunStatus.RUNNING:
                    # Its worker's next beat finds the run cancelled and aborts the call. Start
                    # after that, not beside it.
                    beat = next_beat_by(other, self.settings.lease_seconds, now)
                    settle_until = beat + timedelta(seconds=CANCEL_SETTLE_SECONDS)
            # Not cancelled: it changed meanwhile (ended, or moved on): the next look reads it again.
        else:
            raise ReturnLater("overlap: the runs before kept changing", 1)
        if settle_until is not None:
            remaining = (settle_until - self.clock()).total_seconds()
            self._hold(receipt_handle, remaining)
            self._sleep_until(settle_until)
        return False

    def _wait_behind(self, run: Run, job: Job, behind: Run, *, create: bool) -> NoReturn:
        """A buffering policy: the run waits behind ``behind``. It records so (once), and its message
        stays away until ``behind`` could end at the latest; the worker that ends ``behind`` wakes
        it sooner (``_wake_waiting``)."""
        if create:
            raise ReturnLater("the run of this dispatch is not written yet", 2)
        log = {"job_id": run.job_id, "run_id": run.run_id, "behind": behind.run_id}
        if run.overlap_with != behind.run_id:
            if not self.store.mark_waiting(run, behind.run_id):
                raise ReturnLater("the run changed as it was to wait", 1)
            logger.info("run waits behind another (overlap)", extra=log)
        seconds = lifecycle.wait_limit(behind, job, self.clock(), OUTCOME_MARGIN_SECONDS)
        raise ReturnLater(
            f"waiting behind run {behind.run_id}", min(SQS_MAX_VISIBILITY_SECONDS, math.ceil(seconds))
        )

    def _wake_waiting(self, job: Job, run: Run) -> None:
        """A buffering job's run ended: the run waiting behind it gets a fresh message and starts now
        (its own message, away until the latest end, comes back later as a duplicate)."""
        if not job.overlap.buffers:
            return
        for later in self.store.runs_after(job.job_id, run.run_id, limit=5):
            if later.status is RunStatus.QUEUED and later.overlap_with == run.run_id:
                self.queue.send([(WorkMessage(job.job_id, later.run_id), 0)])
                logger.info("waiting run woken", extra={"job_id": job.job_id, "run_id": later.run_id})
                return

    def _check_time_left(self, run: Run, job: Job, deadline: datetime | None) -> None:
        """Give the message back at once if this invocation would be stopped before the attempt ends.

        An attempt takes the wait for its second, the job's timeout and the time to record its
        outcome. Killed midway, the outcome would never be written and the target would run again on
        the next delivery. The longest job timeout fits into a fresh invocation with that margin
        (``MAX_JOB_TIMEOUT_SECONDS``), so giving the message back costs one receive, not the run.
        """
        if deadline is None:
            return
        now = self.clock()
        wait = max(0.0, ((run.next_attempt_at or run.scheduled_for) - now).total_seconds())
        if wait > self.settings.max_early_wait_seconds:
            return  # not due yet: it goes back to the queue anyway
        needed = wait + job.timeout_seconds + OUTCOME_MARGIN_SECONDS
        left = (deadline - now).total_seconds()
        if left < needed:
            logger.info(
                "attempt left to a fresh invocation",
                extra={"job_id": run.job_id, "run_id": run.run_id, "seconds_left": round(left, 1)},
            )
            raise ReturnLater("not enough time left in this invocation", 0)

    def _last_delivery(self, message: WorkMessage, run: Run, job: Job, receive_count: int) -> None:
        """SQS will not deliver this message again: end the run now rather than let the queue move the
        message to the DLQ with the run still open.

        A run whose attempt another worker holds keeps going: a fresh copy of the message, delayed to
        the end of that lease, covers it in case that worker dies too. Otherwise the run is FAILED
        (one-off jobs with it), the attempt that could not finish is recorded as such, and the message
        is copied to the DLQ, like any run that failed for good.
        """
        log = {"job_id": run.job_id, "run_id": run.run_id, "receive_count": receive_count}
        now = self.clock()
        if run.status is RunStatus.QUEUED and run.overlap_with is not None and job.overlap.buffers:
            # Waiting behind another run (a buffering policy) is not a failure: it goes on waiting.
            self.queue.send([(replace(message, exhausted=False), SQS_MAX_DELAY_SECONDS)])
            logger.warning("last delivery of a waiting run: message renewed", extra=log)
            return
        if run.status is RunStatus.RUNNING and run.lease_until is not None and now < run.lease_until:
            remaining = math.ceil((run.lease_until - now).total_seconds())
            renewed = replace(message, exhausted=False)  # a fresh copy: nothing has failed
            self.queue.send([(renewed, min(SQS_MAX_DELAY_SECONDS, remaining + HOLD_MARGIN_SECONDS))])
            logger.warning("last delivery of a running attempt: message renewed", extra=log)
            return
        reason = (
            f"delivery exhausted: the run's message was received {receive_count} times without an "
            "outcome (the workers that took it crashed or ran out of time)"
        )
        try:
            run = self.store.start_attempt(
                run,
                token=uuid.uuid4().hex,
                now=now,
                lease_until=now + timedelta(seconds=self.settings.lease_seconds),
            )
        except RunNotOurs:
            logger.info("last delivery: another worker started the attempt", extra=log)
            return
        outcome = TargetOutcome(
            succeeded=False,
            retriable=False,
            status_code=None,
            error=reason,
            response_excerpt="",
            duration_ms=0,
        )
        logger.error("run failed: delivery exhausted", extra=log)
        self._record(job, run, now, outcome)

    def _wait_until_due(self, run: Run, receipt_handle: str | None) -> bool:
        """Hold the message until the attempt is due, or give it back if that is too far off.

        Returns whether it waited (then the job is read again: it may have changed meanwhile). It
        returns ``PRESTART_SECONDS`` before the second; the caller sleeps the rest after starting.

        While holding, the message is hidden for the wait plus a short margin only: if this worker
        dies, the message comes back seconds after the run was due, not after the queue's long
        timeout. (Once the attempt starts, the heartbeat keeps it hidden lease by lease.)
        """
        due = run.next_attempt_at or run.scheduled_for
        remaining = (due - self.clock()).total_seconds()
        if remaining > self.settings.max_early_wait_seconds:
            back = pacing.delay_for(due, self.clock(), self.settings.head_start)
            raise ReturnLater("not due yet", max(1, back))
        # Always, even when due now: until the first heartbeat (a third of a lease into the attempt)
        # the message would otherwise stay hidden for the queue's timeout, which on AWS is six times
        # the worker's (an hour and a half) if this worker dies.
        self._hold(receipt_handle, remaining)
        if remaining <= PRESTART_SECONDS:
            return False
        self._sleep_until(due - timedelta(seconds=PRESTART_SECONDS))
        return True

    def _hold_on_arrival(self, message: WorkMessage, receipt_handle: str | None) -> None:
        """Hide a dispatched message for the wait its body announces before anything else: a worker
        killed during its first reads then leaves it hidden for seconds, not for the receive's
        visibility (on AWS the queue's 5,400 s). The hold before the wait finds it done already."""
        if message.queued is None or receipt_handle is None:
            return
        due = message.queued.next_attempt_at or message.queued.scheduled_for
        remaining = (due - self.clock()).total_seconds()
        if remaining <= self.settings.max_early_wait_seconds:
            self._hold(receipt_handle, remaining)

    def _hold(self, receipt_handle: str | None, seconds: float) -> None:
        """Keep the message hidden while this worker waits ``seconds``, plus a short margin; the
        attempt's heartbeat takes over before that runs out (``_hidden_until``). A hold that already
        covers it (``_hold_on_arrival``) is not asked for again."""
        if receipt_handle is not None:
            hidden = math.ceil(max(0.0, seconds)) + HOLD_MARGIN_SECONDS
            asked = time.monotonic()
            if (
                self._hidden_until.get(receipt_handle, 0.0)
                >= asked + max(0.0, seconds) + HOLD_MARGIN_SECONDS - 0.5
            ):
                return
            self.queue.change_visibility(receipt_handle, hidden)
            self._hidden_until[receipt_handle] = asked + hidden

    def _sleep_until(self, moment: datetime) -> None:
        """Sleep until ``moment``, never waking before it (a sleep overshoots by a fraction of a
        millisecond). No spinning: ten records due at one second spinning together took the CPU a
        small Lambda has for the calls themselves."""
        while (remaining := (moment - self.clock()).total_seconds()) > 0:
            self.sleep(max(remaining, 0.0001))

    def _end(
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
        marked = self.store.mark_run(
            run,
            status,
            now=self.clock(),
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
                self._wake_waiting(job, run)

    def _deliver(self, job: Job, run: Run, cancel: threading.Event) -> TargetOutcome:
        delivery = Delivery(
            job_id=job.job_id,
            run_id=run.run_id,
            attempt=run.attempt,
            scheduled_for=run.scheduled_for,
            payload=job.payload,
            secret=job.secret,
            sampled=tracing.sampled(run.run_id, self.settings.run_trace_percent),
        )
        try:
            return self.targets.execute(job.target, delivery, float(job.timeout_seconds), cancel=cancel)
        except Exception as error:  # the executor should not raise; if it does, the attempt failed
            logger.exception("target executor crashed", extra={"job_id": job.job_id, "run_id": run.run_id})
            return TargetOutcome(
                succeeded=False,
                retriable=True,
                status_code=None,
                error=f"internal error: {type(error).__name__}",
                response_excerpt=str(error)[:4096],
                duration_ms=0,
            )

    def _record(
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
        ``Tables.finish_attempt``; ``hold_ms``: see ``_outcome_fields``)."""
        log = {"job_id": job.job_id, "run_id": run.run_id, "attempt": run.attempt}
        finished_at = self.clock()
        decision = lifecycle.after_attempt(
            job,
            run,
            succeeded=outcome.succeeded,
            retriable=outcome.retriable,
            error=outcome.error,
            finished_at=finished_at,
            rng=self.rng,
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
        tracing.attempt_span(job, run, attempt, percent=self.settings.run_trace_percent)
        try:
            if isinstance(decision, lifecycle.RetryAt):
                self._schedule_retry(job, run, attempt, finished_at, decision, started_late, hold_ms)
                return
            self.store.finish_attempt(
                run, attempt, status=decision.status, now=finished_at, started_late=started_late
            )
        except RunNotOurs:
            logger.warning("outcome not recorded: the run was cancelled or taken over", extra=log)
            self._wake_waiting(job, run)  # cancelled: the next may start (taken over: it waits again)
            return
        logger.info(
            f"run {decision.status.value.lower()}",
            extra={**log, **self._outcome_fields(run, attempt, hold_ms)},
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
                self._pause_after_failures(job, finished_at)
        self._end_of_one_off(job, run, finished_at)
        self._next_backfill(job, run)
        self._wake_waiting(job, run)
        if failed is not None:  # last: if it raises, a redelivery sends it again (``_handle``)
            self.dead_letters.send(job, failed, finished_at)

    def _next_backfill(self, job: Job, run: Run) -> None:
        """A buffered backfill goes on: the end of one of its runs dispatches the next occurrence up
        to ``backfill_until``. Idempotent (the same trigger, the same run id), so a redelivery of the
        ended run, after a crash here, goes on all the same."""
        if (
            run.kind is not RunKind.BACKFILL
            or run.backfill_until is None
            or job.status is JobStatus.CANCELLED
        ):
            return
        following = job.schedule.next_after(run.scheduled_for)
        if following is None or following > run.backfill_until:
            return
        from functions.core.dispatching import Dispatcher  # only a buffered backfill needs it

        now = self.clock()
        current = self.store.get_job(job.job_id)  # ours was read before the run: it may be cancelled
        if current is None or current.status is JobStatus.CANCELLED or current.gone(now):
            return
        trigger = replace(
            make_trigger(
                current,
                following,
                now=now,
                shard_count=self.settings.shard_count,
                kind=RunKind.BACKFILL,
                fire_at=now,
                held=True,
            ),
            backfill_until=run.backfill_until,
        )
        self.store.put_trigger(trigger)
        # The worker may not delete items: a trigger found stale meanwhile is the next sweep's to delete.
        Dispatcher(self.store, self.queue, self.settings, clock=self.clock, deletes=False).dispatch(
            [trigger], now
        )

    def _end_of_one_off(self, job: Job, run: Run, now: datetime) -> None:
        """A one-off job ends with its own run (its status follows the run when read): with
        ``on_complete: delete`` it is gone ``delete_after_days`` from now."""
        expires_at = job.expiry_after_end(now)
        if expires_at is None or job.schedule.is_recurring or run.kind is not RunKind.SCHEDULED:
            return
        self.store.expire_job(job.job_id, expires_at)
        logger.info("job to be deleted", extra={"job_id": job.job_id, "deletes_at": expires_at.isoformat()})

    def _pause_after_failures(self, job: Job, now: datetime) -> None:
        """``pause_on_failures``: pause the job once its newest N finished runs all FAILED (a skipped
        or cancelled occurrence neither breaks nor extends the streak). Only for jobs that ask."""
        streak = job.pause_on_failures
        assert streak is not None
        runs, _ = self.store.list_runs(job.job_id, limit=min(100, 2 * streak + 10))
        outcomes = [run for run in runs if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)][:streak]
        if len(outcomes) < streak or any(run.status is not RunStatus.FAILED for run in outcomes):
            return
        current = self.store.get_job(job.job_id)
        if current is None or current.as_of(now).status is not JobStatus.ACTIVE:
            return
        last = outcomes[0]
        note = (
            f"paused after {streak} consecutive failed runs; "
            f"the last, {last.run_id}: {last.error or 'failed'}"
        )
        try:
            paused = current.as_of(now).paused(now, by=PAUSED_BY_PUNCTUAL, note=note[:500], until=None)
            self.store.update_job(current, paused)
        except VersionChanged:
            return  # changed meanwhile (paused, resumed, rescheduled): the caller's change stands
        logger.warning("job paused", extra={"job_id": job.job_id, "reason": note})

    def _outcome_fields(self, run: Run, attempt: Attempt, hold_ms: int | None) -> dict[str, object]:
        """What an outcome's log line says of the attempt: the run's lateness is its first attempt's;
        ``hold_ms`` is how long before the attempt's due time its message reached the worker (negative:
        after it; absent for an attempt the worker did not call). The deployment's dashboard plots
        both from these lines (infra/monitoring.py)."""
        return {
            "attempt": attempt.number,
            "lateness_ms": run.lateness_ms,
            **({"hold_ms": hold_ms} if hold_ms is not None else {}),
            "duration_ms": attempt.duration_ms,
            "status_code": attempt.status_code,
            "error": attempt.error,
            # The trace the target saw (its traceparent): the worker's line joins the target's own spans.
            "traceparent": traceparent_of(
                run.job_id,
                run.run_id,
                attempt.number,
                sampled=tracing.sampled(run.run_id, self.settings.run_trace_percent),
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
                shard=shard_of(job.job_id, self.settings.shard_count),
                bucket=bucket_of(max(next_at, finished_at)),
                kind=run.kind,
                is_retry=True,
            )
        self.store.finish_attempt(
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
                **self._outcome_fields(run, attempt, hold_ms),
                "next_attempt_at": next_at.isoformat(),
                "wake_up": "message" if short else "trigger",
            },
        )
        if short:
            back = pacing.delay_for(next_at, self.clock(), self.settings.head_start)
            raise ReturnLater("retry scheduled", back)

"""Executing one run attempt: wait for its second, start it exactly once, deliver, record.

Called once per SQS record; the records of a batch run concurrently. A message only names a run: the
run item decides what happens, so duplicate or late messages are harmless. The attempt is this
module; its arrival (holds, first reads, the wait) is ``arrival``, its outcome ``outcome``, what a
run's end sets going ``followups``, and the decisions are pure functions in ``core.lifecycle``.
"""

from __future__ import annotations

import math
import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import NoReturn

from functions.core import crash_points, lifecycle, tracing
from functions.core.alerts import ALERT_TIMEOUT_SECONDS, AlertSender
from functions.core.clock import SYSTEM_CLOCK, Clock, Joinable
from functions.core.model import (
    MISSED_REASONS,
    AlertKind,
    Job,
    Reason,
    Run,
    RunStatus,
    lateness_of,
)
from functions.core.observability import logger
from functions.core.ports import Queue, RunNotOurs, Tables, Targets
from functions.core.queue import WorkMessage
from functions.core.resources import (
    OUTCOME_MARGIN_SECONDS,
    SQS_MAX_VISIBILITY_SECONDS,
    WORK_QUEUE_MAX_RECEIVE_COUNT,
)
from functions.core.settings import Settings
from functions.core.targets.outcome import Delivery, TargetOutcome
from functions.worker import lease
from functions.worker.arrival import Arrival, Arrived
from functions.worker.context import ReturnLater, Shared, WorkerContext
from functions.worker.dead_letter import DeadLetters, DeadLetterUndelivered
from functions.worker.followups import FollowUps
from functions.worker.heartbeat import AgeAlarm, Heartbeat, next_beat_by
from functions.worker.last_delivery import LAST_DELIVERY_RETRY_SECONDS, LastDelivery
from functions.worker.outcome import Outcomes

# cancel_other: how many runs not yet ended one start may cancel before it starts (normally one; a
# second only when an earlier occurrence was about to start as well).
OVERLAP_CANCELS = 3
# cancel_other starts the newer run this long after its cancel beyond a heartbeat's interval: by then
# the cancelled attempt's worker has seen the cancel and aborted its call.
CANCEL_SETTLE_SECONDS = 0.25


class RunExecutor:
    store = Shared[Tables]()
    queue = Shared[Queue]()
    targets = Shared[Targets]()
    settings = Shared[Settings]()
    clock = Shared[Clock]()
    crash_point = Shared[Callable[[str], None]]()
    rng = Shared[random.Random]()

    def __init__(
        self,
        store: Tables,
        queue: Queue,
        targets: Targets,
        settings: Settings,
        clock: Clock = SYSTEM_CLOCK,
        crash_point: Callable[[str], None] | None = None,
    ) -> None:
        self.context = WorkerContext(
            store, queue, targets, settings, clock, crash_point or crash_points.crash_point
        )
        self.alerts = AlertSender(store, targets, clock)
        self.dead_letters = DeadLetters(store, targets)
        self.arrival = Arrival(self.context)
        self.follow_ups = FollowUps(self.context)
        self.outcomes = Outcomes(self.context, self.alerts, self.dead_letters, self.follow_ups)
        self.last_delivery = LastDelivery(self.context, self.outcomes)

    def arrive(self, records: list[tuple[WorkMessage, str]]) -> None:
        """A batch arrived: its holds and first reads in two requests (``Arrival.receive``), before
        its records are handled one by one."""
        self.arrival.receive(records)

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
        run, see ``LastDelivery``); ``time_left_seconds`` is how long the invocation has before it
        is stopped (an attempt that could not finish by then is left to a fresh invocation).
        """
        now = self.clock()
        deadline = None if time_left_seconds is None else now + timedelta(seconds=time_left_seconds)
        last = receive_count >= WORK_QUEUE_MAX_RECEIVE_COUNT or message.exhausted
        arrived = self.arrival.take(receipt_handle)  # its batch's hold and reads (``arrive``)
        try:
            self.arrival.hold_on_arrival(message, receipt_handle)
            self._handle(
                message,
                receipt_handle,
                receive_count=receive_count,
                deadline=deadline,
                arrived_at=arrived.at if arrived is not None else now,
                arrived=arrived,
            )
        except ReturnLater as later:
            if not last:
                raise
            delay = LAST_DELIVERY_RETRY_SECONDS if later.seconds is None else later.seconds
            self.last_delivery.renew(message, delay, str(later))
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
            self.last_delivery.renew(message, LAST_DELIVERY_RETRY_SECONDS, f"{type(error).__name__}: {error}")
        finally:
            self.arrival.forget(receipt_handle)  # its hold and reads (the executor is reused)

    def _handle(
        self,
        message: WorkMessage,
        receipt_handle: str | None,
        *,
        receive_count: int,
        deadline: datetime | None,
        arrived_at: datetime,
        arrived: Arrived | None = None,
        held: bool = False,
    ) -> None:
        log = {"job_id": message.job_id, "run_id": message.run_id}
        if arrived is not None:
            run, job = arrived.run, arrived.job
        else:
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
                self.follow_ups.next_backfill(job, run)
                self.follow_ups.wake_waiting(job, run)
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
            self.last_delivery.end(message, run, job, receive_count)
            return
        now = self.clock()
        if run.status is RunStatus.RUNNING and run.lease_until is not None and now < run.lease_until:
            # Another worker holds this attempt, or held it and died (its message came back). When
            # the lease runs out within seconds, hold the message and take over the moment it does:
            # going back to the queue would add a receive's latency to a run that is already late.
            remaining = (run.lease_until - now).total_seconds()
            if held or remaining > self.settings.max_early_wait_seconds:
                raise ReturnLater("attempt in progress elsewhere", math.ceil(remaining))
            self.arrival.hold(receipt_handle, remaining)
            self.arrival.sleep_until(run.lease_until)
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
        if self.arrival.wait_until_due(run, receipt_handle):
            # A pause, cancel or reschedule may have landed while we waited for the second. Read
            # eventually consistent, at half the units (one read a run at load): only a change of the
            # last second or so before the call can be missed, as it could land just after the read.
            job = self.store.get_job(run.job_id, consistent=False)
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
        run = lease.for_the_call(self.context, run, due)
        if due > self.clock():  # its connection opens while the worker waits for the second
            self.targets.prepare(job.target, float(job.timeout_seconds))
        # The call is composed now and sent at the second (``_deliver``): on time unless the start
        # write outlasted the head start.
        called_at = max(self.clock(), due)
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
        sending: list[Joinable | None] = []
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
            hidden_until=lease.renew_by(self.context, run, self.arrival.held_until(receipt_handle)),
        ) as heartbeat:
            outcome = self._deliver(job, run, heartbeat.lost, due)
            self.crash_point("after_execute_before_record")
            # The heartbeat beats on until the outcome is written: a write the table answers late
            # (throttled: the SDK retries for seconds) must not let the lease and the message's
            # visibility run out, or another delivery would take the attempt over and call again.
            try:
                # The hold: how long before the attempt's due time its message reached this worker
                # (negative: after it), what the head start of the message's arrival is tuned by.
                hold_ms = round((due - arrived_at).total_seconds() * 1000)
                self.outcomes.record(job, run, called_at, outcome, started_late=started_late, hold_ms=hold_ms)
            finally:
                for thread in sending:  # an alert sent beside the call ends with this invocation
                    if thread is not None:
                        thread.join(ALERT_TIMEOUT_SECONDS + 2)

    def _running_long(self, job: Job, run: Run, sending: list[Joinable | None]) -> AgeAlarm | None:
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
            self.arrival.hold(receipt_handle, remaining)
            self.arrival.sleep_until(settle_until)
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
                self.follow_ups.wake_waiting(job, run)

    def _deliver(self, job: Job, run: Run, cancel: threading.Event, due: datetime) -> TargetOutcome:
        """Call the target at ``due``: everything before the request (its composition, its thread)
        is done first, and only the request itself waits for the second. Ten runs due at one second
        composing their requests at the second reached their call 3 to 10 ms late on a quiet core."""
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
            return self.targets.execute(
                job.target,
                delivery,
                float(job.timeout_seconds),
                cancel=cancel,
                wait=lambda: self.arrival.sleep_until(due),
            )
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

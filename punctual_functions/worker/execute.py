"""Handling one work message: what its run comes to, from its arrival to its attempt.

Called once per SQS record; the records of a batch run concurrently. A message only names a run: the
run item decides what happens, so duplicate or late messages are harmless. This module decides, in
order, whether the message leads to an attempt; the parts it hands to are ``arrival`` (holds, first
reads, the wait for the second), ``overlap`` (the job's overlap policy), ``attempt`` (the start, the
call, the heartbeat), ``outcome`` (an outcome's write and what follows), ``followups`` (what a run's
end sets going) and ``last_delivery``; the decisions are pure functions in ``core.lifecycle``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from datetime import datetime, timedelta

from punctual_functions.core import crash_points, lifecycle
from punctual_functions.core.alerts import AlertSender
from punctual_functions.core.clock import SYSTEM_CLOCK, Clock
from punctual_functions.core.model import MISSED_REASONS, AlertKind, Job, Run, RunStatus
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue, Tables, Targets
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import OUTCOME_MARGIN_SECONDS, WORK_QUEUE_MAX_RECEIVE_COUNT
from punctual_functions.core.settings import Settings
from punctual_functions.worker.arrival import Arrival, Arrived
from punctual_functions.worker.attempt import Attempts
from punctual_functions.worker.context import ReturnLater, Shared, WorkerContext
from punctual_functions.worker.dead_letter import DeadLetters, DeadLetterUndelivered
from punctual_functions.worker.followups import FollowUps
from punctual_functions.worker.last_delivery import LAST_DELIVERY_RETRY_SECONDS, LastDelivery
from punctual_functions.worker.limiting import Limiting
from punctual_functions.worker.outcome import Outcomes
from punctual_functions.worker.overlap import Overlap


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
        self.overlap = Overlap(self.context, self.arrival, self.alerts, self.outcomes)
        self.attempts = Attempts(self.context, self.arrival, self.alerts, self.outcomes)
        self.limiting = Limiting(self.context, self.alerts)

    def arrive(self, records: list[tuple[WorkMessage, str]]) -> None:
        """A batch arrived: its holds and first reads in two requests (``Arrival.receive``), before
        its records are handled one by one."""
        # With the batch's read, the target limits of the owners its dispatched messages name, when a
        # container's copy is older than a few seconds (``limiting``): no request of their own.
        cache = self.limiting.cache
        owners = cache.stale(message.queued.owner for message, _ in records if message.queued is not None)
        cache.put(self.arrival.receive(records, owners))

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
        """Take the message's run from its arrival to an attempt, or to the end that replaces one."""
        if arrived is not None:
            run, job = arrived.run, arrived.job
        else:
            run, job = self.store.get_run_and_job(message.job_id, message.run_id)
        if job is not None and job.gone(self.clock()):
            job = None  # deleted by on_complete (DynamoDB's TTL removes the item later)
        retention = timedelta(days=self.settings.run_retention_days)
        run = lifecycle.run_of_message(run, message.queued, self.clock(), retention)
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
            logger.info(
                "nothing to do for message",
                extra={
                    "job_id": message.job_id,
                    "run_id": message.run_id,
                    "status": run.status if run else None,
                },
            )
            if run is not None and job is not None:
                if message.handed is not None:  # woken with a slot it will not use: the next one's
                    self.limiting.pass_on(job, run, message.handed)
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
            self.outcomes.end_unstarted(run, lifecycle.Cancel("job cancelled"), create=create)
            if message.handed is not None and job is not None:
                self.limiting.pass_on(job, run, message.handed)
            return
        if receive_count >= WORK_QUEUE_MAX_RECEIVE_COUNT or message.exhausted:
            self.last_delivery.end(message, run, job, receive_count)
            return
        remaining = lifecycle.lease_left(run, self.clock())
        if remaining is not None:
            # Another worker holds this attempt, or held it and died (its message came back). When
            # the lease runs out within seconds, hold the message and take over the moment it does:
            # going back to the queue would add a receive's latency to a run that is already late.
            if held or remaining > self.settings.max_early_wait_seconds:
                raise ReturnLater("attempt in progress elsewhere", math.ceil(remaining))
            self.arrival.hold(receipt_handle, remaining)
            assert run.lease_until is not None
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
            self.outcomes.end_unstarted(run, skip, create=create, job=job)
            return
        self._check_time_left(run, job, deadline)
        if self.arrival.wait_until_due(run, receipt_handle):
            # A pause, cancel or reschedule may have landed while we waited for the second. Read
            # eventually consistent, at half the units (one read a run at load): only a change of the
            # last second or so before the call can be missed, as it could land just after the read.
            job = self.store.get_job(run.job_id, consistent=False)
            if isinstance(lifecycle.on_arrival(run, job), lifecycle.Cancel) or job is None:
                self.outcomes.end_unstarted(run, lifecycle.Cancel("job cancelled"), create=create)
                return
            skip = lifecycle.superseded(run, job)
            if skip is not None:
                self.outcomes.end_unstarted(run, skip, create=create, job=job)
                return
        if lifecycle.overlap_applies(run, job) and self.overlap.meet(run, job, receipt_handle, create=create):
            return
        # None: under no limit (nothing read: the owner's limits came with the batch's read)
        slots = self.limiting.enter(
            job,
            run,
            create=create,
            read_with=arrived.at if arrived is not None else None,
            handed=message.handed,
        )
        try:
            self.attempts.run(job, run, receipt_handle, create=create, arrived_at=arrived_at)
        finally:  # after the outcome's write (or a start another delivery won)
            self.limiting.release(slots)

    def _check_time_left(self, run: Run, job: Job, deadline: datetime | None) -> None:
        """Give the message back at once if this invocation would be stopped before the attempt ends.

        Killed midway, the outcome would never be written and the target would run again on the next
        delivery. The longest job timeout fits into a fresh invocation with that margin
        (``MAX_JOB_TIMEOUT_SECONDS``), so giving the message back costs one receive, not the run.
        """
        if deadline is None:
            return
        left = lifecycle.short_of_time(
            run,
            job,
            self.clock(),
            deadline,
            max_early_wait=self.settings.max_early_wait_seconds,
            margin=OUTCOME_MARGIN_SECONDS,
        )
        if left is not None:
            logger.info(
                "attempt left to a fresh invocation",
                extra={"job_id": run.job_id, "run_id": run.run_id, "seconds_left": round(left, 1)},
            )
            raise ReturnLater("not enough time left in this invocation", 0)

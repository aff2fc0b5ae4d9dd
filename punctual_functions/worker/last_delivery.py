"""A message's last delivery: SQS moves it to the DLQ after this one, so the run must end here (or
a fresh copy of the message must carry it on)."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from datetime import timedelta

from punctual_functions.core.model import Job, Reason, Run, RunStatus
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import RunNotOurs
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import SQS_MAX_DELAY_SECONDS
from punctual_functions.core.targets.outcome import TargetOutcome
from punctual_functions.worker.arrival import HOLD_MARGIN_SECONDS
from punctual_functions.worker.context import WorkerContext
from punctual_functions.worker.outcome import Outcomes

# A last delivery that could not end its run (a table error) is tried again this much later.
LAST_DELIVERY_RETRY_SECONDS = 30


class LastDelivery:
    def __init__(self, context: WorkerContext, outcomes: Outcomes) -> None:
        self.context = context
        self.outcomes = outcomes

    def end(self, message: WorkMessage, run: Run, job: Job, receive_count: int) -> None:
        """SQS will not deliver this message again: end the run now rather than let the queue move the
        message to the DLQ with the run still open.

        A run whose attempt another worker holds keeps going: a fresh copy of the message, delayed to
        the end of that lease, covers it in case that worker dies too. Otherwise the run is FAILED
        (one-off jobs with it), the attempt that could not finish is recorded as such, and the message
        is copied to the DLQ, like any run that failed for good.
        """
        log = {"job_id": run.job_id, "run_id": run.run_id, "receive_count": receive_count}
        now = self.context.clock()
        if run.status is RunStatus.QUEUED and run.overlap_with is not None and job.overlap.buffers:
            # Waiting behind another run (a buffering policy) is not a failure: it goes on waiting.
            self.context.queue.send([(replace(message, exhausted=False), SQS_MAX_DELAY_SECONDS)])
            logger.warning("last delivery of a waiting run: message renewed", extra=log)
            return
        if run.status in (RunStatus.QUEUED, RunStatus.RETRYING) and run.reason is Reason.LIMITED:
            # Waiting its turn under a target limit is not a failure either.
            self.context.queue.send([(replace(message, exhausted=False), 1)])
            logger.warning("last delivery of a run waiting on a limit: message renewed", extra=log)
            return
        if run.status is RunStatus.RUNNING and run.lease_until is not None and now < run.lease_until:
            remaining = math.ceil((run.lease_until - now).total_seconds())
            renewed = replace(message, exhausted=False)  # a fresh copy: nothing has failed
            self.context.queue.send([(renewed, min(SQS_MAX_DELAY_SECONDS, remaining + HOLD_MARGIN_SECONDS))])
            logger.warning("last delivery of a running attempt: message renewed", extra=log)
            return
        reason = (
            f"delivery exhausted: the run's message was received {receive_count} times without an "
            "outcome (the workers that took it crashed or ran out of time)"
        )
        try:
            run = self.context.store.start_attempt(
                run,
                token=uuid.uuid4().hex,
                now=now,
                lease_until=now + timedelta(seconds=self.context.settings.lease_seconds),
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
        self.outcomes.record(job, run, now, outcome)

    def renew(self, message: WorkMessage, delay: int, why: str) -> None:
        """The last delivery of a message could not end its run (the table erred, say): SQS would move
        it to the DLQ with the run still open. A fresh copy, marked ``exhausted``, ends it later as
        that delivery would have (if sending fails too, the message reaches the DLQ: its alarm)."""
        renewed = replace(message, exhausted=True)
        self.context.queue.send([(renewed, max(1, min(SQS_MAX_DELAY_SECONDS, delay)))])
        logger.warning(
            "last delivery could not end the run: message renewed",
            extra={"job_id": message.job_id, "run_id": message.run_id, "why": why},
        )

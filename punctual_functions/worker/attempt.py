"""An attempt: started exactly once (a conditional write under a fresh lease token), its target called
at the second under a heartbeat, its outcome handed to ``outcome``."""

from __future__ import annotations

import math
import threading
import uuid
from dataclasses import replace
from datetime import datetime, timedelta

from punctual_functions.core import lifecycle, tracing
from punctual_functions.core.alerts import ALERT_TIMEOUT_SECONDS, AlertSender
from punctual_functions.core.clock import Joinable
from punctual_functions.core.model import AlertKind, Job, Run, RunStatus, lateness_of
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import RunNotOurs
from punctual_functions.core.rights import DeliveryRights, RightsReader
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome
from punctual_functions.core.targets.rights import delivery_refusal
from punctual_functions.worker import lease
from punctual_functions.worker.arrival import Arrival
from punctual_functions.worker.calls import CallsDue
from punctual_functions.worker.context import ReturnLater, WorkerContext
from punctual_functions.worker.heartbeat import AgeAlarm, Heartbeat
from punctual_functions.worker.outcome import Outcomes


class Attempts:
    def __init__(
        self, context: WorkerContext, arrival: Arrival, alerts: AlertSender, outcomes: Outcomes
    ) -> None:
        self.context = context
        self.arrival = arrival
        self.alerts = alerts
        self.outcomes = outcomes
        # This executor's calls by due time: an outcome is written once its second's calls are out.
        self.calls = CallsDue()
        # The deployment's delivery rights, as last read (a right withdrawn stops runs within 60 s).
        self.rights = RightsReader(self._delivery_rights, _ContextClock(context))

    def _delivery_rights(self) -> DeliveryRights:
        return self.context.store.delivery_rights()  # the context's store as it is at each read

    def run(
        self, job: Job, run: Run, receipt_handle: str | None, *, create: bool, arrived_at: datetime
    ) -> None:
        """Start the run's next attempt (or take over one whose lease lapsed), call its target at its
        due time, and record the outcome; a duplicate delivery that finds the attempt started returns
        (or keeps its message while another delivery holds the lease)."""
        context = self.context
        # The start is written a moment before the second (see PRESTART_SECONDS); it is recorded as
        # the due time, when the target is called.
        due = run.next_attempt_at or run.scheduled_for
        started_at = max(context.clock(), due)
        sets_lateness = run.lateness_ms is None  # the run's first start: its lateness is this one's
        started = self._start(run, started_at, create=create)
        if started is None:
            return
        run = started
        context.crash_point("after_start_before_execute")
        run = lease.for_the_call(context, run, due)
        if due > context.clock():  # its connection opens while the worker waits for the second
            context.targets.prepare(job.target, float(job.timeout_seconds))
        # The call is composed now and sent at the second (``_deliver``): on time unless the start
        # write outlasted the head start.
        called_at = max(context.clock(), due)
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
                "job_id": run.job_id,
                "run_id": run.run_id,
                "attempt": run.attempt,
                "lateness_ms": run.lateness_ms,
                "executions": run.executions,
            },
        )
        sending: list[Joinable | None] = []
        late = lifecycle.late_by(run, job) if sets_lateness else None
        if late is not None:
            sending.append(self.alerts.send_soon(AlertKind.LATE, job, run, late, called_at))
        with Heartbeat(
            context.store,
            context.queue,
            run,
            receipt_handle,
            base_lease=context.settings.lease_seconds,
            clock=context.clock,
            alarm=self._running_long(job, run, sending),
            hidden_until=lease.renew_by(context, run, self.arrival.held_until(receipt_handle)),
        ) as heartbeat:
            self.calls.expect(due)
            try:
                outcome = self._deliver(job, run, heartbeat.lost, due)
            finally:
                self.calls.returned(due)
            context.crash_point("after_execute_before_record")
            # The other calls due at this second go first: its outcome is written after them.
            self.calls.wait_for_the_others(due, context.clock)
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

    def _start(self, run: Run, started_at: datetime, *, create: bool) -> Run | None:
        """The start write, under a fresh lease token: the run RUNNING as it is now ours, or None when
        another delivery started it (a duplicate message)."""
        context = self.context
        token = uuid.uuid4().hex
        log = {"job_id": run.job_id, "run_id": run.run_id}
        try:
            return context.store.start_attempt(
                run,
                token=token,
                now=started_at,
                lease_until=context.clock() + timedelta(seconds=context.settings.lease_seconds),
                create=create,
            )
        except RunNotOurs:
            # Either another delivery started it, or our own write took effect and only its answer
            # was lost (the SDK retried it): the lease token tells which.
            current = context.store.get_run(run.job_id, run.run_id)
            if (
                current is not None
                and current.status is RunStatus.RUNNING
                and current.lease_token != token
                and current.lease_until is not None
            ):
                # Another delivery holds the attempt. This message may be the only copy left (SQS can
                # deliver one message twice): keep it until the lease ends, so that if the holder
                # dies, it brings the run back; if the holder finishes, it finds the run done.
                remaining = (current.lease_until - context.clock()).total_seconds()
                logger.info("attempt started by another delivery", extra=log)
                raise ReturnLater("attempt in progress elsewhere", max(1, math.ceil(remaining))) from None
            if current is None or current.status is not RunStatus.RUNNING or current.lease_token != token:
                logger.info("duplicate delivery ignored", extra=log)
                return None
            return current

    def _running_long(self, job: Job, run: Run, sending: list[Joinable | None]) -> AgeAlarm | None:
        """The heartbeat's alarm for the ``running_long`` alert: once, when the attempt has run for
        the job's ``running_seconds`` (None for a job that does not want it)."""
        if job.alerts is None or job.alerts.running_seconds is None:
            return None

        def alert(elapsed: float) -> None:
            detail = f"attempt {run.attempt} still running after {elapsed:.0f} s"
            sending.append(
                self.alerts.send_soon(AlertKind.RUNNING_LONG, job, run, detail, self.context.clock())
            )

        return AgeAlarm(float(job.alerts.running_seconds), alert)

    def _deliver(self, job: Job, run: Run, cancel: threading.Event, due: datetime) -> TargetOutcome:
        """Call the target at ``due``: everything before the request (its composition, its thread)
        is done first, and only the request itself waits for the second. Ten runs due at one second
        composing their requests at the second reached their call 3 to 10 ms late on a quiet core.

        A target its owner has no delivery right to (any more) is not called: the attempt fails, not
        to be retried (another attempt would be refused the same way)."""
        refusal = delivery_refusal(self.rights, job.owner, job.target, self.context.settings)
        if refusal is not None:
            logger.warning("delivery refused", extra={"job_id": job.job_id, "run_id": run.run_id})
            self.arrival.sleep_until(due)  # the attempt was recorded as started at its second
            return TargetOutcome(
                succeeded=False,
                retriable=False,
                status_code=None,
                error=f"delivery refused: {refusal}",
                response_excerpt="",
                duration_ms=0,
            )
        delivery = Delivery(
            job_id=job.job_id,
            run_id=run.run_id,
            attempt=run.attempt,
            scheduled_for=run.scheduled_for,
            payload=job.payload,
            secret=job.secret,
            sampled=tracing.sampled(run.run_id, self.context.settings.run_trace_percent),
        )
        try:
            return self.context.targets.execute(
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


class _ContextClock:
    """The context's clock as it is at each use (a test may put another in its place)."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context

    def monotonic(self) -> float:
        return self.context.clock.monotonic()

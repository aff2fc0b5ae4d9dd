"""The job's overlap policy as an attempt would start (docs/architecture.md, "Overlap policies"): the
decision is ``lifecycle.overlap_decision``; this module reads what it needs and carries it out."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta
from typing import NoReturn

from punctual_functions.core import lifecycle
from punctual_functions.core.alerts import AlertSender
from punctual_functions.core.model import AlertKind, Job, Reason, Run, RunStatus
from punctual_functions.core.observability import logger
from punctual_functions.core.resources import OUTCOME_MARGIN_SECONDS, SQS_MAX_VISIBILITY_SECONDS
from punctual_functions.worker.arrival import Arrival
from punctual_functions.worker.context import ReturnLater, WorkerContext
from punctual_functions.worker.heartbeat import next_beat_by
from punctual_functions.worker.outcome import Outcomes

# cancel_other: how many runs not yet ended one start may cancel before it starts (normally one; a
# second only when an earlier occurrence was about to start as well).
OVERLAP_CANCELS = 3
# cancel_other starts the newer run this long after its cancel beyond a heartbeat's interval: by then
# the cancelled attempt's worker has seen the cancel and aborted its call.
CANCEL_SETTLE_SECONDS = 0.25


class Overlap:
    def __init__(
        self, context: WorkerContext, arrival: Arrival, alerts: AlertSender, outcomes: Outcomes
    ) -> None:
        self.context = context
        self.arrival = arrival
        self.alerts = alerts
        self.outcomes = outcomes

    def meet(self, run: Run, job: Job, receipt_handle: str | None, *, create: bool) -> bool:
        """Returns whether the run ended (skipped); raises ``ReturnLater`` while it waits behind
        another; otherwise the attempt goes on, after any run it cancelled has stopped."""
        store, clock = self.context.store, self.context.clock
        settle_until: datetime | None = None
        for _ in range(OVERLAP_CANCELS):
            earlier = store.runs_before(run.job_id, run.run_id, limit=lifecycle.OVERLAP_LOOKBACK)
            blocker = lifecycle.overlap_blocker(
                job, earlier, lambda run_id: store.get_run(run.job_id, run_id)
            )
            decision = lifecycle.overlap_decision(run, job, blocker)
            if isinstance(decision, lifecycle.Proceed):
                break
            if isinstance(decision, lifecycle.Skip):
                self.outcomes.end_unstarted(run, decision, create=create)
                skipped = replace(run, status=RunStatus.SKIPPED)
                self.alerts.send(AlertKind.MISSED, job, skipped, decision.reason, clock())
                return True
            if isinstance(decision, lifecycle.Wait):
                self._wait_behind(run, job, decision.behind, create=create)
            other = decision.other
            now = clock()
            if store.mark_run(
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
                    beat = next_beat_by(other, self.context.settings.lease_seconds, now)
                    settle_until = beat + timedelta(seconds=CANCEL_SETTLE_SECONDS)
            # Not cancelled: it changed meanwhile (ended, or moved on): the next look reads it again.
        else:
            raise ReturnLater("overlap: the runs before kept changing", 1)
        if settle_until is not None:
            remaining = (settle_until - clock()).total_seconds()
            self.arrival.hold(receipt_handle, remaining)
            self.arrival.sleep_until(settle_until)
        return False

    def _wait_behind(self, run: Run, job: Job, behind: Run, *, create: bool) -> NoReturn:
        """A buffering policy: the run waits behind ``behind``. It records so (once), and its message
        stays away until ``behind`` could end at the latest; the worker that ends ``behind`` wakes
        it sooner (``FollowUps.wake_waiting``)."""
        if create:
            raise ReturnLater("the run of this dispatch is not written yet", 2)
        log = {"job_id": run.job_id, "run_id": run.run_id, "behind": behind.run_id}
        if run.overlap_with != behind.run_id:
            if not self.context.store.mark_waiting(run, behind.run_id):
                raise ReturnLater("the run changed as it was to wait", 1)
            logger.info("run waits behind another (overlap)", extra=log)
        seconds = lifecycle.wait_limit(behind, job, self.context.clock(), OUTCOME_MARGIN_SECONDS)
        raise ReturnLater(
            f"waiting behind run {behind.run_id}", min(SQS_MAX_VISIBILITY_SECONDS, math.ceil(seconds))
        )

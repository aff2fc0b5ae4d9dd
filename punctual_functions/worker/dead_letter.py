"""A job's own dead-letter queue: each run that ended FAILED, sent with its error.

Like EventBridge Scheduler's per-schedule dead-letter queue, and unlike the deployment's DLQ (which
holds only messages Punctual itself could not process): a run that failed on its target is the
job owner's business. The message goes through the same target machinery as the runs (the
deployment's allow-list, the target's region); it is sent at least once (``dead_letter`` is added
to the run's ``alerts_sent`` after the send, so a redelivery of the run's message sends it again if
the worker died in between). A send that fails raises ``DeadLetterUndelivered``: the run's message
comes back and tries again; its last delivery puts it in the deployment's DLQ with the reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from punctual_functions.core.model import Job, Run, iso
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import RunStore, Targets
from punctual_functions.core.targets.outcome import Delivery

DEAD_LETTER: Final = "dead_letter"  # its mark in the run's alerts_sent, and the Punctual-Alert header
DEAD_LETTER_TIMEOUT_SECONDS: Final = 10.0


class DeadLetterUndelivered(Exception):
    """The job's dead-letter queue refused the failed run (the run's message will try again)."""


def dead_letter_body(job: Job, run: Run, now: datetime) -> dict[str, Any]:
    """What the job's dead-letter queue receives: enough to see why, and to send the payload again.

    The target is named without its headers (they may carry credentials)."""
    last = run.attempts[-1] if run.attempts else None
    return {
        "dead_letter": "run failed",
        "job_id": job.job_id,
        "job_name": job.name,
        "tags": job.tags,
        "run_id": run.run_id,
        "scheduled_for": iso(run.scheduled_for),
        "attempts": run.attempt,
        "error": run.error or (last.error if last else None),
        "status_code": last.status_code if last else None,
        "response": last.response if last else None,
        "target": {key: value for key, value in job.target.items() if key != "headers"},
        "payload": job.payload,
        "failed_at": iso(run.finished_at or now),
    }


class DeadLetters:
    def __init__(self, store: RunStore, targets: Targets) -> None:
        self.store = store
        self.targets = targets

    def send(self, job: Job, run: Run, now: datetime) -> None:
        """Send ``run`` (FAILED, its attempts recorded) to the job's dead-letter queue, unless the
        job has none or it was sent already."""
        if job.dead_letter is None or DEAD_LETTER in run.alerts_sent:
            return
        log = {"job_id": job.job_id, "run_id": run.run_id, "queue_url": job.dead_letter.get("queue_url")}
        delivery = Delivery(
            job_id=job.job_id,
            run_id=run.run_id,
            attempt=max(1, run.attempt),
            scheduled_for=run.scheduled_for,
            payload=dead_letter_body(job, run, now),
            alert=DEAD_LETTER,
        )
        outcome = self.targets.execute(job.dead_letter, delivery, DEAD_LETTER_TIMEOUT_SECONDS)
        if not outcome.succeeded:
            logger.warning("dead letter not delivered", extra={**log, "error": outcome.error})
            raise DeadLetterUndelivered(f"dead letter not delivered to {log['queue_url']}: {outcome.error}")
        self.store.claim_alert(run, DEAD_LETTER)
        logger.info("run sent to the job's dead-letter queue", extra=log)

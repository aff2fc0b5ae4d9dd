"""Per-job alerts: failed, late, running long, missed; each at most once per run and kind.

The worker decides when one fires (docs/architecture.md, "Per-job alerts"); this module sends it:
it claims the kind on the run (a conditional write: the second claim of a kind is refused), then
delivers a small JSON body through the same target machinery as the runs (the SSRF guard, the
deployment's allow-list, the job's signing secret), and writes one log line that is also a
CloudWatch embedded-metric record (``Alerts`` by job and kind). A job without alerts never reaches
here. Sending never raises into the worker: an alert that cannot be sent is logged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from punctual_functions.core.clock import SYSTEM_CLOCK, Clock, Joinable
from punctual_functions.core.model import AlertKind, Job, Run, iso, to_ms
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import RunStore, Targets
from punctual_functions.core.targets.outcome import Delivery

__all__ = ["METRIC_NAMESPACE", "AlertSender", "alert_body", "metric_record"]

METRIC_NAMESPACE: Final = "Punctual"
# An alert's own delivery: short, and not retried (an alert about a failed alert helps no one).
ALERT_TIMEOUT_SECONDS: Final = 10.0


def alert_body(kind: AlertKind, job: Job, run: Run, detail: str, now: datetime) -> dict[str, Any]:
    """What an alert says: which job and run, what happened, when."""
    return {
        "alert": kind.value,
        "detail": detail,
        "job_id": job.job_id,
        "job_name": job.name,
        "tags": job.tags,
        "run_id": run.run_id,
        "scheduled_for": iso(run.scheduled_for),
        "run_status": run.status.value,
        "at": iso(now),
    }


# Not Powertools' single_metric: it prints a line of its own and adds the `service` dimension deployed.
def metric_record(kind: AlertKind, job: Job, now: datetime) -> dict[str, Any]:
    """The fields that make the alert's log line a CloudWatch embedded-metric record: one ``Alerts``
    count with the job and the kind as dimensions (only jobs with alerts ever emit it)."""
    return {
        "_aws": {
            "Timestamp": to_ms(now),
            "CloudWatchMetrics": [
                {
                    "Namespace": METRIC_NAMESPACE,
                    "Dimensions": [["job_id", "kind"]],
                    "Metrics": [{"Name": "Alerts", "Unit": "Count"}],
                }
            ],
        },
        "Alerts": 1,
        "job_id": job.job_id,
        "kind": kind.value,
    }


class AlertSender:
    """Sends a job's alerts, each once per run and kind; on a thread of its own when asked (an alert
    must not hold up the call of the target or the heartbeat)."""

    def __init__(self, store: RunStore, targets: Targets, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.targets = targets
        self.clock = clock

    def send(self, kind: AlertKind, job: Job, run: Run, detail: str, now: datetime) -> bool:
        """Send an alert of ``kind`` if the job wants it and none was sent for this run; whether it
        went out."""
        if job.alerts is None or not job.alerts.wants(kind):
            return False
        log = {"job_id": job.job_id, "run_id": run.run_id, "kind": kind.value}
        try:
            if not self.store.claim_alert(run, kind.value):
                return False  # sent already (a redelivery, another worker)
            delivery = Delivery(
                job_id=job.job_id,
                run_id=run.run_id,
                attempt=max(1, run.attempt),
                scheduled_for=run.scheduled_for,
                payload=alert_body(kind, job, run, detail, now),
                secret=job.secret,
                alert=kind.value,
            )
            outcome = self.targets.execute(job.alerts.target, delivery, ALERT_TIMEOUT_SECONDS)
        except Exception:  # an alert is not worth a run's outcome
            logger.exception("alert not sent", extra=log)
            return False
        if not outcome.succeeded:
            logger.warning("alert not delivered", extra={**log, "error": outcome.error})
            return False
        logger.info("alert sent", extra={**log, **metric_record(kind, job, now), "detail": detail})
        return True

    def send_soon(self, kind: AlertKind, job: Job, run: Run, detail: str, now: datetime) -> Joinable | None:
        """``send`` on a thread of its own, returned to be joined before the invocation ends."""
        if job.alerts is None or not job.alerts.wants(kind):
            return None

        def send() -> None:
            self.send(kind, job, run, detail, now)

        return self.clock.start(send, f"alert-{kind.value}")

"""``punctual_functions/core/alerts.py``: the body, the embedded-metric record, once per run and kind."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from punctual.testing.fakes.store import MemoryStore
from punctual_functions.core.alerts import AlertSender, alert_body, metric_record
from punctual_functions.core.model import AlertKind, Alerts, Job, Run, RunStatus
from punctual_functions.core.schedule import parse_schedule
from tests.fakes.targets import ScriptedTargets, failure

NOW = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)
HOOK = {"type": "http", "url": "https://example.com/alerts"}


def job(alerts: Alerts | None) -> Job:
    return Job(
        job_id="job_1",
        owner="alice",
        name="nightly",
        schedule=parse_schedule(cron="0 * * * *", now=NOW),
        target={"type": "http", "url": "https://example.com/hook"},
        created_at=NOW,
        updated_at=NOW,
        tags={"team": "data"},
        alerts=alerts,
    )


def run() -> Run:
    return Run(
        job_id="job_1", run_id="20261125T010000.000Z-abcd0123", owner="alice", scheduled_for=NOW,
        status=RunStatus.FAILED, attempt=3,
    )  # fmt: skip


def test_the_body_names_the_job_the_run_and_what_happened() -> None:
    body = alert_body(AlertKind.FAILED, job(None), run(), "HTTP 500", NOW)
    assert body == {
        "alert": "failed",
        "detail": "HTTP 500",
        "job_id": "job_1",
        "job_name": "nightly",
        "tags": {"team": "data"},
        "run_id": "20261125T010000.000Z-abcd0123",
        "scheduled_for": "2026-11-25T01:00:00.000Z",
        "run_status": "FAILED",
        "at": "2026-11-25T01:00:00.000Z",
    }


def test_the_metric_record_is_cloudwatch_embedded_metric_format_by_job_and_kind() -> None:
    record = metric_record(AlertKind.LATE, job(None), NOW)
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive == {
        "Namespace": "Punctual",
        "Dimensions": [["job_id", "kind"]],
        "Metrics": [{"Name": "Alerts", "Unit": "Count"}],
    }
    assert record["_aws"]["Timestamp"] == int(NOW.timestamp() * 1000)
    assert (record["Alerts"], record["job_id"], record["kind"]) == (1, "job_1", "late")
    json.dumps(record)  # one JSON log line


def test_an_alert_goes_once_per_run_and_kind_and_only_where_wanted(caplog: pytest.LogCaptureFixture) -> None:
    store, targets = MemoryStore(), ScriptedTargets()
    store.put_run(run())
    sender = AlertSender(store, targets)
    wanted = job(Alerts(target=HOOK, failed=True))
    assert not sender.send(AlertKind.LATE, wanted, run(), "late", NOW), "not declared: nothing, no write"
    assert store.runs["job_1"][run().run_id].alerts_sent == frozenset()
    with caplog.at_level(logging.INFO, logger="punctual"):
        assert sender.send(AlertKind.FAILED, wanted, run(), "HTTP 500", NOW)
    assert not sender.send(AlertKind.FAILED, wanted, run(), "HTTP 500", NOW), "once"
    ((spec, delivery, timeout),) = targets.deliveries
    assert spec == HOOK and delivery.alert == "failed" and timeout == 10.0
    assert any(getattr(r, "Alerts", None) == 1 for r in caplog.records), "the line carries the metric"


def test_an_alert_that_cannot_be_delivered_is_logged_not_raised() -> None:
    store, targets = MemoryStore(), ScriptedTargets(failure(503, retriable=True))
    store.put_run(run())
    assert not AlertSender(store, targets).send(
        AlertKind.FAILED, job(Alerts(HOOK, failed=True)), run(), "x", NOW
    )
    assert store.runs["job_1"][run().run_id].alerts_sent == {"failed"}, "claimed: never sent twice"

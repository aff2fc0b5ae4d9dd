"""End to end through the local stack's HTTP API: jobs fire at their second, once, and say so."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from punctual.testing.receiver import Receiver
from punctual.testing.stack import local_stack as run_local_stack
from punctual_functions.core.model import iso, parse_iso
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def test_health_needs_no_token(local_stack: Api) -> None:
    status, body = local_stack.call("GET", "/v1/health", token="wrong")
    assert (status, body) == (200, {"status": "ok"})


def test_jobs_need_a_valid_token(local_stack: Api) -> None:
    status, body = local_stack.call("GET", "/v1/jobs/job_x", token="not-a-token")
    assert status == 401 and body["error"] == "unauthorized"


def test_one_off_and_cron_jobs_fire_at_their_second_exactly_once(local_stack: Api) -> None:
    with Receiver() as receiver:
        now = datetime.now(UTC)
        # One-offs inside the look-ahead (enqueued by the API) and beyond it (found by a sweep).
        offsets = {"/soon-3": 3, "/soon-6": 6, "/later-75": 75}
        jobs = {}
        for path, seconds in offsets.items():
            due = (now + timedelta(seconds=seconds)).replace(microsecond=0)
            status, job = local_stack.call(
                "POST",
                "/v1/jobs",
                {
                    "schedule": {"at": iso(due)},
                    "target": {"type": "http", "url": receiver.url + path},
                    "payload": {"p": path},
                },
            )
            assert status == 201, job
            jobs[path] = (job, due)
        status, cron_job = local_stack.call(
            "POST",
            "/v1/jobs",
            {
                "schedule": {"cron": "*/10 * * * * *"},
                "target": {"type": "http", "url": receiver.url + "/cron"},
            },
        )
        assert status == 201, cron_job
        assert len(cron_job["upcoming"]) == 5
        cron_started = datetime.now(UTC)

        # Then every one-off is delivered exactly once, never before its second
        for path, (_job, due) in jobs.items():
            deliveries = receiver.wait_for(path, 1, timeout=(due - datetime.now(UTC)).total_seconds() + 15)
            assert len(deliveries) == 1, f"{path} delivered {len(deliveries)} times"
            delivery = deliveries[0]
            assert delivery.received_at >= due.timestamp(), f"{path} fired early"
            assert delivery.received_at - due.timestamp() < 1.0, f"{path} fired late"
            assert delivery.json == {"p": path}
        time.sleep(1.5)
        assert all(len(receiver.for_path(path)) == 1 for path in offsets), "a one-off was delivered twice"

        # And its history says SUCCEEDED with lateness recorded
        for job, due in jobs.values():
            status, runs = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs")
            assert status == 200
            (run,) = runs["items"]
            assert run["status"] == "SUCCEEDED", run
            assert run["scheduled_for"] == iso(due)
            assert run["lateness_ms"] is not None and 0 <= run["lateness_ms"] < 1000
            status, view = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
            assert view["status"] == "COMPLETED" and view["last_run"]["status"] == "SUCCEEDED"
            status, detail = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}")
            assert detail["attempts"][0]["status_code"] == 200

        # And the cron job fired at each 10-second slot, once
        cron = receiver.for_path("/cron")
        slots = [parse_iso(d.headers["Punctual-Scheduled-For"]) for d in cron]
        assert len(slots) == len(set(slots)), "a cron slot fired twice"
        assert all(s.second % 10 == 0 and s.microsecond == 0 for s in slots)
        last = max(slots)
        expected = []
        slot = cron_started.replace(microsecond=0) + timedelta(seconds=10 - cron_started.second % 10)
        while slot <= last:
            expected.append(slot)
            slot += timedelta(seconds=10)
        assert sorted(slots) == expected, "a cron slot was missed"
        assert len(expected) >= 6
        for delivery, slot in zip(cron, slots, strict=True):
            assert delivery.received_at >= slot.timestamp(), "cron fired early"
        status, runs = local_stack.call("GET", f"/v1/jobs/{cron_job['job_id']}/runs?limit=100")
        succeeded = [r for r in runs["items"] if r["status"] == "SUCCEEDED"]
        assert len(succeeded) >= len(expected)


@pytest.mark.xdist_group("default-tick-stack")
def test_a_seconds_cron_fires_on_time_between_ticks_of_the_default_one_minute_tick(tmp_path: Path) -> None:
    """The stack as ``make run`` starts it (one-minute tick, 120 s look-ahead): each occurrence of a
    10-second cron is dispatched by whoever wrote its trigger (the create, then each dispatch), not by
    the next tick, which may come up to a minute after it was due."""
    with (
        run_local_stack(tmp_path, tick_seconds=None, lookahead_seconds=None) as stack,
        Receiver() as receiver,
    ):
        api = Api(stack.base_url, stack.state_dir)
        status, job = api.call(
            "POST",
            "/v1/jobs",
            {"schedule": {"cron": "*/10 * * * * *"}, "target": {"type": "http", "url": receiver.url + "/s"}},
        )
        assert status == 201, job
        deliveries = receiver.wait_for("/s", 5, timeout=65)
        assert len(deliveries) >= 5, f"only {len(deliveries)} of the first five occurrences arrived in 65 s"
        for delivery in deliveries[:5]:
            slot = parse_iso(delivery.headers["Punctual-Scheduled-For"]).timestamp()
            lateness = delivery.received_at - slot
            assert lateness >= 0, (
                f"the occurrence of {iso(parse_iso(delivery.headers['Punctual-Scheduled-For']))} fired early"
            )
            slot_text = delivery.headers["Punctual-Scheduled-For"]
            assert lateness < 1.0, (
                f"the occurrence of {slot_text} arrived {lateness:.1f} s late: it waited for a tick"
            )

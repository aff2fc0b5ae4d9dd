"""End to end through the local stack: a job whose webhook answers 404 ends FAILED, its own
dead-letter queue receives the failed delivery, and the deployment's DLQ stays empty."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from tests.e2e.conftest import Api, emulator_client, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def received(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1, MessageAttributeNames=["All"]
    )
    found: list[dict[str, Any]] = response.get("Messages", [])
    return found


def test_a_failed_run_goes_to_the_jobs_dead_letter_queue_and_not_the_deployments(local_stack: Api) -> None:
    sqs = emulator_client(local_stack, "sqs")
    queue_url = sqs.create_queue(QueueName=f"report-failures-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    with Receiver(lambda _path, _n: (404, b"no such hook")) as missing:
        due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        status, job = local_stack.call(
            "POST",
            "/v1/jobs",
            {
                "name": f"gone-{uuid.uuid4().hex[:6]}",
                "schedule": {"at": iso(due)},
                "target": {"type": "http", "url": missing.url + "/gone"},
                "payload": {"report": "sales"},
                "dead_letter": {"type": "sqs", "queue_url": queue_url},
            },
        )
        assert status == 201, job
        assert job["dead_letter"] == {"type": "sqs", "queue_url": queue_url}

        def failed() -> Any:
            _, page = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs")
            return [run for run in page["items"] if run["status"] == "FAILED"]

        (run,) = wait_until(failed, 30)
    assert run["error"] == "HTTP 404"
    letters = wait_until(lambda: received(sqs, queue_url), 15)
    assert len(letters) == 1, letters
    body = json.loads(letters[0]["Body"])
    assert body["job_id"] == job["job_id"] and body["run_id"] == run["run_id"]
    assert (
        body["status_code"] == 404 and body["error"] == "HTTP 404" and body["payload"] == {"report": "sales"}
    )
    attributes = letters[0]["MessageAttributes"]
    assert attributes["Punctual-Alert"]["StringValue"] == "dead_letter"
    _, job_view = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
    assert job_view["status"] == "FAILED"
    # The deployment's DLQ holds nothing of this run (other tests of this stack put messages there).
    (dlq_url,) = [url for url in sqs.list_queues()["QueueUrls"] if url.endswith("-dlq")]
    peeked = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert not [m for m in peeked.get("Messages", []) if run["run_id"] in m["Body"]]

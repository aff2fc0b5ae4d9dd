"""End to end through the local stack's HTTP API: a job whose target lives in another region.

The stack's deployment is us-east-1; the queue and the topic are created in eu-west-1 on the stack's
own emulator (which keeps each region apart, as AWS does), and the runs must arrive there.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual_functions.core.model import iso
from tests.e2e.conftest import Api, emulator_client, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

OTHER = "eu-west-1"
ACCOUNT = "123456789012"  # the emulator's account for the local credentials


def messages(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    response = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    found: list[dict[str, Any]] = response.get("Messages", [])
    return found


def test_runs_reach_a_queue_and_a_topic_in_another_region(local_stack: Api) -> None:
    # Given a queue, and a topic with a subscribed queue, in eu-west-1 on the stack's emulator
    sqs = emulator_client(local_stack, "sqs", OTHER)
    sns = emulator_client(local_stack, "sns", OTHER)
    suffix = uuid.uuid4().hex[:10]
    queue_url = sqs.create_queue(QueueName=f"reports-{suffix}")["QueueUrl"]
    subscriber_url = sqs.create_queue(QueueName=f"subscriber-{suffix}")["QueueUrl"]
    subscriber_arn = sqs.get_queue_attributes(QueueUrl=subscriber_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    topic_arn = sns.create_topic(Name=f"alerts-{suffix}")["TopicArn"]
    assert topic_arn.startswith(f"arn:aws:sns:{OTHER}:")
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=subscriber_arn)
    targets = {
        # The emulator's own queue URL names no region; the queue's AWS URL does.
        "sqs": {"type": "sqs", "queue_url": f"https://sqs.{OTHER}.amazonaws.com/{ACCOUNT}/reports-{suffix}"},
        "sns": {"type": "sns", "topic_arn": topic_arn},
    }

    # When a job for each fires in a few seconds
    due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    jobs = {}
    for kind, target in targets.items():
        status, job = local_stack.call(
            "POST", "/v1/jobs", {"schedule": {"at": iso(due)}, "target": target, "payload": {"kind": kind}}
        )
        assert status == 201, job
        jobs[kind] = job["job_id"]

    # Then each run succeeds
    def finished() -> dict[str, Any] | None:
        ended: dict[str, Any] = {}
        for kind, job_id in jobs.items():
            status, runs = local_stack.call("GET", f"/v1/jobs/{job_id}/runs")
            assert status == 200, runs
            ended.update((kind, run) for run in runs["items"] if run["status"] in ("SUCCEEDED", "FAILED"))
        return ended if len(ended) == len(jobs) else None

    runs = wait_until(finished, timeout=30)
    assert runs is not None, "the runs did not finish"
    statuses = {kind: run["status"] for kind, run in runs.items()}
    assert statuses == {"sqs": "SUCCEEDED", "sns": "SUCCEEDED"}, runs

    # And the messages are in eu-west-1's queues
    (sent,) = wait_until(lambda: messages(sqs, queue_url), timeout=10)
    assert json.loads(sent["Body"]) == {"kind": "sqs"}
    (published,) = wait_until(lambda: messages(sqs, subscriber_url), timeout=10)
    assert json.loads(json.loads(published["Body"])["Message"]) == {"kind": "sns"}

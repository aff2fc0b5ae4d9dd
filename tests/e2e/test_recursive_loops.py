"""End to end: the worker's own chains through its own queue, under Lambda's recursive-loop
detection as the local stack imitates it (``punctual/local/recursion.py``).

A buffered backfill of 100 occurrences runs each occurrence after the one before it, and 60 runs due at
one second behind ``max_concurrent: 2`` hand their two slots on run by run: each link is a message the
worker's invocation sends to the queue that invokes it. With the worker's setting (``Allow``, as the
deployment sets it) every run happens once. With Lambda's default (``Terminate``), a stack of its own
shows what a deployment without the setting would do: the backfill stops at its 16th invocation and
its next message goes to the dead-letter queue. (Runs behind a limit are not shown there: a waiting
run's own message, which comes back now and then, may take a handed slot before the hand-over's
message does, and start a fresh chain, so where such a chain stops depends on timing. The event
source's count itself: tests/integration/test_local_event_source.py.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from punctual.local.env import LOCAL_CREDENTIALS
from punctual.local.recursion import MAX_CHAIN_INVOCATIONS
from punctual.local.role import RECURSIVE_LOOP_ENV
from punctual.testing.receiver import Receiver
from punctual.testing.stack import local_stack as run_local_stack
from punctual_functions.core.model import iso
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e]

OCCURRENCES = 100
LIMITED_RUNS = 60
MAX_CONCURRENT = 2
STOPPED = "recursive loop detected by Lambda"


def backfill(api: Api, receiver: Receiver, path: str) -> tuple[str, list[str]]:
    """A job every minute, and a backfill of its last ``OCCURRENCES`` occurrences; the job's id and
    the occurrences' times."""
    status, job = api.call(
        "POST",
        "/v1/jobs",
        {"schedule": {"cron": "* * * * *"}, "target": {"type": "http", "url": receiver.url + path}},
    )
    assert status == 201, job
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    start = end - timedelta(minutes=OCCURRENCES - 1)
    status, answer = api.call(
        "POST", f"/v1/jobs/{job['job_id']}/backfill", {"from": iso(start), "to": iso(end)}
    )
    assert status == 202 and answer["count"] == OCCURRENCES and answer["overlap"] == "buffer_all", answer
    return job["job_id"], list(answer["occurrences"])


def backfilled(receiver: Receiver, occurrences: list[str]) -> list[str]:
    """The deliveries of the backfill, in order: the job's own schedule goes on meanwhile, and its
    runs (due after the backfill's range, each minute) reach the same receiver."""
    last = max(occurrences)
    times = [d.headers["Punctual-Scheduled-For"] for d in receiver.deliveries]
    return [time for time in times if time <= last]


def limited_runs(api: Api, receiver: Receiver, path: str) -> str:
    """``LIMITED_RUNS`` one-off jobs due at one second, calling one receiver under ``max_concurrent:
    2``; the limit's name."""
    name = f"chain-{time.time_ns()}"
    status, limit = api.call(
        "POST", "/v1/limits", {"name": name, "match": receiver.url + path, "max_concurrent": MAX_CONCURRENT}
    )
    assert status == 201, limit
    due = (datetime.now(UTC) + timedelta(seconds=8)).replace(microsecond=0)
    jobs = [
        {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": f"{receiver.url}{path}/{n}"}}
        for n in range(LIMITED_RUNS)
    ]
    status, answer = api.call("POST", "/v1/jobs/batch", {"jobs": jobs})
    assert status == 200 and all("job" in item for item in answer["items"]), answer
    return name


@pytest.mark.xdist_group("local-stack")
def test_a_buffered_backfill_of_100_occurrences_runs_each_once_in_order(local_stack: Api) -> None:
    with Receiver() as receiver:
        job_id, occurrences = backfill(local_stack, receiver, "/backfill-chain")
        delivered = wait_until(
            lambda: len(backfilled(receiver, occurrences)) >= OCCURRENCES, timeout=120, interval=0.5
        )
        assert delivered, f"{len(receiver.deliveries)} of {OCCURRENCES} occurrences ran"
        time.sleep(2)  # a duplicate would come within seconds
        sent = backfilled(receiver, occurrences)
        assert sent == occurrences, "each occurrence once, oldest first"
    local_stack.call("DELETE", f"/v1/jobs/{job_id}")


@pytest.mark.xdist_group("local-stack")
def test_60_runs_behind_max_concurrent_2_each_run_once(local_stack: Api) -> None:
    with Receiver() as receiver:
        name = limited_runs(local_stack, receiver, "/limited-chain")
        delivered = wait_until(lambda: len(receiver.deliveries) >= LIMITED_RUNS, timeout=120, interval=0.5)
        assert delivered, f"{len(receiver.deliveries)} of {LIMITED_RUNS} runs"
        time.sleep(2)
        paths = sorted(d.path for d in receiver.deliveries)
        assert paths == sorted(f"/limited-chain/{n}" for n in range(LIMITED_RUNS)), "each run once"
    status, limit = local_stack.call("GET", f"/v1/limits/{name}")
    assert status == 200 and (limit["in_use"], limit["waiting_count"]) == (0, 0), limit


# ------------------------------------------------------------------- Lambda's default, for contrast


class TerminatingStack:
    """A local stack whose worker keeps Lambda's default, ``RecursiveLoop: Terminate``."""

    def __init__(self, api: Api, resources: dict[str, Any]) -> None:
        self.api = api
        self.resources = resources
        self.sqs: Any = boto3.session.Session(
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=LOCAL_CREDENTIALS["AWS_SESSION_TOKEN"],
            region_name=resources["region"],
        ).client("sqs", endpoint_url=resources["aws_endpoint"])

    def stopped(self) -> list[dict[str, Any]]:
        """The messages the detection moved to the DLQ so far (received, then visible again at once)."""
        found: list[dict[str, Any]] = []
        answer = self.sqs.receive_message(
            QueueUrl=self.resources["dlq_url"],
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,
        )
        for message in answer.get("Messages") or []:
            reason = message.get("MessageAttributes", {}).get("reason", {}).get("StringValue")
            if reason == STOPPED:
                found.append(json.loads(message["Body"]))
        return found


@pytest.fixture(scope="module")
def terminating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TerminatingStack]:
    workdir: Path = tmp_path_factory.mktemp("terminating-stack")
    with run_local_stack(workdir, workers=1, env={RECURSIVE_LOOP_ENV: "Terminate"}) as running:
        resources = json.loads((running.state_dir / "stack.json").read_text())
        yield TerminatingStack(Api(running.base_url, running.state_dir), resources)


@pytest.mark.xdist_group("terminating-stack")
def test_without_the_setting_a_backfill_stops_at_its_16th_invocation_and_goes_to_the_dlq(
    terminating: TerminatingStack,
) -> None:
    with Receiver() as receiver:
        job_id, occurrences = backfill(terminating.api, receiver, "/stopped-backfill")
        stopped = wait_until(terminating.stopped, timeout=60, interval=0.5)
        assert stopped, f"no message stopped; {len(receiver.deliveries)} occurrences ran"
        sent = backfilled(receiver, occurrences)
        assert sent == occurrences[:MAX_CHAIN_INVOCATIONS], "the chain's first 16 invocations ran, no more"
    # The stalled backfill would go on later in fresh chains (the sweep dispatches its next run again).
    terminating.api.call("DELETE", f"/v1/jobs/{job_id}")

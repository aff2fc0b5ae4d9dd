"""End to end: ``punctual dlq list | show | redrive`` as an operator runs them, against a real local
stack of its own (so its DLQ holds only what these tests put there).

Each test creates a real job through the API, puts a message for one of its runs in the DLQ through
the stack's emulator as SQS's redrive does (the body unchanged), and runs the CLI as a subprocess with
the stack's state directory. A redrive must really reach a worker: an open run then ends, an ended
one is left as it was (a no-op duplicate), and the DLQ is empty.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from punctual.local.env import LOCAL_CREDENTIALS
from punctual.testing.receiver import Receiver
from punctual.testing.stack import local_stack
from punctual_functions.core.model import Run, RunKind, RunStatus, from_ms, iso, run_id_for, to_ms
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.store import Store
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dlq-stack")]

PUNCTUAL = str(Path(sys.executable).parent / "punctual")  # .venv/bin/punctual
REDRIVE = "received 50 times without an outcome (the queue's redrive)"


@dataclass
class Stack:
    """The running stack: its API, and its emulator's queues and table as ``stack.json`` names them."""

    api: Api
    state_dir: Path
    resources: dict[str, Any]
    env: dict[str, str]

    def client(self, service: str) -> Any:
        return boto3.session.Session(
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=LOCAL_CREDENTIALS["AWS_SESSION_TOKEN"],
            region_name=self.resources["region"],
        ).client(service, endpoint_url=self.resources["aws_endpoint"])  # type: ignore[call-overload]

    @property
    def store(self) -> Store:
        return Store(self.client("dynamodb"), self.resources["table_name"], run_retention=timedelta(days=30))

    def dead_letter(self, body: str) -> str:
        """Put ``body`` in the DLQ as SQS's redrive moves a message: unchanged, no attribute of ours."""
        sent = self.client("sqs").send_message(QueueUrl=self.resources["dlq_url"], MessageBody=body)
        return str(sent["MessageId"])

    def depth(self, queue: str) -> int:
        """Messages in a queue: visible, in flight and delayed."""
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        attributes = self.client("sqs").get_queue_attributes(
            QueueUrl=self.resources[queue], AttributeNames=names
        )["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in names)

    def punctual(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PUNCTUAL, *args, "--state-dir", str(self.state_dir)],
            check=False,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def ok(self, *args: str) -> str:
        result = self.punctual(*args)
        assert result.returncode == 0, (
            f"punctual {' '.join(args)} → {result.returncode}\n{result.stdout}{result.stderr}"
        )
        return result.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("dlq-stack")
    with local_stack(workdir, workers=1) as running:
        resources = json.loads((running.state_dir / "stack.json").read_text())
        # The operator's shell: the CLI configured for the local stack (no config file, no endpoint).
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("PUNCTUAL_") and not key.startswith("AWS_")
        }
        env["PUNCTUAL_CONFIG"] = str(workdir / "no-config.json")
        yield Stack(Api(running.base_url, running.state_dir), running.state_dir, resources, env)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@dataclass
class DeadRun:
    job_id: str
    run_id: str
    message_id: str
    body: str
    path: str  # where its job delivers


def create_job(stack: Stack, receiver: Receiver, **schedule: str) -> tuple[str, str]:
    path = f"/dlq-{uuid.uuid4().hex[:8]}"
    status, job = stack.api.call(
        "POST",
        "/v1/jobs",
        {
            "name": path.strip("/"),
            "schedule": schedule,
            "target": {"type": "http", "url": receiver.url + path},
            "retry": {"max_attempts": 1},
        },
    )
    assert status == 201, job
    return str(job["job_id"]), path


@pytest.fixture
def open_run(stack: Stack, receiver: Receiver) -> Iterator[DeadRun]:
    """A job's run the dispatcher wrote QUEUED, whose message SQS's redrive moved to the DLQ."""
    job_id, path = create_job(stack, receiver, cron="0 0 1 1 *")  # no occurrence of its own for now
    job = stack.store.get_job(job_id)
    assert job is not None
    now = from_ms(to_ms(datetime.now(UTC)))
    run = Run(
        job_id=job_id,
        run_id=run_id_for(job_id, now, RunKind.MANUAL),
        owner=job.owner,
        scheduled_for=now,
        status=RunStatus.QUEUED,
        kind=RunKind.MANUAL,
        queued_at=now,
        next_attempt_at=now,
        job_version=job.version,
    )
    assert stack.store.put_run(run)
    body = WorkMessage(job_id, run.run_id, queued=run).to_json()
    yield DeadRun(job_id, run.run_id, stack.dead_letter(body), body, path)
    _take_out(stack, body)


@pytest.fixture
def ended_run(stack: Stack, receiver: Receiver) -> Iterator[DeadRun]:
    """A one-off job that fired and SUCCEEDED, a copy of whose message is in the DLQ."""
    at = iso(datetime.now(UTC) + timedelta(seconds=2))
    job_id, path = create_job(stack, receiver, at=at)
    receiver.wait_for(path, 1, timeout=30)
    runs = wait_until(lambda: _runs(stack, job_id, "SUCCEEDED"), timeout=30)
    assert runs, "the one-off never succeeded"
    stored = stack.store.get_run(job_id, runs[0]["run_id"])
    assert stored is not None
    queued = replace(
        stored, status=RunStatus.QUEUED, attempt=0, attempts=(), started_at=None, finished_at=None
    )
    body = WorkMessage(job_id, stored.run_id, queued=queued).to_json()
    yield DeadRun(job_id, stored.run_id, stack.dead_letter(body), body, path)
    _take_out(stack, body)


def _runs(stack: Stack, job_id: str, status: str) -> list[dict[str, Any]]:
    code, page = stack.api.call("GET", f"/v1/jobs/{job_id}/runs")
    assert code == 200, page
    return [run for run in page["items"] if run["status"] == status]


def _take_out(stack: Stack, body: str) -> None:
    """Leave the DLQ as the test found it: delete a message of this body still there."""
    sqs = stack.client("sqs")
    held = []
    while batch := sqs.receive_message(
        QueueUrl=stack.resources["dlq_url"], MaxNumberOfMessages=10, VisibilityTimeout=10
    ).get("Messages", []):
        held += batch
    for message in held:
        if message["Body"] == body:
            sqs.delete_message(QueueUrl=stack.resources["dlq_url"], ReceiptHandle=message["ReceiptHandle"])
        else:
            sqs.change_message_visibility(
                QueueUrl=stack.resources["dlq_url"],
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )


# ------------------------------------------------------------------------------------------ list


def test_list_shows_the_message_why_it_is_there_and_its_run(stack: Stack, open_run: DeadRun) -> None:
    items = json.loads(stack.ok("dlq", "list", "--json"))["items"]
    assert [item["message_id"] for item in items] == [open_run.message_id]
    item = items[0]
    assert (item["job_id"], item["run_id"]) == (open_run.job_id, open_run.run_id)
    assert (item["why"], item["run"]["status"], item["receive_count"]) == (REDRIVE, "QUEUED", 1)
    assert item["job"]["job_id"] == open_run.job_id and item["job"]["owner"] == "local"

    # For people: a header and one line, and where it read it on stderr
    result = stack.punctual("dlq", "list")
    assert result.returncode == 0, result.stderr
    header, line = result.stdout.splitlines()
    assert re.split(r"\s{2,}", header)[:3] == ["MESSAGE ID", "JOB ID", "RUN ID"]
    columns = re.split(r"\s{2,}", line)
    assert columns[:3] == [open_run.message_id, open_run.job_id, open_run.run_id]
    assert columns[-3:] == [REDRIVE, "QUEUED", "-"]
    assert result.stderr == f"1 message in {stack.resources['dlq_url']} ({stack.state_dir / 'stack.json'})\n"
    # Listing took nothing: the message is still there, for the next look
    assert stack.depth("dlq_url") == 1


# ------------------------------------------------------------------------------------------ show


def test_show_gives_the_message_in_full_and_what_a_redrive_would_do(
    stack: Stack, open_run: DeadRun, ended_run: DeadRun
) -> None:
    shown = stack.ok("dlq", "show", open_run.message_id)
    assert re.search(rf"^message id\s+{open_run.message_id}$", shown, re.MULTILINE)
    assert re.search(rf"^why\s+{re.escape(REDRIVE)}$", shown, re.MULTILINE)
    assert re.search(r"^job\s+dlq-[0-9a-f]{8} \(owner local, ACTIVE\)$", shown, re.MULTILINE)
    assert re.search(r"^run\s+QUEUED, 0 attempts$", shown, re.MULTILINE)
    assert re.search(
        r"^redrive\s+a worker picks the run up \(QUEUED\) and runs its attempt$", shown, re.MULTILINE
    )
    body = shown[shown.index("body:\n") + len("body:\n") : shown.index("attributes:\n")]
    assert json.loads(body) == json.loads(open_run.body)

    ended = json.loads(stack.ok("dlq", "show", ended_run.message_id, "--json"))
    assert ended["run"]["status"] == "SUCCEEDED" and ended["run"]["attempt"] == 1
    assert ended["redrive"] == "no-op duplicate: the run has ended (SUCCEEDED)"

    missing = stack.punctual("dlq", "show", "no-such-message")
    assert missing.returncode == 3 and missing.stderr.startswith("error: message_id: message no-such-message")
    assert stack.depth("dlq_url") == 2


# --------------------------------------------------------------------------------------- redrive


def test_redrive_makes_a_worker_run_an_open_run_and_drop_an_ended_ones_duplicate(
    stack: Stack, receiver: Receiver, open_run: DeadRun, ended_run: DeadRun
) -> None:
    before = len(receiver.for_path(ended_run.path))
    dry = stack.punctual("dlq", "redrive", open_run.message_id, "--dry-run")
    assert dry.returncode == 0 and dry.stderr.startswith("would move 1 message")
    assert stack.depth("dlq_url") == 2

    result = stack.punctual("dlq", "redrive", open_run.message_id, ended_run.message_id)

    assert result.returncode == 0, result.stderr
    assert result.stderr == f"moved 2 messages to the work queue {stack.resources['queue_url']}\n"
    moved = {re.split(r"\s{2,}", line)[0] for line in result.stdout.splitlines()[1:]}
    assert moved == {open_run.message_id, ended_run.message_id}
    # The open run: a worker picked it up, called its target and ended it
    assert receiver.wait_for(open_run.path, 1, timeout=30), "the redriven run was never delivered"
    succeeded = wait_until(lambda: _runs(stack, open_run.job_id, "SUCCEEDED"), timeout=30)
    assert [run["run_id"] for run in succeeded] == [open_run.run_id]
    # The ended run's duplicate: a worker took it and did nothing
    assert wait_until(lambda: stack.depth("queue_url") == 0, timeout=30), "the work queue never emptied"
    assert len(receiver.for_path(ended_run.path)) == before == 1
    (again,) = _runs(stack, ended_run.job_id, "SUCCEEDED")
    assert (again["run_id"], again["attempt"]) == (ended_run.run_id, 1)
    # and the DLQ is empty
    assert stack.depth("dlq_url") == 0
    assert json.loads(stack.ok("dlq", "list", "--json"))["items"] == []

"""``punctual dlq`` on moto in-process: where the DLQ is (options, a stack's outputs, the local stack's
state file), why each message is there, the run it stands for, and redriving it to the work queue."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

import punctual.client
import punctual.deadletters
from punctual.cli import main
from punctual.deadletters import Letter, redrive_effect
from punctual.local.env import local_settings
from punctual.local.provision import provision
from punctual.local.supervisor import LocalStack
from punctual_functions.core import aws
from punctual_functions.core.model import Job, JobStatus, Run, RunStatus, iso, new_job_id, run_id_for, to_ms
from punctual_functions.core.queue import WorkMessage, WorkQueue
from punctual_functions.core.schedule import parse_schedule
from punctual_functions.core.settings import Settings
from punctual_functions.core.store import Store

NOW = datetime.now(UTC).replace(microsecond=0)
REDRIVE = "received 50 times without an outcome (the queue's redrive)"


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No config file and no endpoint from the developer's shell: the CLI is configured for the
    local stack."""
    path = tmp_path / "punctual" / "config.json"
    monkeypatch.setattr(punctual.client, "CONFIG_PATH", path)
    for key in ("PUNCTUAL_ENDPOINT", "PUNCTUAL_TOKEN", "PUNCTUAL_API_KEY", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(punctual.deadletters, "PEEK_WAIT_SECONDS", 0)  # moto answers at once
    return path


@dataclass
class Deployment:
    """A provisioned table and queues on moto, with the job and runs the messages stand for."""

    settings: Settings
    store: Store
    queue: WorkQueue
    job: Job

    @property
    def sqs(self) -> Any:
        return self.queue.client

    @property
    def options(self) -> list[str]:
        return [
            "--dlq-url",
            self.settings.dlq_url,
            "--queue-url",
            self.settings.queue_url,
            "--table",
            self.settings.table_name,
        ]

    def run(self, minutes: int, status: RunStatus = RunStatus.QUEUED, **changes: Any) -> Run:
        at = NOW - timedelta(minutes=minutes)
        run = Run(
            job_id=self.job.job_id,
            run_id=run_id_for(self.job.job_id, at),
            owner=self.job.owner,
            scheduled_for=at,
            status=status,
            queued_at=at,
            next_attempt_at=at,
            job_version=self.job.version,
            **changes,
        )
        assert self.store.put_run(run)
        return run

    def dead_letter(self, body: str, reason: str | None = None) -> str:
        """Put a message in the DLQ as SQS's redrive would (body unchanged), or as the worker does
        (``send_to_dlq``, with its reason); its message id."""
        if reason is not None:
            self.queue.send_to_dlq(body, reason)
            messages = self.sqs.receive_message(QueueUrl=self.settings.dlq_url, MaxNumberOfMessages=10)
            ours = [m for m in messages["Messages"] if m["Body"] == body]
            self.sqs.change_message_visibility_batch(
                QueueUrl=self.settings.dlq_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                    for i, m in enumerate(messages["Messages"])
                ],
            )
            return str(ours[0]["MessageId"])
        return str(self.sqs.send_message(QueueUrl=self.settings.dlq_url, MessageBody=body)["MessageId"])

    def visible(self, queue_url: str) -> list[dict[str, Any]]:
        """Every visible message of a queue (received, then made visible again)."""
        found: dict[str, Any] = {}
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30
            ).get("Messages", [])
            if not batch:
                break
            found.update((m["MessageId"], m) for m in batch)
        for message in found.values():
            self.sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return list(found.values())


@pytest.fixture
def deployment(moto_env: None, config_file: Path) -> Iterator[Deployment]:
    settings = provision(Settings(table_name="punctual-dlq-test"), prefix="punctual-dlq-test")
    store = Store(aws.client("dynamodb", settings), settings.table_name, run_retention=timedelta(days=30))
    job = Job(
        job_id=new_job_id(),
        owner="arn:aws:iam::123456789012:role/reports",
        schedule=parse_schedule(cron="*/10 * * * *", now=NOW),
        target={"type": "http", "url": "https://example.com/hook", "method": "POST"},
        created_at=NOW - timedelta(hours=1),
        updated_at=NOW - timedelta(hours=1),
        name="nightly-report",
    )
    store.create_job(job, None)
    yield Deployment(
        settings, store, WorkQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url), job
    )


def body(run: Run, **extra: Any) -> str:
    """A dispatched occurrence's work message, as the dispatcher sends it."""
    message = WorkMessage(run.job_id, run.run_id, queued=replace(run, status=RunStatus.QUEUED))
    return json.dumps({**json.loads(message.to_json()), **extra}, separators=(",", ":"))


def dlq(*args: str) -> Result:
    return CliRunner().invoke(main, ["dlq", *args])


# ------------------------------------------------------------------------------------------ list


def test_list_says_why_each_message_is_there_and_what_its_run_is_now(deployment: Deployment) -> None:
    # Given the DLQ holding a message of each kind
    open_run = deployment.run(30)
    failed = deployment.run(20, RunStatus.FAILED, attempt=3, error="HTTP 500 from the target")
    gone = replace(open_run, run_id=run_id_for(deployment.job.job_id, NOW - timedelta(days=40)))
    redriven = deployment.dead_letter(body(open_run))
    by_worker = deployment.dead_letter(body(failed), reason="HTTP 500 from the target")
    poison = deployment.dead_letter("{not json")
    expired = deployment.dead_letter(json.dumps({"job_id": gone.job_id, "run_id": gone.run_id}))

    # When an operator lists it
    result = dlq("list", *deployment.options, "--json")

    # Then each message says why it is there, with its run as the table has it now
    assert result.exit_code == 0, result.output
    items = {item["message_id"]: item for item in json.loads(result.stdout)["items"]}
    assert set(items) == {redriven, by_worker, poison, expired}
    assert (items[redriven]["why"], items[redriven]["why_kind"]) == (REDRIVE, "redrive")
    assert items[redriven]["run"]["status"] == "QUEUED"
    assert (items[redriven]["job_id"], items[redriven]["run_id"]) == (open_run.job_id, open_run.run_id)
    assert items[redriven]["scheduled_for"] == iso(open_run.scheduled_for)
    assert items[redriven]["redrive"].startswith("a worker picks the run up (QUEUED) and runs its attempt")
    assert (items[by_worker]["why"], items[by_worker]["why_kind"]) == ("HTTP 500 from the target", "reason")
    assert items[by_worker]["run"] | {"status": "FAILED", "attempt": 3} == items[by_worker]["run"]
    assert items[by_worker]["run"]["error"] == "HTTP 500 from the target"
    assert items[by_worker]["redrive"] == "no-op duplicate: the run has ended (FAILED)"
    assert (items[poison]["why"], items[poison]["job_id"], items[poison]["run"]) == (
        "not a work message",
        None,
        None,
    )
    assert items[poison]["body"] == "{not json"
    assert items[expired]["run"] is None and items[expired]["why"] == REDRIVE
    assert items[expired]["redrive"].startswith("no-op: the run is not in the table")
    for item in items.values():
        assert item["receive_count"] >= 1 and item["sent_at"].endswith("Z")
    # and listing took nothing: every message is visible again at once
    assert {m["MessageId"] for m in deployment.visible(deployment.settings.dlq_url)} == set(items)


def test_list_for_people_is_one_line_a_message(deployment: Deployment) -> None:
    run = deployment.run(30, RunStatus.RUNNING, attempt=1, lease_until=NOW - timedelta(minutes=29))
    message_id = deployment.dead_letter(body(run))
    result = dlq("list", *deployment.options)
    assert result.exit_code == 0, result.output
    header, line = result.stdout.splitlines()
    assert re.split(r"\s{2,}", header) == [
        "MESSAGE ID",
        "JOB ID",
        "RUN ID",
        "SCHEDULED FOR",
        "SENT",
        "RECEIVES",
        "WHY",
        "RUN",
        "RUN ERROR",
    ]
    assert line.startswith(f"{message_id}  {run.job_id}  {run.run_id}  ")
    assert "  received 50 times without an outcome (the queue's redrive)  RUNNING  -" in line
    assert "RUNNING" in line and "ago)" in line
    assert result.stderr == f"1 message in {deployment.settings.dlq_url} (options)\n"


def test_a_listing_with_a_limit_shows_that_many_and_leaves_every_message_in_the_dlq(
    deployment: Deployment,
) -> None:
    for minutes in (10, 20, 30):
        deployment.dead_letter(body(deployment.run(minutes)))
    result = dlq("list", *deployment.options, "--json", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["items"]) == 2
    assert len(deployment.visible(deployment.settings.dlq_url)) == 3


def test_an_empty_dlq_is_just_the_header(deployment: Deployment) -> None:
    result = dlq("list", *deployment.options)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("MESSAGE ID") and len(result.stdout.splitlines()) == 1
    assert result.stderr.startswith("0 messages in ")


# ------------------------------------------------------------------------------------------ show


def test_show_gives_the_message_in_full_with_its_job_and_run(deployment: Deployment) -> None:
    run = deployment.run(30, RunStatus.RETRYING, attempt=2, error="timeout after 30s")
    message_id = deployment.dead_letter(body(run, exhausted=True), reason="worker: table unavailable")
    deployment.dead_letter(body(deployment.run(10)))

    result = dlq("show", message_id, *deployment.options)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    shown = dict(line.split("  ", 1) for line in lines[: lines.index("body:")])
    assert {key.strip(): value.strip() for key, value in shown.items()} | {"sent": "-"} == {
        "message id": message_id,
        "job id": run.job_id,
        "run id": run.run_id,
        "scheduled for": iso(run.scheduled_for),
        "sent": "-",
        "receives": "2",  # the test's own receive (to learn its id), then show's
        "why": "worker: table unavailable",
        "source queue": "-",
        "job": f"nightly-report (owner {deployment.job.owner}, ACTIVE)",
        "run": "RETRYING, 2 attempts",
        "run error": "timeout after 30s",
        "redrive": f"a worker runs the run's next attempt at {iso(run.scheduled_for)} (RETRYING)",
    }
    body_text = "\n".join(lines[lines.index("body:") + 1 : lines.index("attributes:")])
    assert json.loads(body_text) == json.loads(body(run, exhausted=True))
    attributes = json.loads(
        "\n".join(lines[lines.index("attributes:") + 1 : lines.index("message attributes:")])
    )
    assert "SentTimestamp" in attributes and "ApproximateReceiveCount" in attributes
    reason = json.loads("\n".join(lines[lines.index("message attributes:") + 1 :]))
    assert reason == {"reason": "worker: table unavailable"}


def test_show_as_json_says_a_redrive_of_an_ended_run_is_a_no_op(deployment: Deployment) -> None:
    run = deployment.run(30, RunStatus.SUCCEEDED, attempt=1)
    message_id = deployment.dead_letter(body(run))
    result = dlq("show", message_id, *deployment.options, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["job"] == {
        "job_id": deployment.job.job_id,
        "name": "nightly-report",
        "owner": deployment.job.owner,
        "status": "ACTIVE",
    }
    assert shown["run"]["status"] == "SUCCEEDED"
    assert shown["redrive"] == "no-op duplicate: the run has ended (SUCCEEDED)"
    assert shown["body"] == json.loads(body(run))


def test_show_of_a_message_not_in_the_dlq_exits_3(deployment: Deployment) -> None:
    deployment.dead_letter(body(deployment.run(10)))
    result = dlq("show", "no-such-message", *deployment.options)
    assert result.exit_code == 3
    assert result.stderr == (
        f"error: message_id: message no-such-message is not in the DLQ {deployment.settings.dlq_url}\n"
    )
    assert len(deployment.visible(deployment.settings.dlq_url)) == 1


# --------------------------------------------------------------------------------------- redrive


def test_redrive_sends_the_body_back_without_exhausted_and_deletes_it(deployment: Deployment) -> None:
    run = deployment.run(30)
    chosen = deployment.dead_letter(body(run, exhausted=True))
    other = deployment.dead_letter(body(deployment.run(20)))

    result = dlq("redrive", chosen, *deployment.options)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].startswith(f"{chosen}  {run.job_id}  {run.run_id}  QUEUED  ")
    assert result.stderr == f"moved 1 message to the work queue {deployment.settings.queue_url}\n"
    # The work queue has the body, as it was but for "exhausted", due at once
    sent = deployment.visible(deployment.settings.queue_url)
    assert [json.loads(m["Body"]) for m in sent] == [json.loads(body(run))]
    assert WorkMessage.from_json(sent[0]["Body"]) == WorkMessage.from_json(body(run))
    # and the DLQ only the other one, visible
    assert [m["MessageId"] for m in deployment.visible(deployment.settings.dlq_url)] == [other]


def test_redrive_dry_run_moves_nothing(deployment: Deployment) -> None:
    message_id = deployment.dead_letter(body(deployment.run(30)))
    result = dlq("redrive", "--all", "--dry-run", *deployment.options, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["dry_run"] is True
    assert [(item["message_id"], item["new_message_id"]) for item in answer["items"]] == [(message_id, None)]
    assert deployment.visible(deployment.settings.queue_url) == []
    assert len(deployment.visible(deployment.settings.dlq_url)) == 1


def test_redrive_all_moves_every_work_message_and_leaves_poison(deployment: Deployment) -> None:
    ended = deployment.run(30, RunStatus.FAILED, attempt=3, error="HTTP 500")
    open_run = deployment.run(20)
    moved = {deployment.dead_letter(body(ended), reason="HTTP 500"), deployment.dead_letter(body(open_run))}
    poison = deployment.dead_letter("not a work message at all")

    result = dlq("redrive", "--all", *deployment.options, "--json")

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert {item["message_id"] for item in answer["items"]} == moved
    assert all(item["new_message_id"] for item in answer["items"])
    assert answer["skipped"] == [poison]
    assert sorted(
        json.loads(m["Body"])["run_id"] for m in deployment.visible(deployment.settings.queue_url)
    ) == sorted([ended.run_id, open_run.run_id])
    assert [m["MessageId"] for m in deployment.visible(deployment.settings.dlq_url)] == [poison]


def test_redrive_refuses_what_it_cannot_do_and_moves_nothing(deployment: Deployment) -> None:
    work = deployment.dead_letter(body(deployment.run(30)))
    poison = deployment.dead_letter("{oops")
    for args, code, error in (
        ([work, "missing-id"], 3, "error: message_id: missing-id not in the DLQ"),
        ([work, poison], 1, f"error: message_id: {poison}: not a work message"),
        ([], 2, "Error: give message ids, or --all"),
        ([work, "--all"], 2, "Error: give message ids, or --all"),
    ):
        result = dlq("redrive", *args, *deployment.options)
        assert result.exit_code == code, (args, result.output)
        assert error in result.stderr, (args, result.stderr)
    assert deployment.visible(deployment.settings.queue_url) == []
    assert {m["MessageId"] for m in deployment.visible(deployment.settings.dlq_url)} == {work, poison}


# -------------------------------------------------------------------------------- what it predicts


def _letter(text: str) -> Letter:
    return Letter("m-1", "handle", text, {}, {})


def a_job(**changes: Any) -> Job:
    """A job of ``alice``'s, every ten minutes, as the table would hold it."""
    return Job(
        job_id="job_1",
        owner="alice",
        schedule=parse_schedule(cron="*/10 * * * *", now=NOW),
        target={"type": "http", "url": "https://example.com/hook"},
        created_at=NOW,
        updated_at=NOW,
        **changes,
    )


@pytest.mark.parametrize(
    ("job_changes", "run_changes", "expected"),
    [
        (
            {"status": JobStatus.CANCELLED},
            {},
            "a worker ends the run CANCELLED (its job is cancelled or gone)",
        ),
        ({"status": JobStatus.PAUSED}, {}, "a worker ends the run SKIPPED (job paused)"),
        ({"version": 2}, {}, "a worker ends the run SKIPPED (superseded by a change to the job)"),
        (
            {},
            {"status": RunStatus.RUNNING, "lease_until": NOW + timedelta(seconds=3)},
            f"a worker takes the attempt over if its lease (until {iso(NOW + timedelta(seconds=3))})"
            " runs out",
        ),
        (
            {},
            {"status": RunStatus.RUNNING, "lease_until": NOW - timedelta(seconds=3)},
            "a worker picks the run up (RUNNING) and runs its attempt",
        ),
        (
            {},
            {"status": RunStatus.CANCELLED},
            "no-op duplicate: the run has ended (CANCELLED)",
        ),
    ],
    # Fixed ids: an expected text holds the time, which differs between xdist workers' collections.
    ids=["job-cancelled", "job-paused", "job-changed", "lease-current", "lease-lapsed", "run-ended"],
)
def test_what_a_redrive_would_do_is_what_the_worker_decides(
    job_changes: dict[str, Any], run_changes: dict[str, Any], expected: str
) -> None:
    job = a_job(**job_changes)
    run = Run(
        **{
            "job_id": "job_1",
            "run_id": "r1",
            "owner": "alice",
            "scheduled_for": NOW,
            "status": RunStatus.QUEUED,
            "next_attempt_at": NOW,
            **run_changes,
        }
    )
    text = json.dumps({"job_id": "job_1", "run_id": "r1"})
    assert redrive_effect(_letter(text), run, replace(job), NOW) == expected


def test_a_run_not_yet_in_the_table_starts_from_the_messages_own_copy() -> None:
    run = Run(
        job_id="job_1",
        run_id="r1",
        owner="alice",
        scheduled_for=NOW,
        status=RunStatus.QUEUED,
        queued_at=NOW,
        next_attempt_at=NOW,
    )
    job = a_job()
    assert redrive_effect(_letter(body(run)), None, job, NOW) == (
        "a worker starts the run from the message (not in the table yet)"
    )
    assert redrive_effect(_letter("[1, 2]"), None, None, NOW).startswith("none: not a work message")


# ---------------------------------------------------------------------------- where the DLQ is


def test_the_resources_come_from_the_deployed_stacks_outputs(deployment: Deployment) -> None:
    message_id = deployment.dead_letter(body(deployment.run(30)))
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {
            "ApiUrl": {"Value": "https://abc.execute-api.us-east-1.amazonaws.com/"},
            "TableName": {"Value": deployment.settings.table_name},
            "WorkQueueUrl": {"Value": deployment.settings.queue_url},
            "DeadLetterQueueUrl": {"Value": deployment.settings.dlq_url},
        },
    }
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="punctual-prod", TemplateBody=json.dumps(template)
    )
    result = dlq("list", "--stack-name", "punctual-prod", "--region", "us-east-1")
    assert result.exit_code == 0, result.output
    assert message_id in result.stdout
    assert result.stderr.endswith("(stack punctual-prod)\n")
    # and a deployed endpoint configured: the one Punctual stack there, found as config from-stack does
    punctual.client.CONFIG_PATH.parent.mkdir(parents=True)
    punctual.client.CONFIG_PATH.write_text(
        json.dumps(
            {
                "endpoint": "https://abc.execute-api.us-east-1.amazonaws.com",
                "auth": "sigv4",
                "region": "us-east-1",
            }
        )
    )
    result = dlq("list", "--json")
    assert result.exit_code == 0, result.output
    assert [item["message_id"] for item in json.loads(result.stdout)["items"]] == [message_id]


def test_a_stack_without_the_outputs_exits_3(deployment: Deployment) -> None:
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"DeadLetterQueueUrl": {"Value": deployment.settings.dlq_url}},
    }
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="punctual-old", TemplateBody=json.dumps(template)
    )
    result = dlq("list", "--stack-name", "punctual-old", "--region", "us-east-1")
    assert result.exit_code == 3
    assert (
        result.stderr
        == "error: stack punctual-old has no output WorkQueueUrl (outputs: DeadLetterQueueUrl)\n"
    )


def test_for_the_local_stack_the_resources_come_from_its_state_file(
    deployment: Deployment, tmp_path: Path
) -> None:
    message_id = deployment.dead_letter(body(deployment.run(30)))
    state = tmp_path / "state"
    state.mkdir()
    (state / "stack.json").write_text(
        json.dumps(
            {
                "api_url": "http://127.0.0.1:8000",
                "aws_endpoint": None,  # moto in-process stands in for the emulator here
                "region": "us-east-1",
                "table_name": deployment.settings.table_name,
                "queue_url": deployment.settings.queue_url,
                "dlq_url": deployment.settings.dlq_url,
            }
        )
    )
    result = dlq("list", "--state-dir", str(state), "--json")
    assert result.exit_code == 0, result.output
    assert [item["message_id"] for item in json.loads(result.stdout)["items"]] == [message_id]


def test_without_the_local_stacks_state_it_says_where_it_looked(config_file: Path, tmp_path: Path) -> None:
    result = dlq("list", "--state-dir", str(tmp_path / "nowhere"))
    assert result.exit_code == 5
    assert result.stderr.startswith(f"error: no local stack state in {tmp_path / 'nowhere' / 'stack.json'}")
    assert len(result.stderr.splitlines()) == 1


def test_a_queue_that_does_not_exist_exits_3(deployment: Deployment) -> None:
    url = deployment.settings.dlq_url.replace("punctual-dlq-test-dlq", "nope")
    result = dlq("list", "--dlq-url", url, "--queue-url", deployment.settings.queue_url, "--table", "t")
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


def test_the_supervisor_writes_where_the_local_stacks_resources_are(tmp_path: Path) -> None:
    settings = local_settings("http://127.0.0.1:45678")
    stack = LocalStack(port=8123, state_dir=str(tmp_path), settings=settings)
    stack._write_state()
    assert json.loads((tmp_path / "stack.json").read_text()) == {
        "api_url": "http://127.0.0.1:8123",
        "aws_endpoint": "http://127.0.0.1:45678",
        "region": "us-east-1",
        "table_name": "punctual",
        "queue_url": "http://127.0.0.1:45678/123456789012/punctual-work",
        "dlq_url": "http://127.0.0.1:45678/123456789012/punctual-dlq",
    }
    assert json.loads((tmp_path / "roles.json").read_text()) == {}


def test_a_message_body_keeps_every_field_but_exhausted() -> None:
    letter = _letter(
        json.dumps({"job_id": "j", "run_id": "r", "exhausted": True, "scheduled_for": to_ms(NOW)})
    )
    assert json.loads(letter.redriven_body()) == {"job_id": "j", "run_id": "r", "scheduled_for": to_ms(NOW)}
    untouched = '{"job_id": "j", "run_id": "r"}'
    assert _letter(untouched).redriven_body() == untouched

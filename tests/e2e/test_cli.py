"""End to end: the ``punctual`` command line, run as a user runs it, against the real local stack."""

from __future__ import annotations

import itertools
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from punctual.local.supervisor import free_port, wait_for_port
from punctual.testing.receiver import Receiver
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

PUNCTUAL = [sys.executable, "-m", "punctual"]


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Cli:
    env: dict[str, str]

    def __call__(self, *args: str, timeout: float = 60) -> Result:
        process = subprocess.run(
            [sys.executable, "-m", "punctual", *args],
            check=False,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(process.returncode, process.stdout, process.stderr)

    def ok(self, *args: str) -> Result:
        result = self(*args)
        assert result.code == 0, f"punctual {' '.join(args)} → {result.code}\n{result.out}{result.err}"
        return result


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The developer's environment without anything that would point the CLI elsewhere."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PUNCTUAL_ENDPOINT", "PUNCTUAL_TOKEN", "PUNCTUAL_TOKENS", "PUNCTUAL_PORT")
    }
    env.update({"PUNCTUAL_CONFIG": str(tmp / "config.json"), "PYTHONUNBUFFERED": "1", **extra})
    return env


@pytest.fixture(scope="module")
def cli(local_stack: Api, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    tmp = tmp_path_factory.mktemp("cli")
    return Cli(clean_env(tmp, PUNCTUAL_ENDPOINT=local_stack.base_url))


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


def field(text: str, name: str) -> str:
    """The value of a ``name  value`` line of the CLI's object view."""
    match = re.search(rf"^{re.escape(name)}\s{{2,}}(.*)$", text, re.MULTILINE)
    assert match, f"no {name!r} line in:\n{text}"
    return match.group(1)


def rows(text: str) -> list[list[str]]:
    """The data rows of a CLI table (columns are separated by two or more spaces)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.startswith(("JOB ID", "RUN ID")))
    return [re.split(r"\s{2,}", line) for line in lines[header + 1 :] if not line.startswith("more:")]


def iso_at_offset(moment: datetime, hours: int) -> str:
    return moment.astimezone(timezone(timedelta(hours=hours))).replace(microsecond=0).isoformat()


def parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def one_error_line(result: Result) -> str:
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    return lines[0]


# ----------------------------------------------------------------------------- a job that fires


@dataclass
class Fired:
    job_id: str
    created: Result
    payload: dict[str, Any]


@pytest.fixture(scope="module")
def fired(cli: Cli, receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Fired:
    """A one-off due in 3 s with every option group, created first so it has fired when it is read."""
    payload = {"report": "sales", "n": 1}
    path = tmp_path_factory.mktemp("payload") / "payload.json"
    path.write_text(json.dumps(payload))
    created = cli.ok(
        "jobs", "create", "--name", f"cli-fired-{uuid.uuid4().hex[:8]}", "--at", "in 3s",
        "--url", receiver.url + "/fired", "--payload", f"@{path}", "--header", "X-Team: data",
        "--tag", "team=data", "--tag", "env=e2e", "--max-attempts", "2", "--backoff", "1",
        "--timeout", "5", "--signing-secret", "s3cret-s3cret-s3cret",
    )  # fmt: skip
    return Fired(field(created.out, "job id"), created, payload)


def test_create_prints_the_job_as_a_table(fired: Fired) -> None:
    out = fired.created.out
    assert re.fullmatch(r"job_[0-9a-f]+(_[0-9]{12}s[0-9]+)?", fired.job_id)
    assert field(out, "status") == "ACTIVE"
    assert field(out, "schedule").startswith("at 20")
    assert re.fullmatch(r"\d\d:\d\d:\d\d \(in [0-3]s\)", field(out, "next run"))
    assert field(out, "tags") == '{"team":"data","env":"e2e"}'
    assert fired.created.err == ""


def test_create_stores_every_option_group(cli: Cli, fired: Fired, receiver: Receiver) -> None:
    job = cli.ok("jobs", "get", fired.job_id, "--json").json
    assert job["payload"] == fired.payload
    assert job["target"]["headers"] == {"X-Team": "data"}
    assert job["target"]["url"] == receiver.url + "/fired"
    assert job["tags"] == {"team": "data", "env": "e2e"}
    assert job["retry"]["max_attempts"] == 2 and job["retry"]["backoff_seconds"] == 1.0
    assert job["timeout_seconds"] == 5
    assert job["has_signing_secret"] is True
    assert 0 < (parse(job["schedule"]["at"]) - parse(job["created_at"])).total_seconds() <= 3.5


def test_jitter_is_stored_and_shown(cli: Cli, receiver: Receiver) -> None:
    created = cli.ok(
        "jobs", "create", "--rate", "1 hour", "--url", receiver.url + "/j", "--jitter", "300", "--json"
    )
    job_id = created.json["job_id"]
    assert created.json["jitter_seconds"] == 300
    assert field(cli.ok("jobs", "get", job_id).out, "jitter") == "each run up to 300 s after its time"
    cli.ok("jobs", "cancel", job_id)
    refused = cli("jobs", "create", "--rate", "1 minute", "--url", receiver.url + "/j", "--jitter", "60")
    assert refused.code == 1 and "jitter_seconds" in one_error_line(refused)


def test_timeout_is_the_time_an_http_attempt_may_take(cli: Cli, receiver: Receiver) -> None:
    job = cli.ok(
        "jobs", "create", "--rate", "1 hour", "--url", receiver.url + "/slow", "--timeout", "60", "--json"
    )
    cli.ok("jobs", "cancel", job.json["job_id"])
    assert min(job.json["timeout_seconds"], job.json["target"].get("timeout_seconds", 900)) == 60


def test_create_at_an_iso_time_with_an_offset(cli: Cli, receiver: Receiver) -> None:
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    job = cli.ok("jobs", "create", "--at", iso_at_offset(due, 1), "--url", receiver.url + "/x", "--json").json
    assert parse(job["next_run_at"]) == due and job["upcoming"] == [job["next_run_at"]]
    cli.ok("jobs", "cancel", job["job_id"])


ZONES = {"Europe/Berlin": ZoneInfo("Europe/Berlin"), "cron(0 13 ? * MON-FRI *)": ZoneInfo("UTC")}


@pytest.mark.parametrize(
    ("flags", "spacing"),
    [
        (["--cron", "0 13 * * 1-5", "--timezone", "Europe/Berlin"], None),
        (["--cron", "*/10 * * * * *"], 10),
        (["--cron", "cron(0 13 ? * MON-FRI *)"], None),
        (["--rate", "5 minutes"], 300),
        (["--rate", "rate(1 hour)"], 3600),
    ],
)
def test_create_recurring_forms_show_the_next_five_fire_times(
    cli: Cli, receiver: Receiver, flags: list[str], spacing: int | None
) -> None:
    job = cli.ok("jobs", "create", *flags, "--url", receiver.url + "/recurring", "--json").json
    try:
        assert job["status"] == "ACTIVE"
        upcoming = [parse(moment) for moment in job["upcoming"]]
        assert len(upcoming) == 5 and upcoming == sorted(upcoming)
        if spacing:
            assert {(b - a).total_seconds() for a, b in itertools.pairwise(upcoming)} == {spacing}
        else:
            # Weekdays at 13:00, in Berlin or in UTC
            local = [m.astimezone(ZONES[flags[-1]]) for m in upcoming]
            assert all(m.weekday() < 5 and (m.hour, m.minute, m.second) == (13, 0, 0) for m in local), local
    finally:
        cli.ok("jobs", "cancel", job["job_id"])


def test_a_created_job_is_shown_as_a_table_and_reads_back_as_json(cli: Cli, receiver: Receiver) -> None:
    table = cli.ok("jobs", "create", "--rate", "30 minutes", "--url", receiver.url + "/t")
    job_id = field(table.out, "job id")
    assert "ACTIVE" in table.out and job_id in table.out
    assert field(table.out, "schedule") == "rate 30 minutes"
    assert field(table.out, "target") == f"http {receiver.url}/t"
    got = cli.ok("jobs", "get", job_id, "--json").json
    assert got["job_id"] == job_id and got["status"] == "ACTIVE"
    cli.ok("jobs", "cancel", job_id)


def test_the_same_idempotency_key_twice_returns_the_same_job(cli: Cli, receiver: Receiver) -> None:
    key = f"cli-{uuid.uuid4()}"
    argv = ["jobs", "create", "--cron", "0 3 * * *", "--url", receiver.url + "/i", "--idempotency-key", key]
    first = cli.ok(*argv, "--json").json
    second = cli.ok(*argv, "--json").json
    assert second["job_id"] == first["job_id"]
    cli.ok("jobs", "cancel", first["job_id"])


def test_retrying_a_relative_one_off_with_its_idempotency_key_returns_the_first_job(
    cli: Cli, receiver: Receiver
) -> None:
    key = f"cli-{uuid.uuid4()}"
    argv = [
        "jobs",
        "create",
        "--at",
        "in 5m",
        "--url",
        receiver.url + "/i",
        "--idempotency-key",
        key,
        "--json",
    ]
    first = cli.ok(*argv).json
    try:
        second = cli(*argv)
        assert second.code == 0, second.err
        assert second.json["job_id"] == first["job_id"]
    finally:
        cli.ok("jobs", "cancel", first["job_id"])


# ------------------------------------------------------------------------------------ list, get


def test_list_filters_by_status_and_name(cli: Cli, receiver: Receiver) -> None:
    name = f"cli-list-{uuid.uuid4().hex[:8]}"
    job = cli.ok(
        "jobs",
        "create",
        "--name",
        name,
        "--cron",
        "0 4 * * *",
        "--url",
        receiver.url + "/l",
        "--tag",
        f"cfn:resource={name}",
        "--json",
    )
    job_id = job.json["job_id"]
    named = rows(cli.ok("jobs", "list", "--name", name).out)
    assert [(row[0], row[1], row[2]) for row in named] == [(job_id, name, "ACTIVE")]
    tagged = cli.ok("jobs", "list", "--tag", f"cfn:resource={name}", "--json").json["items"]
    assert [item["job_id"] for item in tagged] == [job_id]
    assert named[0][3] == "cron 0 4 * * *"
    cli.ok("jobs", "pause", job_id)
    paused = cli.ok("jobs", "list", "--status", "PAUSED", "--limit", "100", "--json").json["items"]
    assert job_id in [item["job_id"] for item in paused]
    assert {item["status"] for item in paused} == {"PAUSED"}
    active = cli.ok("jobs", "list", "--status", "ACTIVE", "--name", name, "--json").json
    assert active == {"items": [], "next_cursor": None}
    cli.ok("jobs", "cancel", job_id)


def test_list_pages_with_a_cursor_hint_and_all_follows_every_page(cli: Cli, receiver: Receiver) -> None:
    created = [
        cli.ok("jobs", "create", "--cron", "0 5 * * *", "--url", receiver.url + "/p", "--json").json["job_id"]
        for _ in range(3)
    ]
    first = cli.ok("jobs", "list", "--limit", "2")
    page = rows(first.out)
    assert [row[0] for row in page] == created[::-1][:2]  # newest first
    hint = re.search(r"^more: --cursor (\S+)  \(or --all\)$", first.out, re.MULTILINE)
    assert hint, first.out
    second = rows(cli.ok("jobs", "list", "--limit", "2", "--cursor", hint.group(1)).out)
    assert second[0][0] == created[0] and len(second) == 2
    everything = cli.ok("jobs", "list", "--limit", "2", "--all", "--json").json
    assert everything["next_cursor"] is None
    ids = [item["job_id"] for item in everything["items"]]
    assert ids[:3] == created[::-1] and len(ids) == len(set(ids))
    in_big_pages = cli.ok("jobs", "list", "--limit", "100", "--all", "--json").json["items"]
    assert ids == [item["job_id"] for item in in_big_pages]
    assert "more:" not in cli.ok("jobs", "list", "--limit", "2", "--all").out
    for job_id in created:
        cli.ok("jobs", "cancel", job_id)


def test_get_shows_the_job_and_its_upcoming_fire_times(cli: Cli, receiver: Receiver) -> None:
    job_id = cli.ok("jobs", "create", "--cron", "*/15 * * * *", "--url", receiver.url + "/g", "--json").json[
        "job_id"
    ]
    out = cli.ok("jobs", "get", job_id).out
    assert field(out, "job id") == job_id
    assert field(out, "status") == "ACTIVE"
    assert len(field(out, "upcoming").split(", ")) == 5
    assert field(out, "last run") == "-"
    cli.ok("jobs", "cancel", job_id)


# --------------------------------------------------------------------- pause, resume, run, cancel


def test_a_job_pauses_resumes_runs_and_cancels_and_once_cancelled_refuses_both_with_exit_4(
    cli: Cli, receiver: Receiver
) -> None:
    job_id = cli.ok(
        "jobs", "create", "--cron", "0 6 * * *", "--url", receiver.url + "/manual", "--json"
    ).json["job_id"]
    paused = cli.ok("jobs", "pause", job_id).out
    assert field(paused, "status") == "PAUSED" and field(paused, "next run") == "-"
    resumed = cli.ok("jobs", "resume", job_id).out
    assert field(resumed, "status") == "ACTIVE" and field(resumed, "next run") != "-"
    run = cli.ok("jobs", "run", job_id).out
    assert field(run, "job id") == job_id and field(run, "kind") == "manual"
    assert field(run, "status") in ("QUEUED", "RUNNING", "SUCCEEDED")
    run_json = cli.ok("jobs", "run", job_id, "--json").json
    assert run_json["kind"] == "manual" and run_json["job_id"] == job_id
    cancelled = cli.ok("jobs", "cancel", job_id).out
    assert field(cancelled, "status") == "CANCELLED"
    # A cancelled job cannot come back: a conflict, exit 4, the API's reason in one line
    again = cli("jobs", "resume", job_id)
    assert again.code == 4
    assert one_error_line(again) == "error: status: a CANCELLED job cannot be resumed"
    assert cli("jobs", "run", job_id).code == 4


# ------------------------------------------------------------------------------------- history


def test_runs_show_the_fired_run_succeeded_with_its_lateness(
    cli: Cli, fired: Fired, receiver: Receiver
) -> None:
    deliveries = receiver.wait_for("/fired", 1, timeout=15)
    assert len(deliveries) == 1
    delivery = deliveries[0]
    assert delivery.json == fired.payload
    assert delivery.headers["X-Team"] == "data"
    assert delivery.headers["Punctual-Job-Id"] == fired.job_id
    assert "Punctual-Signature" in delivery.headers

    def succeeded() -> list[Any]:
        items = cli.ok("jobs", "runs", fired.job_id, "--json").json["items"]
        return [run for run in items if run["status"] == "SUCCEEDED"]

    assert wait_until(succeeded, timeout=10)
    table = rows(cli.ok("jobs", "runs", fired.job_id).out)
    assert len(table) == 1
    run_id, status, scheduled_for, lateness, attempts, error = table[0]
    assert status == "SUCCEEDED" and attempts == "1" and error == "-"
    assert re.fullmatch(r"\d+", lateness) and int(lateness) < 1000
    assert scheduled_for == delivery.headers["Punctual-Scheduled-For"]
    assert run_id == delivery.headers["Punctual-Run-Id"]

    def completed() -> str | None:
        out = cli.ok("jobs", "get", fired.job_id).out
        return out if field(out, "status") == "COMPLETED" else None

    got = wait_until(completed, timeout=5)
    assert got, "the one-off did not become COMPLETED"
    assert field(got, "last run") == f"SUCCEEDED {scheduled_for} lateness {lateness} ms"


def test_runs_get_lists_the_attempts(cli: Cli, fired: Fired, receiver: Receiver) -> None:
    receiver.wait_for("/fired", 1, timeout=15)
    run = wait_until(
        lambda: next(
            (
                r
                for r in cli.ok("jobs", "runs", fired.job_id, "--json").json["items"]
                if r["status"] == "SUCCEEDED"
            ),
            None,
        ),
        timeout=10,
    )
    out = cli.ok("runs", "get", fired.job_id, run["run_id"]).out
    assert field(out, "run id") == run["run_id"] and field(out, "status") == "SUCCEEDED"
    assert field(out, "lateness ms") == str(run["lateness_ms"])
    assert re.search(r"^  attempt 1: SUCCEEDED  \d+ ms  status 200$", out, re.MULTILINE), out
    as_json = cli.ok("runs", "get", fired.job_id, run["run_id"], "--json").json
    assert [a["attempt"] for a in as_json["attempts"]] == [1]
    assert as_json["attempts"][0]["outcome"] == "SUCCEEDED"


def test_runs_cancel_a_queued_run_then_again_is_a_conflict(cli: Cli, receiver: Receiver) -> None:
    # Due within the stack's 60 s look-ahead: the API enqueues it at once, so a QUEUED run exists.
    job_id = cli.ok("jobs", "create", "--at", "in 50s", "--url", receiver.url + "/never", "--json").json[
        "job_id"
    ]

    def queued() -> list[Any]:
        items = cli.ok("jobs", "runs", job_id, "--status", "QUEUED", "--json").json["items"]
        return list(items)

    runs = wait_until(queued, timeout=10)
    assert len(runs) == 1, runs
    run_id = runs[0]["run_id"]
    cancelled = cli.ok("runs", "cancel", job_id, run_id)
    assert field(cancelled.out, "status") == "CANCELLED"
    assert field(cancelled.out, "error") == "cancelled by request"
    again = cli("runs", "cancel", job_id, run_id)
    assert again.code == 4
    assert one_error_line(again) == "error: status: the run has already finished (CANCELLED)"
    assert cli.ok("runs", "get", job_id, run_id, "--json").json["status"] == "CANCELLED"
    cli("jobs", "cancel", job_id)


# ------------------------------------------------------------------------ stats, watch, config


def test_stats_show_jobs_runs_queue_dlq_and_dispatcher_lag_as_text_and_json(cli: Cli, fired: Fired) -> None:
    out = cli.ok("stats").out
    assert re.search(r"^jobs\s+([A-Z]+ \d+(, )?)+$", out, re.MULTILINE), out
    assert re.search(r"^runs\s+([A-Z]+ \d+(, )?)+$", out, re.MULTILINE), out
    assert re.search(r"^queue\s+\d+ queued, \d+ delayed, \d+ in flight$", out, re.MULTILINE), out
    assert re.search(r"^dlq\s+\d+$", out, re.MULTILINE), out
    assert re.search(r"^dispatcher lag\s+(\d+ s|-)$", out, re.MULTILINE), out
    data = cli.ok("stats", "--json").json
    assert {"jobs", "runs", "queue", "dispatcher_lag_seconds"} <= set(data)
    assert {"queued", "delayed", "in_flight", "dlq"} <= set(data["queue"])


def test_one_watch_shows_the_job_its_upcoming_and_recent_runs_as_text_and_json(
    cli: Cli, fired: Fired
) -> None:
    result = cli("jobs", "watch", fired.job_id, "--iterations", "1", timeout=20)
    assert result.code == 0, result.err
    assert result.out.startswith(fired.job_id)
    assert "upcoming" in result.out and "recent runs" in result.out
    assert re.search(r"^updated \d\d:\d\d:\d\d UTC$", result.out, re.MULTILINE)
    assert "RUN ID" in result.out
    as_json = cli("jobs", "watch", fired.job_id, "--iterations", "1", "--json", timeout=20)
    assert as_json.code == 0 and as_json.json["job"]["job_id"] == fired.job_id
    assert isinstance(as_json.json["runs"], list)


def test_config_show_prints_the_endpoint_and_auth_in_use(cli: Cli, local_stack: Api) -> None:
    out = cli.ok("config", "show").out
    assert field(out, "endpoint") == local_stack.base_url
    assert field(out, "auth") == "bearer"


# ------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "get", "job_doesnotexist"],
        ["jobs", "pause", "job_doesnotexist"],
        ["jobs", "resume", "job_doesnotexist"],
        ["jobs", "run", "job_doesnotexist"],
        ["jobs", "cancel", "job_doesnotexist"],
        ["jobs", "runs", "job_doesnotexist"],
        ["jobs", "watch", "job_doesnotexist", "--iterations", "1"],
        ["runs", "get", "job_doesnotexist", "run_x"],
        ["runs", "cancel", "job_doesnotexist", "run_x"],
    ],
)
def test_an_unknown_job_exits_3_with_one_error_line(cli: Cli, argv: list[str]) -> None:
    result = cli(*argv)
    assert result.code == 3
    assert one_error_line(result) == "error: job_id: job job_doesnotexist not found"
    assert result.out == ""


def test_an_unknown_run_of_a_known_job_exits_3(cli: Cli, fired: Fired) -> None:
    result = cli("runs", "get", fired.job_id, "run_doesnotexist")
    assert result.code == 3
    assert one_error_line(result) == "error: run_id: run run_doesnotexist not found"


def test_an_invalid_cron_exits_1_naming_the_field(cli: Cli, receiver: Receiver) -> None:
    result = cli("jobs", "create", "--cron", "61 * * * *", "--url", receiver.url + "/bad")
    assert result.code == 1
    line = one_error_line(result)
    assert line.startswith("error: schedule.cron: ") and "61" in line


@pytest.mark.parametrize(
    ("flags", "field_name"),
    [
        (["--cron", "0 13 * * *", "--timezone", "Mars/Olympus"], "schedule.timezone"),
        (["--rate", "1 second"], "schedule.rate"),
        (["--at", "next tuesday"], "schedule.at"),
    ],
)
def test_other_refused_input_exits_1_naming_the_field(
    cli: Cli, receiver: Receiver, flags: list[str], field_name: str
) -> None:
    result = cli("jobs", "create", *flags, "--url", receiver.url + "/bad")
    assert result.code == 1
    assert one_error_line(result).startswith(f"error: {field_name}: ")


def test_a_private_target_is_refused(cli: Cli) -> None:
    result = cli("jobs", "create", "--at", "in 1h", "--url", "http://10.0.0.1/hook")
    assert result.code == 1
    assert one_error_line(result).startswith("error: target.url: 10.0.0.1 is a private address")


def test_two_schedule_forms_are_bad_usage(cli: Cli, receiver: Receiver) -> None:
    result = cli("jobs", "create", "--at", "in 1h", "--cron", "0 1 * * *", "--url", receiver.url + "/u")
    assert result.code == 2
    assert "give exactly one of --at, --cron, --rate" in result.err
    assert "Traceback" not in result.err


def test_a_wrong_token_exits_1(cli: Cli) -> None:
    result = cli("jobs", "list", "--token", "not-a-token")
    assert result.code == 1
    assert one_error_line(result) == "error: missing or invalid bearer token"


def test_an_unreachable_endpoint_exits_5(cli: Cli) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    result = cli("jobs", "list", "--endpoint", endpoint)
    assert result.code == 5
    assert one_error_line(result).startswith(f"error: cannot reach {endpoint}")


# ------------------------------------------------------------------------------- punctual local


def test_a_role_alone_needs_the_emulator_endpoint(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "punctual", "local", "--role", "worker"],
        check=False,
        env=clean_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert process.returncode == 2
    assert "--role needs --aws-endpoint" in process.stderr
    assert "Traceback" not in process.stderr


@pytest.mark.parametrize("role", [[], ["--role", "worker"]], ids=["stack", "role"])
def test_an_unreachable_aws_endpoint_is_one_line(tmp_path: Path, role: list[str]) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    process = subprocess.run(
        [*PUNCTUAL, "local", *role, "--aws-endpoint", endpoint, "--port", str(free_port())],
        check=False,
        env=clean_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 5, process.stderr[-2000:]
    assert "Traceback" not in process.stderr and endpoint in process.stderr


def test_local_on_a_port_in_use_says_so_and_exits(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = _start([*PUNCTUAL, "local", "--port", str(port)], tmp_path)
        try:
            started.process.wait(timeout=8)
        except subprocess.TimeoutExpired:
            pass
        finally:
            running = started.process.poll() is None
            if running:
                _stop(started.process)
        started.lines.until(lambda _seen: False, timeout=0.5)
    output = "\n".join(started.lines.seen)
    assert not running, "still running 8 s later:\n" + output[-1500:]
    assert started.process.returncode != 0
    assert "Traceback" not in output and "Punctual is running" not in output
    assert str(port) in output


class Lines:
    """Reads a process's merged output on a thread, line by line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        stream = process.stdout

        def pump() -> None:
            for line in stream:
                self.lines.put(line)

        threading.Thread(target=pump, daemon=True).start()

    def until(self, predicate: Callable[[list[str]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not predicate(self.seen):
            try:
                self.seen.append(self.lines.get(timeout=max(0.01, deadline - time.monotonic())).rstrip("\n"))
            except queue.Empty:
                return False
        return True


def _stop(process: subprocess.Popen[str]) -> int | None:
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie waiting to be reaped has stopped running
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


@dataclass
class Started:
    process: subprocess.Popen[str]
    lines: Lines
    cwd: Path
    at: float


IGNORING_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN);"
    " os.execv(sys.argv[1], sys.argv[1:])"
)


def _start(argv: list[str], cwd: Path, *, sigint_ignored: bool = False) -> Started:
    """``sigint_ignored``: started as a shell's background job is (or by a test runner's worker
    process), with SIGINT ignored, which the child inherits."""
    if sigint_ignored:  # an exec keeps an ignored signal ignored
        argv = [sys.executable, "-c", IGNORING_SIGINT, *argv]
    process = subprocess.Popen(
        argv, env=clean_env(cwd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return Started(process, Lines(process), cwd, time.monotonic())


@dataclass
class Background:
    demo: Started
    worker: Started


@pytest.fixture(scope="module", autouse=True)
def background(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background]:
    """`punctual local --demo` and `punctual local --role worker` (on an emulator of its own), started
    with the module so that their waiting overlaps the other tests; their own tests come last."""
    demo_dir, role_dir = tmp_path_factory.mktemp("demo"), tmp_path_factory.mktemp("role")
    demo = _start(
        [*PUNCTUAL, "local", "--demo", "--port", str(free_port()), "--tick-seconds", "10"], demo_dir
    )
    port = free_port()
    emulator = subprocess.Popen(
        [*PUNCTUAL[:2], "punctual.local.emulator", "--port", str(port)],
        env=clean_env(role_dir),
        cwd=role_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, timeout=30)
    # Started with SIGINT ignored: Ctrl-C must stop it all the same (under pytest-xdist it was started
    # so, and a role alone then never stopped: the fresh-clone make test failed on it twice).
    worker = _start(
        [*PUNCTUAL, "local", "--role", "worker", "--aws-endpoint", f"http://127.0.0.1:{port}"],
        role_dir,
        sigint_ignored=True,
    )
    yield Background(demo, worker)
    for started in (demo, worker):
        if started.process.poll() is None:
            started.process.kill()
            started.process.wait()
    emulator.terminate()
    emulator.wait(timeout=10)


@dataclass
class RoleRun:
    code: int | None
    output: list[str]


@pytest.fixture(scope="module")
def worker_alone(background: Background) -> RoleRun:
    """The worker alone, given time to provision and start polling, then stopped with Ctrl-C."""
    worker = background.worker
    # A start-up line, if any, comes within a few seconds.
    worker.lines.until(bool, timeout=max(0.0, worker.at + 4 - time.monotonic()))
    if worker.process.poll() is not None:
        worker.lines.until(lambda _seen: False, timeout=0.5)
        return RoleRun(worker.process.returncode, worker.lines.seen)
    code = _stop(worker.process)
    worker.lines.until(lambda _seen: False, timeout=0.5)
    return RoleRun(code, worker.lines.seen)


def test_a_worker_alone_runs_against_an_emulator_and_stops_cleanly_on_ctrl_c(worker_alone: RoleRun) -> None:
    assert worker_alone.code == 0, worker_alone.output
    assert not any("Traceback" in line for line in worker_alone.output), worker_alone.output


def test_a_role_alone_prints_a_start_up_banner(worker_alone: RoleRun) -> None:
    assert any("worker" in line for line in worker_alone.output), worker_alone.output


DELIVERY = re.compile(
    r"^\s+(\d\d:\d\d:\d\d\.\d{3})\s+(demo-once-5s|demo-once-12s)\s+(\S+Z)\s+(-?\d+\.\d) ms$"
)


def test_local_demo_shows_deliveries_with_lateness_and_stops_cleanly(background: Background) -> None:
    demo = background.demo
    lines = demo.lines
    try:
        found = lines.until(
            lambda seen: sum(bool(DELIVERY.match(line)) for line in seen) >= 2,
            timeout=max(5.0, demo.at + 40 - time.monotonic()),
        )
        output = "\n".join(lines.seen)
        assert found, output
        assert "Punctual is running at http://127.0.0.1:" in output
        assert "token:      local-dev-token" in output
        deliveries = {m.group(2): m for m in map(DELIVERY.match, lines.seen) if m}
        assert set(deliveries) == {"demo-once-5s", "demo-once-12s"}
        for match in deliveries.values():
            lateness_ms = float(match.group(4))
            assert 0 <= lateness_ms < 2000, match.group(0)  # never early
    finally:
        code = _stop(demo.process)
    lines.until(lambda _seen: False, timeout=0.5)
    assert code == 0, "\n".join(lines.seen[-30:])
    assert "punctual: stopping" in lines.seen
    roles = json.loads((demo.cwd / ".punctual" / "roles.json").read_text())
    assert {"emulator", "api", "dispatcher", "worker-1"} <= set(roles)
    assert wait_until(lambda: all(_gone(pid) for pid in roles.values()), timeout=5), roles


def test_create_from_a_jsonl_file_answers_each_line_and_runs_the_jobs(
    cli: Cli, receiver: Receiver, tmp_path: Path
) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=5)).isoformat()
    lines = [
        json.dumps({"schedule": {"at": soon}, "target": {"type": "http", "url": receiver.url + f"/f{i}"}})
        for i in range(150)
    ]
    lines.insert(
        3, json.dumps({"schedule": {"cron": "61 * * * *"}, "target": {"type": "http", "url": receiver.url}})
    )
    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    key = f"file-{uuid.uuid4()}"
    result = cli("jobs", "create", "--file", str(path), "--idempotency-key", key, "--json")
    assert result.code == 1, "one line was refused"
    answers = result.json
    assert len(answers) == 151 and [a["line"] for a in answers] == list(range(1, 152))
    (refused,) = [a for a in answers if a["status"] != 201]
    assert refused["line"] == 4 and refused["error"]["field"] == "schedule.cron"
    again = cli("jobs", "create", "--file", str(path), "--idempotency-key", key, "--json").json
    assert [a.get("job", {}).get("job_id") for a in again] == [
        a.get("job", {}).get("job_id") for a in answers
    ]
    wait_until(lambda: all(receiver.for_path(f"/f{i}") for i in range(150)), timeout=60)
    assert all(len(receiver.for_path(f"/f{i}")) == 1 for i in range(150))


def test_schedule_preview_lists_fire_times_and_what_an_outage_would_run(cli: Cli) -> None:
    result = cli.ok(
        "schedule", "preview", "0 2 * * *", "--timezone", "Europe/Berlin", "--count", "20",
        "--outage", "01:00..04:00",
    )  # fmt: skip
    lines = result.out.splitlines()
    table_rows = [line for line in lines if re.match(r"^\d+\s+\d{4}-", line)]
    assert len(table_rows) == 20
    assert all(
        re.split(r"\s{2,}", row)[2].endswith(("T02:00:00+01:00", "T02:00:00+02:00")) for row in table_rows
    )
    assert any(line.startswith("outage ") and "1 run afterwards" in line for line in lines), result.out
    assert any(re.search(r"\bruns\s+2\.0 h$", line) for line in lines), result.out
    spring = cli.ok("schedule", "preview", "30 2 * * *", "--timezone", "Europe/Berlin", "--after",
                    "2026-03-28T12:00:00", "--count", "1", "--json").json  # fmt: skip
    assert spring["fire_times"][0]["dst"]["kind"] == "gap"
    bad = cli("schedule", "preview", "0 2 * * *", "--timezone", "Mars/Olympus")
    assert bad.code == 1 and "schedule.timezone" in one_error_line(bad)


def test_a_pause_keeps_its_note_and_until_refuses_a_past_until_and_create_keeps_pause_on_failures(
    cli: Cli, receiver: Receiver
) -> None:
    created = cli.ok(
        "jobs",
        "create",
        "--rate",
        "1 hour",
        "--url",
        receiver.url + "/p",
        "--pause-on-failures",
        "3",
        "--json",
    ).json
    assert created["pause_on_failures"] == 3
    paused = cli.ok("jobs", "pause", created["job_id"], "--note", "quarter close", "--until", "in 2h")
    assert field(paused.out, "status") == "PAUSED" and field(paused.out, "note") == "quarter close"
    assert re.fullmatch(r"since \S+ by local until \S+Z", field(paused.out, "paused"))
    bad = cli("jobs", "pause", created["job_id"], "--until", "2020-01-01T00:00:00Z")
    assert bad.code == 1 and "until" in one_error_line(bad)
    assert field(cli.ok("jobs", "resume", created["job_id"]).out, "status") == "ACTIVE"
    cli.ok("jobs", "cancel", created["job_id"])


def test_a_bulk_pause_by_tag_pauses_every_match_and_a_bulk_cancel_needs_yes(
    cli: Cli, receiver: Receiver
) -> None:
    team = f"cli-bulk-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        cli.ok("jobs", "create", "--rate", "1 hour", "--url", receiver.url + "/b", "--tag", f"team={team}")
    paused = cli.ok("jobs", "bulk", "pause", "--tag", f"team={team}", "--note", "freeze", "--until", "in 1h")
    assert paused.out.strip().endswith("pause: 2 matched, 2 done, 0 refused")
    assert [row[2] for row in rows_after(paused.out, "JOB ID")] == ["PAUSED", "PAUSED"]
    unconfirmed = cli("jobs", "bulk", "cancel", "--tag", f"team={team}")
    assert unconfirmed.code == 2 and "--yes" in one_error_line(unconfirmed)
    cancelled = cli.ok("jobs", "bulk", "cancel", "--tag", f"team={team}", "--yes", "--json").json
    assert cancelled["matched"] == 2 and {i["job"]["status"] for i in cancelled["items"]} == {"CANCELLED"}


def rows_after(text: str, header: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return [re.split(r"\s{2,}", line) for line in lines[start + 1 :] if line.startswith("job_")]


def test_backfill_runs_past_occurrences(cli: Cli, receiver: Receiver) -> None:
    job_id = cli.ok(
        "jobs", "create", "--cron", "0 * * * *", "--url", receiver.url + "/cli-bf", "--json"
    ).json["job_id"]
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = (end - timedelta(hours=2)).isoformat()
    out = cli.ok(
        "jobs", "backfill", job_id, "--from", start, "--to", end.isoformat(), "--overlap", "allow"
    ).out
    assert out.startswith(f"backfilling 3 occurrences of {job_id} (allow): ")
    assert len(receiver.wait_for("/cli-bf", 3, timeout=30)) == 3
    bad = cli("jobs", "backfill", job_id, "--from", start, "--to", "2099-01-01T00:00:00Z")
    assert bad.code == 1 and one_error_line(bad).startswith("error: to: ")
    cli.ok("jobs", "cancel", job_id)

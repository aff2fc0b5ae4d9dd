"""End to end through the local stack: 300 jobs due at the same second call one receiver under a
target limit of ``max_concurrent: 10``. The receiver never has more than 10 requests at once (and
has 10 at some moment), gets each of the 300 exactly once and none before its second; the runs that
waited say so in their history, and the limit ends with nothing held and nothing waiting."""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from tests.e2e.conftest import Api, wait_until
from tests.e2e.test_cli import Cli, clean_env, field

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

JOBS = 300
MAX_CONCURRENT = 10
CALL_SECONDS = 0.2


class Gauge:
    """Counts the requests the receiver is answering at once: its responder holds each one open for
    ``CALL_SECONDS``, and the first ``MAX_CONCURRENT`` until that many are open together (or a
    while has passed): a limit that let fewer run at once would show fewer. Only the first: a
    barrier that every group of requests had to fill again held nine calls for its whole timeout
    whenever a tenth slot was between two runs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.arrived = 0
        self.first = threading.Barrier(MAX_CONCURRENT, timeout=20)

    def respond(self, _path: str, _n: int) -> tuple[int, bytes]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.arrived += 1
            among_first = self.arrived <= MAX_CONCURRENT
        if among_first:
            with contextlib.suppress(threading.BrokenBarrierError):
                self.first.wait()
        time.sleep(CALL_SECONDS)
        with self.lock:
            self.now -= 1
        return 200, b'{"ok": true}'


def create_limited_jobs(api: Api, receiver: Receiver, name: str, due: datetime) -> list[dict[str, Any]]:
    status, limit = api.call(
        "POST", "/v1/limits", {"name": name, "match": receiver.url, "max_concurrent": MAX_CONCURRENT}
    )
    assert status == 201, limit
    jobs: list[dict[str, Any]] = []
    for start in range(0, JOBS, 100):
        batch = [
            {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": f"{receiver.url}/job-{n}"}}
            for n in range(start, start + 100)
        ]
        status, answer = api.call("POST", "/v1/jobs/batch", {"jobs": batch})
        assert status == 200, answer
        assert all("job" in item for item in answer["items"]), answer
        jobs += [item["job"] for item in answer["items"]]
    return jobs


def test_300_jobs_due_at_one_second_never_exceed_the_limit_and_all_run_once(local_stack: Api) -> None:
    gauge = Gauge()
    with Receiver(gauge.respond) as receiver:
        name = f"e2e-{time.time_ns()}"
        due = (datetime.now(UTC) + timedelta(seconds=15)).replace(microsecond=0)
        jobs = create_limited_jobs(local_stack, receiver, name, due)
        # Limits reach a worker within its cache's time (LIMITS_CACHE_SECONDS): before the due second.
        delivered = wait_until(lambda: len(receiver.deliveries) >= JOBS, timeout=240, interval=0.5)
        assert delivered, f"{len(receiver.deliveries)} of {JOBS} delivered"
        time.sleep(3)  # a duplicate would come within seconds
        paths = [delivery.path for delivery in receiver.deliveries]
        assert sorted(paths) == sorted(f"/job-{n}" for n in range(JOBS)), "each job delivered exactly once"
        early = [d.path for d in receiver.deliveries if d.received_at < due.timestamp()]
        assert early == [], "delivered before its second"
        assert gauge.most <= MAX_CONCURRENT, (
            f"{gauge.most} requests at once under max_concurrent {MAX_CONCURRENT}"
        )
        assert gauge.most == MAX_CONCURRENT, f"the limit was never used in full ({gauge.most} at most)"
        first, last = (
            min(d.received_at for d in receiver.deliveries),
            max(d.received_at for d in receiver.deliveries),
        )
        print(
            f"\n{JOBS} deliveries under max_concurrent {MAX_CONCURRENT}: most at once {gauge.most}, "
            f"first {first - due.timestamp():.2f} s after the due second, last {last - due.timestamp():.2f} s"
        )

    # The history: every run SUCCEEDED; those that waited name the limit and how long they waited, and
    # their lateness counts from the due time.
    waited: list[dict[str, Any]] = []
    for job in jobs:
        status, runs = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs")
        assert status == 200, runs
        (run,) = runs["items"]
        assert run["status"] == "SUCCEEDED" and run["reason"] is None, run
        if run["limited_ms"] is not None:
            assert run["limited_by"] == name, run
            assert run["lateness_ms"] >= run["limited_ms"] - 1000, run
            waited.append(run)
    # Most waited (a run refused before its dispatch's write records nothing until its next refusal).
    assert len(waited) >= JOBS // 2, f"only {len(waited)} runs recorded a wait"
    print(f"runs that waited: {len(waited)}, longest {max(r['limited_ms'] for r in waited)} ms")
    status, limit = local_stack.call("GET", f"/v1/limits/{name}")
    assert status == 200, limit
    assert (limit["in_use"], limit["waiting_count"]) == (0, 0), limit
    local_stack.call("DELETE", f"/v1/limits/{name}")


def test_punctual_limits_creates_shows_updates_and_deletes_a_limit(local_stack: Api, tmp_path: Path) -> None:
    cli = Cli(clean_env(tmp_path, PUNCTUAL_ENDPOINT=local_stack.base_url))
    name = f"cli-{time.time_ns()}"
    shown = cli.ok(
        "limits", "create", name, "--match", "https://api.partner.test/v1", "--max-concurrent", "5"
    )
    assert field(shown.out, "caps") == "5 at once" and field(shown.out, "in use") == "0/5"
    listed = cli.ok("limits", "list")
    assert name in listed.out
    updated = cli.ok(
        "limits",
        "update",
        name,
        "--match",
        "https://api.partner.test",
        "--per-second",
        "2",
        "--burst",
        "4",
        "--json",
    ).json
    assert (updated["max_concurrent"], updated["per_second"], updated["burst"], updated["version"]) == (
        None,
        2,
        4,
        2,
    )
    assert cli.ok("limits", "get", name, "--json").json["tokens"] == 4
    refused = cli("limits", "create", name, "--match", "https://x.test", "--max-concurrent", "1")
    assert refused.code == 4, refused.err  # 409: the name is taken
    bad = cli("limits", "create", "other", "--match", "ftp://x.test", "--max-concurrent", "1")
    assert bad.code == 1 and "match" in bad.err
    cli.ok("limits", "delete", name)
    assert cli("limits", "get", name).code == 3

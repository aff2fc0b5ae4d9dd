"""Cost per job: the AWS requests and DynamoDB capacity units the engine spends on each executed job,
turned into dollars.

The stack runs as separate processes like ``punctual local`` (emulator, api, dispatcher, one worker
with four SQS pollers), but each role is ``bench.timed_role``: the real role plus a record of every
AWS call it makes (inside a handler, or by the event source mapping around it; for DynamoDB with the
capacity the answer reports, every request asking for it) and of each handler invocation's duration.
The emulator's own request counter (``/_punctual/requests``) checks the total.

Four scenarios, each repeated (three times by default) on the same stack:

- ``one_off_ahead``: one-off jobs created more than the look-ahead before their time (the usual
  case: "call this at 13:00:05" made well in advance), so the dispatcher claims them;
- ``one_off_soon``: one-off jobs due a few seconds after they are created, claimed and sent by the
  api at once;
- ``one_off_batch``: the ahead jobs again, created 100 a request through ``POST /v1/jobs/batch``
  (the API call and its invocation shared by the jobs of a request);
- ``recurring``: crons every 10 s in steady state (a claim writes the next occurrence);
- ``recurring_controls``: the same crons with issue 14's controls on (overlap ``skip``, ``max_runs``,
  jitter, alerts on failure and lateness, ``on_complete: delete``), none of which fires: what the
  controls cost a job that declares them when nothing goes wrong.

The one-off batches of all repetitions overlap in time (three repetitions one after the other would
take four minutes, most of it waiting for the look-ahead), but no call is charged to two of them:
the api's calls go to the batch whose job it is creating, the dispatcher's to the batch its tick
claims, the worker's and its event source mapping's to the batch executing then (each ahead batch
runs 20 s after the one before, a soon batch while the dispatcher claims). Each figure is the median
over the repetitions (``median``), with the lowest and highest of the headline ones (``spread``),
and pooled over all of them (``pooled``).

The worker's hold (``hold_ms``: a run's due time minus the moment its message reached the worker,
negative when it arrived late) is read from the worker's outcome log lines ("run succeeded", "run
failed", "retry scheduled") and reported beside the worker's billed duration, which it explains
(the worker waits out the hold): each line is the scenario's whose jobs it ran (by ``job_id``; for
the crons, whose jobs every repetition shares, also by the repetition's worker interval). The billed
duration itself stays the measured invocations'.

Capacity units are computed from the item sizes by DynamoDB's rules and price the jobs; what the
emulator reports (``ReturnConsumedCapacity``) is recorded next to them: moto's figures are fixed
per request, whatever the size, and absent for TransactWriteItems.

The dispatcher's sweep costs the same per tick whether there is work or not; that fixed cost is
measured on idle ticks (nothing in their window), subtracted from the per-job figures and reported
per month instead. A sent trigger stays in its bucket, so the ticks after its claim read it again
(and check that its run exists) until their cursor passes its minute: what those ticks spend beyond
an idle tick is shared by all executed jobs (``rescans_per_job``). The
local SQS pollers long-poll with a 2 s wait, so their empty receives say nothing about AWS (Lambda's
event source mapping polls on its own schedule); receives that returned messages and the deletes
that follow are counted per job, empty ones are reported apart.

    python -m bench.cost [--repetitions 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import common, prices
from bench.common import ROOT, Api, emulator, log, machine, median_tree, quantile, spread, write_json
from functions.core import aws
from functions.core.model import iso
from functions.core.settings import Settings
from punctual.local.env import LOCAL_CREDENTIALS, local_settings
from punctual.local.provision import provision
from punctual.local.supervisor import free_port
from tests.support.receiver import Receiver

TICK_SECONDS = 10
LOOKAHEAD_SECONDS = 60
SHARDS = 4
AWS_SHARDS = 8  # the deployed default (docs/deploy.md)
TICKS_PER_MONTH = 43_200  # one a minute on AWS
ROLES = ("api", "dispatcher", "worker")
ESM_OPERATIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessageBatch")


# ------------------------------------------------------------------------------------- the stack


@dataclass
class TimedStack:
    api: Api
    endpoint: str
    workdir: Path
    settings: Settings
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def counters(self, reset: bool = False) -> dict[str, int]:
        request = urllib.request.Request(
            self.endpoint + "/_punctual/requests", method="DELETE" if reset else "GET"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            counts: dict[str, int] = json.loads(response.read())
            return counts

    def events(self, since: float, until: float) -> list[dict[str, Any]]:
        out = []
        for role in ROLES:
            path = self.workdir / f"{role}.jsonl"
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if since <= event["t"] < until:
                    out.append(event)
        return out

    def log_bytes(self) -> dict[str, int]:
        return {role: (self.workdir / f"{role}.log").stat().st_size for role in ROLES}


@contextmanager
def timed_stack() -> Iterator[TimedStack]:
    workdir = Path(tempfile.mkdtemp(prefix="punctual-bench-cost-"))
    api_port = free_port()
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = []
    with emulator(workdir) as endpoint:
        try:
            settings = provision(
                local_settings(
                    endpoint, overrides={"shard_count": SHARDS, "lookahead_seconds": LOOKAHEAD_SECONDS}
                )
            )
            env = {
                **os.environ,
                **LOCAL_CREDENTIALS,
                **settings.to_env(),
                # JSON logs, as on AWS, so their size per job means something.
                "PUNCTUAL_LOG_FORMAT": "json",
                "POWERTOOLS_SERVICE_NAME": "punctual",
            }
            role_args = {
                "api": ["--port", str(api_port)],
                "dispatcher": ["--tick-seconds", str(TICK_SECONDS)],
                "worker": ["--concurrency", "4", "--name", "worker-1"],
            }
            for role in ROLES:
                role_log = (workdir / f"{role}.log").open("wb")
                logs.append(role_log)
                processes[role] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bench.timed_role",
                        role,
                        "--events",
                        str(workdir / f"{role}.jsonl"),
                        *role_args[role],
                    ],
                    env=env,
                    stdout=role_log,
                    stderr=subprocess.STDOUT,
                    cwd=ROOT,  # `-m bench.timed_role` from wherever the benchmark was started
                    start_new_session=True,
                )
            stack = TimedStack(Api(f"http://127.0.0.1:{api_port}"), endpoint, workdir, settings, processes)
            stack.api.wait_healthy(process=processes["api"])
            yield stack
        finally:
            for process in processes.values():
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGTERM)
            for process in processes.values():
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            for handle in logs:
                handle.close()


# ------------------------------------------------------------------------------------ scenarios

Interval = tuple[float, float]

# The ahead batches: created right after a tick, due 64-67 s after it, so the next tick claims them
# all (its horizon is 70 s after that tick) and none is within the api's look-ahead when created.
AHEAD_DUE_AFTER_TICK = (64.0, 67.0)
# A worker starts on a message 2-3 s before its due time; its share of a batch begins this early.
EXECUTION_LEAD = 6.0
# How long after its last arrival a batch's records, outcomes and deletes are still being made.
TAIL = 2.5
# A batch of soon jobs: due 3-6 s after it is created, over in ~12 s.
SOON_DUE_AFTER = (3.0, 6.0)
SOON_BUDGET = 14.0


@dataclass
class Scenario:
    """One repetition of one scenario, and what it is charged with: the api's calls for the jobs it
    created (by their target path), the dispatcher's calls in its intervals (whole ticks), and the
    worker's and its event source mapping's calls in its worker intervals."""

    name: str
    repetition: int
    tag: str | None  # target path prefix of the jobs it created
    dispatcher: list[Interval] = field(default_factory=list)
    worker: list[Interval] = field(default_factory=list)
    api: list[Interval] = field(default_factory=list)  # the creates (for the api's log lines)
    creates: int = 0
    executions: int = 0
    paths: set[str] = field(default_factory=set)
    due: Interval = (0.0, 0.0)
    extra: dict[str, Any] = field(default_factory=dict)
    # The ids of the jobs it created (its worker outcome lines, for the hold), and whether its
    # repetitions share them (the crons), so that a line is also the repetition's by its time.
    jobs: set[str] = field(default_factory=set)
    jobs_shared: bool = False


def _ticks(stack: TimedStack, since: float) -> list[dict[str, Any]]:
    return [
        e for e in stack.events(since, time.time() + 1) if e["role"] == "dispatcher" and e.get("invocation")
    ]


def _next_tick(stack: TimedStack, after: float, timeout: float = 60) -> tuple[float, float]:
    """Wait for the first dispatcher invocation that starts at or after ``after`` to finish: the
    aligned time of its tick (the local dispatcher ticks on multiples of the tick period) and its end."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for tick in _ticks(stack, after):
            aligned = math.floor(tick["t"] / TICK_SECONDS) * TICK_SECONDS
            return float(aligned), float(tick["t_end"])
        time.sleep(0.1)
    raise TimeoutError("the dispatcher did not tick")


def _wait_delivered(receiver: Receiver, paths: set[str], timeout: float) -> float:
    """Wait until every path has been called (or the timeout); the last arrival's time."""
    deadline = time.time() + timeout
    while time.time() < deadline and not paths <= set(receiver.by_path()):
        time.sleep(0.2)
    arrivals = [a.received_at for a in receiver.snapshot() if a.path in paths]
    return max(arrivals, default=time.time())


BATCH = 100  # jobs a POST /v1/jobs/batch request creates in the one_off_batch scenario


def _create(stack: TimedStack, receiver: Receiver, scenario: Scenario, dues: list[float]) -> None:
    """One-off jobs at the given due times; a due time that would fall within the look-ahead when the
    job is created is moved just beyond it for the ahead batches."""
    began = time.time()
    bodies = []
    for n, planned in enumerate(dues):
        due = planned
        if scenario.name in ("one_off_ahead", "one_off_batch"):
            due = max(planned, time.time() + LOOKAHEAD_SECONDS + 1.0)
        path = f"{scenario.tag}{n}"
        body = {
            "schedule": {"at": iso(datetime.fromtimestamp(round(due, 3), UTC))},
            "target": {"type": "http", "url": receiver.url + path},
        }
        if scenario.name == "one_off_batch":
            bodies.append(body)
        else:
            scenario.jobs.add(stack.api.create(body)["job_id"])
        scenario.paths.add(path)
        scenario.due = (min(scenario.due[0] or due, due), max(scenario.due[1], due))
    for start in range(0, len(bodies), BATCH):
        status, answer = stack.api.call("POST", "/v1/jobs/batch", {"jobs": bodies[start : start + BATCH]})
        refused = [item for item in answer.get("items", []) if item.get("status") != 201]
        if status != 200 or refused:
            raise RuntimeError(f"batch create answered {status}: {refused[:1] or answer}")
        scenario.jobs.update(item["job"]["job_id"] for item in answer["items"])
    scenario.creates = len(dues)
    scenario.api.append((began, time.time()))


def _soon(stack: TimedStack, receiver: Receiver, repetition: int, count: int, rng: random.Random) -> Scenario:
    """One-off jobs due within seconds: the api claims and sends each one as it creates it."""
    scenario = Scenario("one_off_soon", repetition, f"/soon{repetition}/")
    began = time.time()
    _create(stack, receiver, scenario, [time.time() + rng.uniform(*SOON_DUE_AFTER) for _ in range(count)])
    last = _wait_delivered(receiver, scenario.paths, timeout=SOON_DUE_AFTER[1] + 60)
    # The batch's records, outcomes and deletes end a moment after the last arrival.
    time.sleep(max(0.0, last + TAIL - time.time()))
    scenario.worker.append((began, last + TAIL))
    return scenario


def _one_offs(
    stack: TimedStack,
    receiver: Receiver,
    repetitions: int,
    ahead: int,
    soon: int,
    rng: random.Random,
    warmup: tuple[float, float],
    name: str = "one_off_ahead",
) -> list[Scenario]:
    """The ahead and soon batches of every repetition, interleaved.

    Each ahead batch is created right after a tick and claimed by the next one; the tick after that
    is idle, so the dispatcher's calls of those two ticks are the batch's. A soon batch runs while
    the dispatcher claims (its jobs never reach the dispatcher). About a minute later each ahead
    batch runs, 20 s after the one before, so the worker's calls are the batch's by time. Three
    repetitions of both take ~110 s instead of ~4 minutes one after the other."""
    aheads: list[Scenario] = []
    soons: list[Scenario] = []
    deferred: list[int] = []
    # The first batch follows the warm-up tick at once, unless that tick ended too late for it.
    after = time.time() if warmup[1] > warmup[0] + 3 else warmup[0]
    for k in range(repetitions):
        tick, _end = _next_tick(stack, after)
        batch = Scenario(name, k, f"/{name.rsplit('_', 1)[-1]}{k}/")
        log(f"cost: repetition {k + 1}: {ahead} jobs due in a minute, then {soon} due within seconds")
        _create(stack, receiver, batch, [tick + rng.uniform(*AHEAD_DUE_AFTER_TICK) for _ in range(ahead)])
        # The dispatcher's share: from the creation on, the first tick that starts after the batch
        # exists (it claims the batch) and the one after it (idle). Counted from the tick found
        # before creating, a creation that outlasted the next tick's start left the claiming tick
        # outside the interval (one repetition once read 5.0 WCU a job, the dispatcher's unit missing).
        created_from, created_until = batch.api[-1]
        claim = math.ceil(created_until / TICK_SECONDS) * TICK_SECONDS
        batch.dispatcher.append((created_from, claim + 2 * TICK_SECONDS))
        aheads.append(batch)
        # A soon batch must be over before the first ahead batch's messages arrive.
        if not soon:
            pass
        elif time.time() + SOON_BUDGET < aheads[0].due[0] - EXECUTION_LEAD:
            soons.append(_soon(stack, receiver, k, soon, rng))
        else:
            deferred.append(k)
        after = claim + 2 * TICK_SECONDS - 0.5
    for k, batch in enumerate(aheads):
        last = _wait_delivered(receiver, batch.paths, timeout=batch.due[1] - time.time() + 60)
        end = last + TAIL
        if k + 1 < len(aheads):
            end = min(end, aheads[k + 1].due[0] - EXECUTION_LEAD)
        batch.worker.append((batch.due[0] - EXECUTION_LEAD, end))
    time.sleep(max(0.0, aheads[-1].worker[-1][1] - time.time()))
    for k in deferred:
        soons.append(_soon(stack, receiver, k, soon, rng))
    for scenario in aheads + soons:
        delivered = receiver.by_path()
        scenario.executions = sum(1 for p in scenario.paths if p in delivered)
    return aheads + sorted(soons, key=lambda s: s.repetition)


# Issue 14's controls, as the recurring_controls scenario's crons declare them (none of them fires).
CONTROLS: dict[str, Any] = {
    "max_runs": 1000,
    "jitter_seconds": 2,
    "on_complete": "delete",
    "alerts": {"failed": True, "late_seconds": 60},
}


def _recurring(
    stack: TimedStack,
    receiver: Receiver,
    repetitions: int,
    count: int,
    ticks: int,
    name: str = "recurring",
    controls: bool = False,
) -> list[Scenario]:
    """``count`` crons every 10 s; each repetition is ``ticks`` whole dispatcher ticks in steady state.
    ``controls``: with issue 14's controls on (``CONTROLS``, overlap ``skip``)."""
    jobs = []
    prefix = f"/{name}/"
    for k in range(count):
        body: dict[str, Any] = {
            "schedule": {"cron": f"{k % 10}/10 * * * * *"},
            "target": {"type": "http", "url": receiver.url + f"{prefix}{k}"},
        }
        if controls:
            body["schedule"]["overlap"] = "skip"
            alerts = {**CONTROLS["alerts"], "target": {"type": "http", "url": receiver.url + "/alerts"}}
            body.update({**CONTROLS, "alerts": alerts})
        job = stack.api.create(body)
        jobs.append(job["job_id"])
    # The create sends the occurrences within the look-ahead at once (the API does not wait for a
    # send moment: they arrive up to a second and a quarter early); from then on each tick sends
    # one occurrence per cron, paced. Steady state starts once the API's have run. Each repetition
    # is a fixed window of whole tick periods from half a second after the 5th second of a period,
    # so it holds its ticks whole (each lasts well under 5 s) and exactly one occurrence of each
    # cron (they fire on whole seconds).
    tick, end = _next_tick(stack, time.time() + LOOKAHEAD_SECONDS, timeout=LOOKAHEAD_SECONDS + 60)
    since = tick + 5.5 if end < tick + 5.5 else tick + TICK_SECONDS + 5.5
    scenarios = []
    for r in range(repetitions):
        until = since + ticks * TICK_SECONDS
        time.sleep(max(0.0, until + 0.5 - time.time()))
        executions = sum(
            1 for a in receiver.snapshot() if since <= a.received_at < until and a.path.startswith(prefix)
        )
        scenarios.append(
            Scenario(
                name,
                r,
                None,
                dispatcher=[(since, until)],
                worker=[(since, until)],
                executions=executions,
                extra={"crons": count, "every_seconds": 10, "ticks": ticks},
                jobs=set(jobs),
                jobs_shared=True,
            )
        )
        since = until
    for job_id in jobs:
        stack.api.call("DELETE", f"/v1/jobs/{job_id}")
    # The occurrences dispatched ahead (the look-ahead's worth) still reach the worker, which ends
    # them cancelled: let them pass before another scenario counts the worker's calls.
    time.sleep(LOOKAHEAD_SECONDS + 5)
    return scenarios


# ------------------------------------------------------------------------------------- analysis


def _is_job(sk: str) -> bool:
    """A job item: ``JOB#<id>``/``JOB``, or a one-off job at home among its minute's triggers."""
    return sk == "JOB" or sk.startswith("JOB#")


def _kind(pk: str, sk: str) -> str:
    if _is_job(sk):
        return "job"
    if pk.startswith("T#"):
        return "trigger"
    if pk.startswith("JOB#"):
        return "run"
    return pk.split("#", 1)[0].lower()


def _table_sizes(settings: Settings) -> tuple[dict[tuple[str, str], int], dict[str, dict[str, float]]]:
    """The size of every item in the table now, and per kind (median, max), for the write units."""
    from bench.timed_role import item_size

    client: Any = aws.client("dynamodb", settings)
    sizes: dict[tuple[str, str], int] = {}
    kwargs: dict[str, Any] = {"TableName": settings.table_name}
    while True:
        page = client.scan(**kwargs)
        for item in page.get("Items", []):
            sizes[(item["pk"]["S"], item["sk"]["S"])] = item_size(item)
        if not page.get("LastEvaluatedKey"):
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    by_kind: dict[str, list[int]] = {}
    for (pk, sk), size in sizes.items():
        by_kind.setdefault(_kind(pk, sk), []).append(size)
    kinds = {
        kind: {"items": len(v), "median_bytes": statistics.median(v), "max_bytes": max(v)}
        for kind, v in by_kind.items()
    }
    return sizes, kinds


def _wcu(
    event: dict[str, Any], sizes: dict[tuple[str, str], int], put_sizes: dict[tuple[str, str], int]
) -> float:
    """Write capacity units of one write, by DynamoDB's rules: per item and 1 KB, doubled in a
    transaction (a failed conditional write is charged too). An update is sized by the item as it
    is now (after every later write too: a slight overestimate).

    A job item also writes its entry in the owner index (``gsi1``, projection ALL), another unit per
    KB: every put, and every update (with ALL projected, any change is a change to the index).
    Counted since issue 13; the figures recorded before it left the index out."""
    total = 0.0
    for pk, sk, action, size in event.get("writes", []):
        key = (pk, sk)
        known = max(size or 0, sizes.get(key, 0), put_sizes.get(key, 0)) or 100
        units = max(1, math.ceil(known / 1024))
        total += units * (2 if event.get("tx") else 1)
        if _is_job(sk) and action in ("put", "update"):  # its owner-index entry
            total += units
    return total


@dataclass
class Units:
    """Requests and capacity units of one operation: computed from item sizes, and as reported in
    the answers' ``ConsumedCapacity`` (with how many answers carried one)."""

    requests: float = 0.0
    rcu: float = 0.0
    wcu: float = 0.0
    reported_rcu: float = 0.0
    reported_wcu: float = 0.0

    def add(self, other: Units, factor: float = 1.0) -> None:
        for name in ("requests", "rcu", "wcu", "reported_rcu", "reported_wcu"):
            setattr(self, name, max(0.0, getattr(self, name) + factor * getattr(other, name)))

    def per(self, jobs: int) -> dict[str, float]:
        return {name: round(value / jobs, 3) for name, value in vars(self).items()}


def _units(
    call: dict[str, Any], sizes: dict[tuple[str, str], int], put_sizes: dict[tuple[str, str], int]
) -> Units:
    reported = call.get("reported")
    return Units(
        requests=1.0,
        rcu=float(call.get("rru", 0.0)),
        wcu=_wcu(call, sizes, put_sizes) if call["op"].startswith("dynamodb:") else 0.0,
        reported_rcu=float(reported["rcu"]) if reported else 0.0,
        reported_wcu=float(reported["wcu"]) if reported else 0.0,
    )


def _who(call: dict[str, Any]) -> str:
    """api / dispatcher / worker (inside its handler) / esm (the local event source mapping)."""
    return "esm" if call["role"] == "worker" and call["ctx"] == "outside" else str(call["role"])


def _inside(t: float, intervals: list[Interval]) -> bool:
    return any(since <= t < until for since, until in intervals)


def _belongs(event: dict[str, Any], scenario: Scenario) -> bool:
    if event["role"] == "api":
        return scenario.tag is not None and str(event.get("tag", "")).startswith(scenario.tag)
    if event["role"] == "dispatcher":
        return _inside(event["t"], scenario.dispatcher)
    return _inside(event["t"], scenario.worker)


def _idle_ticks(events: list[dict[str, Any]], warmup_until: float) -> list[dict[str, Any]]:
    """Dispatcher invocations after the warm-up with nothing in their window: they sent nothing and
    read no trigger's run (a trigger stays in its bucket after it is sent, so a tick whose window
    holds sent triggers reads them again; that is the jobs' cost, see ``_rescans``)."""
    return [tick for tick in _quiet_ticks(events, warmup_until) if not _reads_triggers(tick)]


def _quiet_ticks(events: list[dict[str, Any]], warmup_until: float) -> list[dict[str, Any]]:
    """Dispatcher invocations after the warm-up that sent nothing, with the calls they made."""
    calls = [e for e in events if e["role"] == "dispatcher" and not e.get("invocation")]
    ticks = []
    for tick in events:
        if tick["role"] != "dispatcher" or not tick.get("invocation") or tick["t"] < warmup_until:
            continue
        summary = tick.get("summary") or {}
        if summary.get("dispatched") or summary.get("sent") or summary.get("stale"):
            continue
        inside = [c for c in calls if tick["t"] <= c["t"] <= tick["t_end"] + 0.001]
        ticks.append({"tick": tick, "calls": inside})
    return ticks


def _reads_triggers(tick: dict[str, Any]) -> bool:
    return bool((tick["tick"].get("summary") or {}).get("triggers_checked"))


def _rescans(
    events: list[dict[str, Any]],
    warmup_until: float,
    scenarios: list[Scenario],
    idle: dict[str, Any],
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
) -> dict[str, Units]:
    """What the ticks that sent nothing spent beyond an idle tick, per executed job: re-reading sent
    triggers still in their buckets (the query, and the check that their run exists). Every job's
    trigger is re-read by the ticks whose window holds it, whichever scenario it belongs to, so the
    total is shared by all executions."""
    claims = [interval for scenario in scenarios for interval in scenario.dispatcher]
    ticks = [
        tick
        for tick in _quiet_ticks(events, warmup_until)
        if _reads_triggers(tick) and not _inside(tick["tick"]["t"], claims)
    ]
    by_op: dict[str, Units] = {}
    for tick in ticks:
        for call in tick["calls"]:
            by_op.setdefault(call["op"], Units()).add(_units(call, sizes, put_sizes))
    for op, per_tick in idle["units_per_tick"].items():
        by_op.setdefault(op, Units()).add(Units(**per_tick), factor=-len(ticks))
    executions = max(1, sum(scenario.executions for scenario in scenarios))
    shares: dict[str, Units] = {}
    for op, units in by_op.items():
        share = Units()
        share.add(units, factor=1 / executions)
        if share.requests > 0.0005:
            shares[op] = share
    return shares


def _log_lines(path: Path) -> list[tuple[float, int]]:
    """(time, bytes) of every line of a role's JSON log; a line without a timestamp takes the one
    before it."""
    lines: list[tuple[float, int]] = []
    last = 0.0
    if not path.exists():
        return lines
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            stamp = json.loads(raw)["timestamp"]
            last = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f%z").timestamp()
        except (ValueError, KeyError, TypeError):
            pass
        lines.append((last, len(raw)))
    return lines


# The worker's outcome lines: one per attempt that called its target (functions/worker/execute.py).
OUTCOME_MESSAGES = ("run succeeded", "run failed", "retry scheduled")


def _outcome_lines(path: Path) -> list[dict[str, Any]]:
    """The worker's outcome lines that carry a hold: the time of the line (epoch seconds), the job,
    the run, ``hold_ms`` and ``lateness_ms``. Anything else in the log (other lines, text that is not
    JSON, an outcome without a hold) is left out."""
    lines: list[dict[str, Any]] = []
    if not path.exists():
        return lines
    for raw in path.read_bytes().splitlines():
        try:
            line = json.loads(raw)
            if not isinstance(line, dict) or line.get("message") not in OUTCOME_MESSAGES:
                continue
            hold = line.get("hold_ms")
            if not isinstance(hold, int | float) or isinstance(hold, bool):
                continue
            at = datetime.strptime(line["timestamp"], "%Y-%m-%d %H:%M:%S,%f%z").timestamp()
        except (ValueError, KeyError, TypeError):
            continue
        lines.append(
            {
                "t": at,
                "message": line["message"],
                "job_id": line.get("job_id"),
                "run_id": line.get("run_id"),
                "hold_ms": float(hold),
                "lateness_ms": line.get("lateness_ms"),
            }
        )
    return lines


def _holds_of(scenario: Scenario, outcomes: list[dict[str, Any]]) -> list[float]:
    """The holds of the scenario's outcome lines: those of the jobs it created; when its repetitions
    share their jobs (the crons), those inside its worker intervals, as its worker calls are; when
    it knows no job ids, every line inside its worker intervals."""
    mine = []
    for line in outcomes:
        if scenario.jobs and line["job_id"] not in scenario.jobs:
            continue
        if (scenario.jobs_shared or not scenario.jobs) and not _inside(line["t"], scenario.worker):
            continue
        mine.append(line["hold_ms"])
    return mine


HOLD_KEYS = ("median", "p99", "max", "min", "count")


def hold_summary(values: list[float]) -> dict[str, Any]:
    """``hold_ms`` of one scenario's outcome lines: median, p99 (nearest rank), max, min (the latest
    arrival: negative when a message came after its due time) and count; None without a line."""
    ordered = sorted(values)
    if not ordered:
        return {"median": None, "p99": None, "max": None, "min": None, "count": 0}
    return {
        "median": round(statistics.median(ordered), 1),
        "p99": round(quantile(ordered, 0.99), 1),
        "max": round(ordered[-1], 1),
        "min": round(ordered[0], 1),
        "count": len(ordered),
    }


def hold_median(holds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median over repetitions of each ``hold_summary`` figure, over the repetitions that had a
    line (None if none had)."""
    present = [h for h in holds if h.get("count")]
    out: dict[str, Any] = {}
    for key in HOLD_KEYS:
        values = [float(h[key]) for h in present if h.get(key) is not None]
        out[key] = round(statistics.median(values), 1) if values else None
    if not present:
        out["count"] = 0
    return out


def _analyse(
    scenario: Scenario,
    events: list[dict[str, Any]],
    idle: dict[str, Any],
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
    logs: dict[str, list[tuple[float, int]]],
    rescans: dict[str, Units],
    outcomes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    mine = [e for e in events if _belongs(e, scenario)]
    calls = [e for e in mine if not e.get("invocation")]
    invocations = [e for e in mine if e.get("invocation")]
    jobs = max(1, scenario.executions)
    ticks = [i for i in invocations if i["role"] == "dispatcher"]
    by_op: dict[tuple[str, str], Units] = {}
    empty_receives = 0
    for call in calls:
        if call["op"] == "sqs:ReceiveMessage" and not call.get("messages"):
            empty_receives += 1
            continue
        by_op.setdefault((_who(call), call["op"]), Units()).add(_units(call, sizes, put_sizes))
    # The dispatcher's fixed cost per tick is not the jobs': subtract what idle ticks make.
    for op, per_tick in idle["units_per_tick"].items():
        by_op.setdefault(("dispatcher", op), Units()).add(Units(**per_tick), factor=-len(ticks))
    # Its share of the later ticks that read its sent trigger again (see _rescans).
    for op, share in rescans.items():
        by_op.setdefault(("dispatcher", f"{op} re-read"), Units()).add(share, factor=jobs)
    by_op = {key: units for key, units in by_op.items() if units.requests >= 0.0005 * jobs}
    requests_per_job: dict[str, dict[str, float]] = {"api": {}, "dispatcher": {}, "worker": {}, "esm": {}}
    capacity: dict[str, dict[str, float]] = {}
    total = Units()
    for (who, op), units in sorted(by_op.items()):
        requests_per_job[who][op] = round(units.requests / jobs, 3)
        if op.startswith("dynamodb:"):
            capacity[f"{who} {op}"] = units.per(jobs)
            total.add(units)
    worker_invocations = [i for i in invocations if i["role"] == "worker"]
    api_invocations = [i for i in invocations if i["role"] == "api" and i.get("method") == "POST"]
    dispatcher_seconds = max(0.0, sum(t["duration"] for t in ticks) - len(ticks) * idle["seconds_per_tick"])
    intervals = {"api": scenario.api, "dispatcher": scenario.dispatcher, "worker": scenario.worker}
    log_bytes = {
        role: sum(size for t, size in logs.get(role, []) if _inside(t, intervals[role])) for role in ROLES
    }
    return {
        "repetition": scenario.repetition,
        "executions": scenario.executions,
        "creates": scenario.creates,
        "dispatcher_ticks": len(ticks),
        "intervals": {k: [[round(a, 1), round(b, 1)] for a, b in v] for k, v in intervals.items() if v},
        "recorded_calls_total": len(calls),
        "empty_receives_excluded": empty_receives,
        "requests_per_job": requests_per_job,
        "dynamodb_capacity_per_job": {
            "rcu": round(total.rcu / jobs, 2),
            "wcu": round(total.wcu / jobs, 2),
            "reported_rcu": round(total.reported_rcu / jobs, 2),
            "reported_wcu": round(total.reported_wcu / jobs, 2),
        },
        "dynamodb_capacity_per_job_by_operation": capacity,
        "worker_invocations": len(worker_invocations),
        "worker_records_per_invocation": round(
            sum(i["records"] for i in worker_invocations) / max(1, len(worker_invocations)), 2
        ),
        "worker_seconds_per_job": round(sum(i["duration"] for i in worker_invocations) / jobs, 3),
        "worker_cpu_seconds_per_job": round(_busy_cpu(worker_invocations) / jobs, 4),
        "dispatcher_seconds_per_job": round(dispatcher_seconds / jobs, 4),
        "api_creates": len(api_invocations),
        "api_seconds_per_create": round(
            sum(i["duration"] for i in api_invocations) / max(1, len(api_invocations)), 4
        ),
        "log_bytes_per_job": {r: round(b / jobs) for r, b in log_bytes.items()},
        # Due time minus arrival at the worker, ms, per outcome line: what the worker's billed
        # duration (worker_seconds_per_job, measured) spends waiting.
        "hold_ms": hold_summary(_holds_of(scenario, outcomes or [])),
        **scenario.extra,
    }


def _busy_cpu(invocations: list[dict[str, Any]]) -> float:
    """CPU seconds the role's process spent on its invocations: overlapping invocations are merged
    into one span, whose CPU is the process clock's advance over it (every thread: the records'
    threads, their heartbeats) less what the bench's own recording and the local event source
    mapping's requests took meanwhile (``bench.timed_role``: on AWS neither runs in the function)."""
    spans: list[list[float]] = []  # [start, end, cpu at start, cpu at end, overhead at start, at end]
    for invocation in sorted(invocations, key=lambda i: i["t"]):
        if "cpu_start" not in invocation:
            continue
        if spans and invocation["t"] <= spans[-1][1]:
            last = spans[-1]
            if invocation["t_end"] > last[1]:
                last[1], last[3] = invocation["t_end"], invocation["cpu_end"]
                last[5] = invocation.get("overhead_end", 0.0)
        else:
            spans.append(
                [
                    invocation["t"],
                    invocation["t_end"],
                    invocation["cpu_start"],
                    invocation["cpu_end"],
                    invocation.get("overhead_start", 0.0),
                    invocation.get("overhead_end", 0.0),
                ]
            )
    return sum(
        (cpu_end - cpu_start) - (over_end - over_start)
        for _s, _e, cpu_start, cpu_end, over_start, over_end in spans
    )


def _dollars(figures: dict[str, Any], *, include_create: bool) -> dict[str, Any]:
    """Dollars per million jobs, by service, from the per-job figures of one scenario. DynamoDB
    on demand is billed per request unit: one per capacity unit consumed (the computed ones)."""
    requests = figures["requests_per_job"]
    wcu = figures["dynamodb_capacity_per_job"]["wcu"]
    rcu = figures["dynamodb_capacity_per_job"]["rcu"]
    sqs_function = sum(
        n
        for who in ("api", "dispatcher", "worker")
        for op, n in requests[who].items()
        if op.startswith("sqs:")
    )
    sqs_esm = sum(requests["esm"].values())
    worker_invocations = figures["worker_invocations"] / max(1, figures["executions"])
    gb_seconds = (
        figures["worker_seconds_per_job"] * prices.MEMORY_GB["worker"]
        + figures["dispatcher_seconds_per_job"] * prices.MEMORY_GB["dispatcher"]
    )
    api_requests = 0.0
    if include_create:
        gb_seconds += (
            figures["api_seconds_per_create"]
            * prices.MEMORY_GB["api"]
            * figures["api_creates"]
            / max(1, figures["executions"])
        )
        # API calls, not jobs: a batch creates up to a hundred jobs in one.
        api_requests = figures["api_creates"] / max(1, figures["executions"])
    log_bytes = sum(figures["log_bytes_per_job"].values())
    million = 1e6
    lines = {
        "dynamodb_writes": wcu * prices.DYNAMODB_WRITE_REQUEST_UNIT * million,
        "dynamodb_reads": rcu * prices.DYNAMODB_READ_REQUEST_UNIT * million,
        "sqs_function_requests": sqs_function * prices.SQS_REQUEST * million,
        "sqs_event_source_mapping": sqs_esm * prices.SQS_REQUEST * million,
        "lambda_requests": (worker_invocations + api_requests) * prices.LAMBDA_REQUEST * million,
        "lambda_duration": gb_seconds * prices.LAMBDA_GB_SECOND_ARM64 * million,
        # The default deployment (IAM) serves an HTTP API; one with API keys a REST API (below).
        "api_gateway": api_requests * prices.API_GATEWAY_HTTP_REQUEST * million,
        "cloudwatch_logs": log_bytes / 1e9 * prices.CLOUDWATCH_LOGS_INGESTED_GB * million,
    }
    aws_requests = (
        sum(n for who in ("api", "dispatcher", "worker") for n in requests[who].values())
        + sqs_esm
        + worker_invocations
        + 2 * api_requests  # the API Gateway request and the api invocation
    )
    return {
        "aws_requests_per_job": round(aws_requests, 2),
        "dynamodb_requests_per_job": round(
            sum(n for ops in requests.values() for op, n in ops.items() if op.startswith("dynamodb:")), 2
        ),
        "wcu_per_job": round(wcu, 2),
        "rcu_per_job": round(rcu, 2),
        "sqs_requests_per_job": round(sqs_function + sqs_esm, 2),
        "lambda_gb_seconds_per_job": round(gb_seconds, 4),
        "usd_per_million_jobs": {k: round(v, 2) for k, v in lines.items()},
        "usd_per_million_jobs_total": round(sum(lines.values()), 2),
        "usd_per_million_jobs_without_logs": round(sum(lines.values()) - lines["cloudwatch_logs"], 2),
        "usd_per_million_jobs_total_api_key_mode": round(
            sum(lines.values())
            + api_requests * (prices.API_GATEWAY_REST_REQUEST - prices.API_GATEWAY_HTTP_REQUEST) * million,
            2,
        ),
    }


def _idle(
    events: list[dict[str, Any]],
    warmup_until: float,
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
) -> dict[str, Any]:
    ticks = _idle_ticks(events, warmup_until)
    n = max(1, len(ticks))
    by_op: dict[str, Units] = {}
    for tick in ticks:
        for call in tick["calls"]:
            by_op.setdefault(call["op"], Units()).add(_units(call, sizes, put_sizes))
    units_per_tick = {op: {k: v / n for k, v in vars(units).items()} for op, units in sorted(by_op.items())}
    requests = {op: round(u["requests"], 2) for op, u in units_per_tick.items()}
    wcu = sum(u["wcu"] for u in units_per_tick.values())
    rcu = sum(u["rcu"] for u in units_per_tick.values())
    seconds = sum(t["tick"]["duration"] for t in ticks) / n
    scale = AWS_SHARDS / SHARDS
    month_requests = sum(requests.values()) * scale * TICKS_PER_MONTH
    month = {
        "dynamodb": (wcu * prices.DYNAMODB_WRITE_REQUEST_UNIT + rcu * prices.DYNAMODB_READ_REQUEST_UNIT)
        * scale
        * TICKS_PER_MONTH,
        "lambda": TICKS_PER_MONTH
        * (prices.LAMBDA_REQUEST + seconds * prices.MEMORY_GB["dispatcher"] * prices.LAMBDA_GB_SECOND_ARM64),
    }
    return {
        "idle_ticks_measured": len(ticks),
        "requests_per_tick": requests,
        "wcu_per_tick": round(wcu, 2),
        "rcu_per_tick": round(rcu, 2),
        "reported_wcu_per_tick": round(sum(u["reported_wcu"] for u in units_per_tick.values()), 2),
        "reported_rcu_per_tick": round(sum(u["reported_rcu"] for u in units_per_tick.values()), 2),
        "units_per_tick": units_per_tick,
        "seconds_per_tick": round(seconds, 4),
        "shards": SHARDS,
        "per_month_on_aws": {
            "assumes": f"{AWS_SHARDS} shards (requests scale with shards), a tick a minute,"
            " tick durations as measured here",
            "requests": round(month_requests),
            "usd": {k: round(v, 2) for k, v in month.items()},
        },
    }


# Headline figures of a scenario: each as the median over the repetitions, with the spread.
HEADLINE = (
    "aws_requests_per_job",
    "dynamodb_requests_per_job",
    "wcu_per_job",
    "rcu_per_job",
    "sqs_requests_per_job",
    "lambda_gb_seconds_per_job",
    "usd_per_million_jobs_total",
)


def _aggregate(runs: list[dict[str, Any]], pooled: dict[str, Any]) -> dict[str, Any]:
    """A scenario over its repetitions: the median of every figure (``median``), the spread of the
    headline ones, the pooled figures (all repetitions' jobs together) and each run. The hold's
    medians are over the repetitions that logged an outcome (``hold_median``), not ``median_tree``'s."""
    median = median_tree(runs)
    holds = [r.get("hold_ms") or {} for r in runs]
    median["hold_ms"] = hold_median(holds)
    spreads = {key: spread((r["cost"][key] for r in runs), 2) for key in HEADLINE}
    spreads["hold_ms_median"] = spread((h.get("median") for h in holds), 1)
    spreads["hold_ms_p99"] = spread((h.get("p99") for h in holds), 1)
    return {
        "repetitions": len(runs),
        "executions": sum(r["executions"] for r in runs),
        "spread": spreads,
        "median": median,
        "pooled": pooled,
        "runs": runs,
    }


CAPACITY_NOTE = (
    "rcu/wcu: computed from the item sizes by DynamoDB's rules (1 WCU per KB written per item, 2 in a"
    " transaction; 1 RCU per 4 KB read strongly consistent, half eventually consistent, 2 in a"
    " transaction); they price the jobs. reported_*: the ConsumedCapacity the emulator answered"
    " (ReturnConsumedCapacity=TOTAL on every request): moto reports a fixed figure per request"
    " (0.5 per GetItem and UpdateItem, 1 per PutItem, DeleteItem, Query and BatchWriteItem whatever the"
    " size, 1 per key of a BatchGetItem) and nothing for TransactWriteItems, so they are shown, not used."
)


def run(
    *,
    one_off: int = 60,
    soon: int = 40,
    crons: int = 20,
    cron_ticks: int = 1,
    repetitions: int = 3,
    seed: int = 7,
) -> dict[str, Any]:
    began = time.monotonic()
    rng = random.Random(seed)
    with timed_stack() as stack, Receiver() as receiver:
        # Warm-up: the first tick sweeps the catch-up horizon from an empty cursor; not typical.
        warmup = _next_tick(stack, 0)
        warmup_until = warmup[1]
        _next_tick(stack, warmup_until)  # an idle tick: what a tick costs with nothing in its window
        stack.counters(reset=True)
        counted_since = time.time()
        scenarios = _one_offs(stack, receiver, repetitions, one_off, soon, rng, warmup)
        log(f"cost: {repetitions} x {one_off} jobs due in a minute, created {BATCH} a request")
        now = time.time()
        scenarios += _one_offs(
            stack, receiver, repetitions, one_off, 0, rng, (now, now + 10), "one_off_batch"
        )
        log(f"cost: {crons} crons every 10 s, {repetitions} x {cron_ticks} tick(s) in steady state")
        scenarios += _recurring(stack, receiver, repetitions, crons, cron_ticks)
        log(f"cost: the same crons with issue 14's controls on, {repetitions} x {cron_ticks} tick(s)")
        scenarios += _recurring(
            stack, receiver, repetitions, crons, cron_ticks, name="recurring_controls", controls=True
        )
        counters = stack.counters()
        counted_until = time.time()
        time.sleep(1)
        events = stack.events(0, time.time() + 1)
        sizes, kinds = _table_sizes(stack.settings)
        logs = {role: _log_lines(stack.workdir / f"{role}.log") for role in ROLES}
        outcomes = _outcome_lines(stack.workdir / "worker.log")
    put_sizes: dict[tuple[str, str], int] = {}
    for event in events:
        for pk, sk, action, size in event.get("writes", []):
            if action == "put" and size:
                put_sizes[(pk, sk)] = max(size, put_sizes.get((pk, sk), 0))
    idle = _idle(events, warmup_until, sizes, put_sizes)
    rescans = _rescans(events, warmup_until, scenarios, idle, sizes, put_sizes)
    # the create is counted
    names = {
        "one_off_ahead": True,
        "one_off_soon": True,
        "one_off_batch": True,
        "recurring": False,
        "recurring_controls": False,
    }
    result_scenarios: dict[str, Any] = {}
    for name, include_create in names.items():
        runs = []
        for scenario in (s for s in scenarios if s.name == name):
            figures = _analyse(scenario, events, idle, sizes, put_sizes, logs, rescans, outcomes)
            figures["cost"] = _dollars(figures, include_create=include_create)
            figures["hold_ms"] = figures.pop("hold_ms")  # beside the cost it explains
            runs.append(figures)
        mine = [s for s in scenarios if s.name == name]
        together = Scenario(
            name,
            -1,
            mine[0].tag[: -len(str(mine[0].repetition)) - 1] if mine[0].tag else None,
            dispatcher=[i for s in mine for i in s.dispatcher],
            worker=[i for s in mine for i in s.worker],
            api=[i for s in mine for i in s.api],
            creates=sum(s.creates for s in mine),
            executions=sum(s.executions for s in mine),
            jobs={job for s in mine for job in s.jobs},
            jobs_shared=mine[0].jobs_shared,
        )
        pooled = _analyse(together, events, idle, sizes, put_sizes, logs, rescans, outcomes)
        pooled["cost"] = _dollars(pooled, include_create=include_create)
        pooled["hold_ms"] = pooled.pop("hold_ms")
        for key in ("intervals", "repetition"):
            pooled.pop(key, None)
        result_scenarios[name] = _aggregate(runs, pooled)
    # Creating a job: the api's requests for the ahead batches (claimed later by the dispatcher).
    ahead_runs = result_scenarios["one_off_ahead"]["runs"]
    result_scenarios["create_only"] = {
        "requests_per_create": median_tree([r["requests_per_job"]["api"] for r in ahead_runs]),
        "wcu_per_create": median_tree(
            [
                sum(
                    v["wcu"]
                    for k, v in r["dynamodb_capacity_per_job_by_operation"].items()
                    if k[:4] == "api "
                )
                for r in ahead_runs
            ]
        ),
        "api_seconds_per_create": median_tree([r["api_seconds_per_create"] for r in ahead_runs]),
    }
    recorded = sum(1 for e in events if not e.get("invocation") and counted_since <= e["t"] < counted_until)
    # Which answers carried a ConsumedCapacity at all (successful DynamoDB calls; errors never do).
    answered: dict[str, list[int]] = {}
    for event in events:
        if event.get("op", "").startswith("dynamodb:") and event.get("ok"):
            tally = answered.setdefault(event["op"], [0, 0])
            tally[0] += event.get("reported") is not None
            tally[1] += 1
    return {
        "name": "cost",
        "what": "AWS requests and DynamoDB capacity units per executed job by operation and who makes"
        " them, and dollars per million jobs; each scenario repeated, the median of the repetitions",
        "repetitions": repetitions,
        "capacity_units": CAPACITY_NOTE,
        "prices": {"as_of": prices.AS_OF, "region": prices.REGION, "table": prices.TABLE},
        "eventbridge_scheduler_usd_per_million": prices.EVENTBRIDGE_SCHEDULER_INVOCATION * 1e6,
        "config": {
            "repetitions": repetitions,
            "tick_seconds": TICK_SECONDS,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "shards": SHARDS,
            "worker_pollers": 4,
            "one_off_ahead_jobs": one_off,
            "one_off_soon_jobs": soon,
            "crons": crons,
            "cron_ticks_per_repetition": cron_ticks,
            "memory_gb": prices.MEMORY_GB,
        },
        "request_count_check": {
            "emulator_requests": sum(counters.values()),
            "recorded_calls": recorded,
            "emulator_requests_by_operation": dict(sorted(counters.items())),
        },
        "consumed_capacity_in_answers": {
            op: round(with_capacity / total, 2) for op, (with_capacity, total) in sorted(answered.items())
        },
        "item_sizes": kinds,
        "idle_sweep": idle,
        "rescans_per_job": {
            "what": "per executed job, what later ticks spent reading its sent trigger again (the query"
            f" and the check that its run exists), beyond an idle tick; here a tick every {TICK_SECONDS} s"
            f" with a {LOOKAHEAD_SECONDS} s look-ahead reads a trigger in about"
            f" {(LOOKAHEAD_SECONDS + 60) // TICK_SECONDS} ticks, on AWS (a tick a minute, 120 s) in about 3;"
            " included in every scenario's dispatcher figures",
            "units": {op: units.per(1) for op, units in rescans.items()},
        },
        "hold_ms": "per scenario: due time minus the moment the run's message reached the worker, from"
        " the worker's outcome log lines (negative: it arrived after its due time); what the worker's"
        " billed duration waits out. Each run's figure, the median over the repetitions under"
        " median.hold_ms (spread.hold_ms_median, spread.hold_ms_p99) and all repetitions together under"
        " pooled.hold_ms",
        "worker_outcome_lines": len(outcomes),
        "scenarios": result_scenarios,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def _range(figure: dict[str, Any], unit: str = "") -> str:
    if figure.get("runs", 0) < 2:
        return f"{unit}{figure.get('median')}"
    return f"{unit}{figure['median']} ({unit}{figure['min']}-{unit}{figure['max']})"


def report(result: dict[str, Any]) -> str:
    repetitions = result["config"]["repetitions"]
    lines = [
        f"== cost per executed job (us-east-1 list prices); median of {repetitions} repetitions"
        " (lowest-highest) =="
    ]
    for name, scenario in result["scenarios"].items():
        if "median" not in scenario:
            continue
        median, spread_ = scenario["median"], scenario["spread"]
        capacity = median["dynamodb_capacity_per_job"]
        lines.append(
            f"{name}: {scenario['executions']} executions in {scenario['repetitions']} runs;"
            f" AWS requests/job {_range(spread_['aws_requests_per_job'])},"
            f" DynamoDB {_range(spread_['dynamodb_requests_per_job'])} requests,"
            f" WCU {_range(spread_['wcu_per_job'])}, RCU {_range(spread_['rcu_per_job'])} (computed;"
            f" reported by the emulator: WCU {capacity['reported_wcu']}, RCU {capacity['reported_rcu']}),"
            f" SQS {_range(spread_['sqs_requests_per_job'])},"
            f" {_range(spread_['lambda_gb_seconds_per_job'])} GB-s"
            f" -> {_range(spread_['usd_per_million_jobs_total'], '$')} per million"
        )
        for who, ops in median["requests_per_job"].items():
            if ops:
                lines.append(f"    {who:<10} " + ", ".join(f"{op} {n:g}" for op, n in ops.items() if n))
        lines.append(
            "    DynamoDB per job: requests, computed RCU / WCU | reported by the emulator RCU / WCU"
        )
        answered = result["consumed_capacity_in_answers"]
        for op, units in median["dynamodb_capacity_per_job_by_operation"].items():
            if not units["requests"]:
                continue
            share = answered.get(op.split(" ", 1)[1], 0.0)
            reported = (
                "none reported"
                if share == 0
                else f"{units['reported_rcu']:g} / {units['reported_wcu']:g}"
                + ("" if share == 1 else f" ({share:.0%} of answers)")
            )
            lines.append(
                f"      {op:<38} {units['requests']:6g}   {units['rcu']:6g} / {units['wcu']:<6g} | {reported}"
            )
        lines.append(
            "    $/M (medians): "
            + ", ".join(f"{k} {v:g}" for k, v in median["cost"]["usd_per_million_jobs"].items())
        )
        lines.append("    " + hold_line(scenario))
    idle = result["idle_sweep"]
    lines.append(
        f"idle sweep: {idle['requests_per_tick']} per tick ({idle['shards']} shards),"
        f" {idle['rcu_per_tick']} RCU + {idle['wcu_per_tick']} WCU computed;"
        f" per month on AWS: {idle['per_month_on_aws']['usd']}"
    )
    check = result["request_count_check"]
    lines.append(
        f"requests counted by the emulator {check['emulator_requests']},"
        f" by the hooks {check['recorded_calls']}"
    )
    lines.append("capacity units: " + result["capacity_units"])
    lines.append(
        "EventBridge Scheduler for comparison:"
        f" ${result['eventbridge_scheduler_usd_per_million']:g} per million"
    )
    return "\n".join(lines)


def hold_line(scenario: dict[str, Any]) -> str:
    """The worker's billed duration (measured) and the hold it waits out, as one line of text."""
    median = scenario["median"]
    billed = (
        f"worker {median['worker_seconds_per_job']:g} s a job billed (measured invocations,"
        f" ${median['cost']['usd_per_million_jobs']['lambda_duration']:g}/M of Lambda duration with the"
        " dispatcher's and the api's)"
    )
    hold = median.get("hold_ms")
    if hold is None:
        return billed + "; hold: not measured (a result from before the worker logged it)"
    if not hold.get("count"):
        return billed + "; hold: no outcome line with a hold"
    spread_ = scenario["spread"]
    return (
        billed + f"; hold (due time - arrival at the worker, ms): median"
        f" {_range(spread_['hold_ms_median'])}, p99 {_range(spread_['hold_ms_p99'])},"
        f" min {hold['min']:g}, max {hold['max']:g} (medians of the runs; {hold['count']:g} lines a run)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--jobs", type=int, default=60, help="one-off jobs created beyond the look-ahead, per repetition"
    )
    parser.add_argument(
        "--soon", type=int, default=40, help="one-off jobs due within seconds, per repetition"
    )
    parser.add_argument("--crons", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write cost.json (default bench/results/)"
    )
    args = parser.parse_args()
    if args.out is not None:
        common.RESULTS = args.out
    result = run(one_off=args.jobs, soon=args.soon, crons=args.crons, repetitions=args.repetitions)
    write_json("cost", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()

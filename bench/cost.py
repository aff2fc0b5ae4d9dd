"""Cost per job: the AWS requests the engine makes for each executed job, turned into dollars.

The stack runs as separate processes like ``punctual local`` (emulator, api, dispatcher, one worker
with four SQS pollers), but each role is ``bench.timed_role``: the real role plus a record of every
AWS call it makes (inside a handler, or by the event source mapping around it) and of each handler
invocation's duration. The emulator's own request counter (``/_punctual/requests``) is reset before
and read after each measured window and gives the totals; the role records say who made them.

Three scenarios, one after the other on the same stack:

- ``one_off_ahead``: one-off jobs created more than the look-ahead before their time (the usual
  case: "call this at 13:00:05" made well in advance), so the dispatcher claims them;
- ``one_off_soon``: one-off jobs due a few seconds after they are created, claimed and sent by the
  api at once;
- ``recurring``: crons every 10 s in steady state (a claim writes the next occurrence).

The dispatcher's sweep costs the same per tick whether there is work or not; that fixed cost is
measured on idle ticks, subtracted from the per-job figures and reported per month instead. The
local SQS pollers long-poll with a 2 s wait, so their empty receives say nothing about AWS (Lambda's
event source mapping polls on its own schedule); receives that returned messages and the deletes
that follow are counted per job, empty ones are reported apart.

    python -m bench.cost
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

from bench import prices
from bench.common import Api, Receiver, emulator, log, machine, write_json
from functions.core import aws
from functions.core.model import iso
from functions.core.settings import Settings
from punctual.local.env import LOCAL_CREDENTIALS, local_settings
from punctual.local.provision import provision
from punctual.local.supervisor import free_port

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


@dataclass
class Window:
    name: str
    since: float
    until: float
    executions: int
    creates: int
    counters: dict[str, int]
    log_bytes: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)


def _wait_for_dispatcher_ticks(stack: TimedStack, count: int, since: float, timeout: float = 60) -> float:
    """Wait until ``count`` dispatcher invocations have finished after ``since``; the last one's end."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ticks = [
            e
            for e in stack.events(since, time.time() + 1)
            if e["role"] == "dispatcher" and e.get("invocation")
        ]
        if len(ticks) >= count:
            return float(ticks[count - 1]["t_end"])
        time.sleep(0.2)
    raise TimeoutError("the dispatcher did not tick")


def _wait_delivered(receiver: Receiver, paths: set[str], timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and not paths <= set(receiver.by_path()):
        time.sleep(0.2)


def _one_offs(
    stack: TimedStack,
    receiver: Receiver,
    name: str,
    count: int,
    due_after: tuple[float, float],
    rng: random.Random,
) -> Window:
    """``count`` one-off jobs, each due ``due_after`` seconds (a range) after its creation."""
    stack.counters(reset=True)
    since = time.time()
    logs_before = stack.log_bytes()
    paths = set()
    for n in range(count):
        due = datetime.fromtimestamp(round(time.time() + rng.uniform(*due_after), 3), UTC)
        path = f"/{name}/{n}"
        stack.api.create(
            {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": receiver.url + path}}
        )
        paths.add(path)
    created = time.time()
    create_counters = stack.counters()
    _wait_delivered(receiver, paths, timeout=due_after[1] + 60)
    time.sleep(2)  # the records of the outcome, the deletes of the last batch
    until = time.time()
    counters = stack.counters()
    logs_after = stack.log_bytes()
    delivered = sum(1 for p in paths if p in receiver.by_path())
    return Window(
        name,
        since,
        until,
        delivered,
        count,
        counters,
        {r: logs_after[r] - logs_before[r] for r in ROLES},
        {"create_window_until": created, "create_counters": create_counters, "jobs": count},
    )


def _recurring(stack: TimedStack, receiver: Receiver, count: int, ticks: int) -> Window:
    """``count`` crons every 10 s; measured over ``ticks`` whole dispatcher ticks in steady state."""
    jobs = []
    for k in range(count):
        job = stack.api.create(
            {
                "schedule": {"cron": f"{k % 10}/10 * * * * *"},
                "target": {"type": "http", "url": receiver.url + f"/cron/{k}"},
            }
        )
        jobs.append(job["job_id"])
    # The first tick after creation claims everything within the look-ahead (the pipeline fills);
    # from then on each tick claims one occurrence per cron. Measure from the end of that tick.
    since = _wait_for_dispatcher_ticks(stack, 1, since=time.time()) + 0.2
    stack.counters(reset=True)
    logs_before = stack.log_bytes()
    arrivals_before = len(receiver.snapshot())
    time.sleep(ticks * TICK_SECONDS)
    until = time.time()
    counters = stack.counters()
    logs_after = stack.log_bytes()
    executions = sum(1 for a in receiver.snapshot() if since <= a.received_at < until)
    for job_id in jobs:
        stack.api.call("DELETE", f"/v1/jobs/{job_id}")
    return Window(
        "recurring",
        since,
        until,
        executions,
        0,
        counters,
        {r: logs_after[r] - logs_before[r] for r in ROLES},
        {"crons": count, "every_seconds": 10, "arrivals_before": arrivals_before},
    )


# ------------------------------------------------------------------------------------- analysis


def _kind(pk: str, sk: str) -> str:
    if pk.startswith("T#"):
        return "trigger"
    if pk.startswith("JOB#"):
        return "job" if sk == "JOB" else "run"
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


def _wru(
    event: dict[str, Any], sizes: dict[tuple[str, str], int], put_sizes: dict[tuple[str, str], int]
) -> float:
    """Write request units of one write: per item and KB, doubled in a transaction. An update is
    sized by the item as it is now (after every later write too: a slight overestimate)."""
    total = 0.0
    for pk, sk, _action, size in event.get("writes", []):
        key = (pk, sk)
        known = max(size or 0, sizes.get(key, 0), put_sizes.get(key, 0)) or 100
        total += max(1, math.ceil(known / 1024)) * (2 if event.get("tx") else 1)
    return total


def _idle_ticks(events: list[dict[str, Any]], warmup_until: float) -> list[dict[str, Any]]:
    """Dispatcher invocations after the warm-up that claimed nothing, with the calls they made."""
    calls = [e for e in events if e["role"] == "dispatcher" and not e.get("invocation")]
    ticks = []
    for tick in events:
        if tick["role"] != "dispatcher" or not tick.get("invocation") or tick["t"] < warmup_until:
            continue
        summary = tick.get("summary") or {}
        if summary.get("claimed") or summary.get("sent") or summary.get("stale"):
            continue
        inside = [c for c in calls if tick["t"] <= c["t"] <= tick["t_end"] + 0.001]
        ticks.append({"tick": tick, "calls": inside})
    return ticks


def _analyse_window(
    window: Window,
    events: list[dict[str, Any]],
    idle: dict[str, Any],
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
) -> dict[str, Any]:
    inside = [e for e in events if window.since <= e["t"] < window.until]
    calls = [e for e in inside if not e.get("invocation")]
    invocations = [e for e in inside if e.get("invocation")]
    jobs = max(1, window.executions)
    ticks = [i for i in invocations if i["role"] == "dispatcher"]
    # Requests by who made them: api / dispatcher / worker (handler) / esm (the SQS poller).
    by_who: dict[str, dict[str, float]] = {"api": {}, "dispatcher": {}, "worker": {}, "esm": {}}
    empty_receives = 0
    wru = {"api": 0.0, "dispatcher": 0.0, "worker": 0.0}
    rru = {"api": 0.0, "dispatcher": 0.0, "worker": 0.0}
    for call in calls:
        who = "esm" if call["role"] == "worker" and call["ctx"] == "outside" else call["role"]
        if call["op"] == "sqs:ReceiveMessage" and not call.get("messages"):
            empty_receives += 1
            continue
        by_who[who][call["op"]] = by_who[who].get(call["op"], 0) + 1
        if who in wru:
            wru[who] += _wru(call, sizes, put_sizes)
            rru[who] += float(call.get("rru", 0.0))
    # The dispatcher's fixed cost per tick is not the jobs': subtract what idle ticks make.
    n_ticks = len(ticks)
    for op, mean in idle["requests_per_tick"].items():
        if op in by_who["dispatcher"]:
            by_who["dispatcher"][op] = max(0.0, by_who["dispatcher"][op] - n_ticks * mean)
    wru["dispatcher"] = max(0.0, wru["dispatcher"] - n_ticks * idle["wru_per_tick"])
    rru["dispatcher"] = max(0.0, rru["dispatcher"] - n_ticks * idle["rru_per_tick"])
    worker_invocations = [i for i in invocations if i["role"] == "worker"]
    api_invocations = [i for i in invocations if i["role"] == "api" and i.get("method") == "POST"]
    dispatcher_seconds = max(0.0, sum(t["duration"] for t in ticks) - n_ticks * idle["seconds_per_tick"])
    per_job = {
        who: {op: round(n / jobs, 3) for op, n in sorted(ops.items()) if n} for who, ops in by_who.items()
    }
    hook_total = sum(1 for c in calls) + 0
    emulator_total = sum(window.counters.values())
    return {
        "window_seconds": round(window.until - window.since, 1),
        "executions": window.executions,
        "creates": window.creates,
        "dispatcher_ticks": n_ticks,
        "emulator_requests": dict(sorted(window.counters.items())),
        "emulator_requests_total": emulator_total,
        "recorded_calls_total": hook_total,
        "empty_receives_excluded": empty_receives,
        "requests_per_job": per_job,
        "wru_per_job": {who: round(v / jobs, 2) for who, v in wru.items()},
        "rru_per_job": {who: round(v / jobs, 2) for who, v in rru.items()},
        "worker_invocations": len(worker_invocations),
        "worker_records_per_invocation": round(
            sum(i["records"] for i in worker_invocations) / max(1, len(worker_invocations)), 2
        ),
        "worker_seconds_per_job": round(sum(i["duration"] for i in worker_invocations) / jobs, 3),
        "worker_invocation_seconds": _spread([i["duration"] for i in worker_invocations]),
        "dispatcher_seconds_per_job": round(dispatcher_seconds / jobs, 4),
        "api_creates": len(api_invocations),
        "api_seconds_per_create": round(
            sum(i["duration"] for i in api_invocations) / max(1, len(api_invocations)), 4
        ),
        "log_bytes_per_job": {r: round(b / jobs) for r, b in window.log_bytes.items()},
        **window.extra,
    }


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 3),
        "p90": round(ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)], 3),
        "max": round(ordered[-1], 3),
    }


def _dollars(figures: dict[str, Any], *, include_create: bool) -> dict[str, Any]:
    """Dollars per million jobs, by service, from the per-job figures of one scenario."""
    requests = figures["requests_per_job"]
    wru = sum(figures["wru_per_job"].values())
    rru = sum(figures["rru_per_job"].values())
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
            * figures["creates"]
            / max(1, figures["executions"])
        )
        api_requests = figures["creates"] / max(1, figures["executions"])
    log_bytes = sum(figures["log_bytes_per_job"].values())
    million = 1e6
    lines = {
        "dynamodb_writes": wru * prices.DYNAMODB_WRITE_REQUEST_UNIT * million,
        "dynamodb_reads": rru * prices.DYNAMODB_READ_REQUEST_UNIT * million,
        "sqs_function_requests": sqs_function * prices.SQS_REQUEST * million,
        "sqs_event_source_mapping": sqs_esm * prices.SQS_REQUEST * million,
        "lambda_requests": (worker_invocations + api_requests) * prices.LAMBDA_REQUEST * million,
        "lambda_duration": gb_seconds * prices.LAMBDA_GB_SECOND_ARM64 * million,
        "api_gateway": api_requests * prices.API_GATEWAY_REST_REQUEST * million,
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
        "wru_per_job": round(wru, 2),
        "rru_per_job": round(rru, 2),
        "sqs_requests_per_job": round(sqs_function + sqs_esm, 2),
        "lambda_gb_seconds_per_job": round(gb_seconds, 4),
        "usd_per_million_jobs": {k: round(v, 2) for k, v in lines.items()},
        "usd_per_million_jobs_total": round(sum(lines.values()), 2),
        "usd_per_million_jobs_without_logs": round(sum(lines.values()) - lines["cloudwatch_logs"], 2),
    }


def _idle(
    events: list[dict[str, Any]],
    warmup_until: float,
    sizes: dict[tuple[str, str], int],
    put_sizes: dict[tuple[str, str], int],
) -> dict[str, Any]:
    ticks = _idle_ticks(events, warmup_until)
    n = max(1, len(ticks))
    ops: dict[str, float] = {}
    for tick in ticks:
        for call in tick["calls"]:
            ops[call["op"]] = ops.get(call["op"], 0) + 1
    requests = {op: round(v / n, 2) for op, v in sorted(ops.items())}
    wru = sum(_wru(c, sizes, put_sizes) for t in ticks for c in t["calls"]) / n
    rru = sum(float(c.get("rru", 0.0)) for t in ticks for c in t["calls"]) / n
    seconds = sum(t["tick"]["duration"] for t in ticks) / n
    scale = AWS_SHARDS / SHARDS
    month_requests = sum(requests.values()) * scale * TICKS_PER_MONTH
    month = {
        "dynamodb": (wru * prices.DYNAMODB_WRITE_REQUEST_UNIT + rru * prices.DYNAMODB_READ_REQUEST_UNIT)
        * scale
        * TICKS_PER_MONTH,
        "lambda": TICKS_PER_MONTH
        * (prices.LAMBDA_REQUEST + seconds * prices.MEMORY_GB["dispatcher"] * prices.LAMBDA_GB_SECOND_ARM64),
    }
    return {
        "idle_ticks_measured": len(ticks),
        "requests_per_tick": requests,
        "wru_per_tick": round(wru, 2),
        "rru_per_tick": round(rru, 2),
        "seconds_per_tick": round(seconds, 4),
        "shards": SHARDS,
        "per_month_on_aws": {
            "assumes": f"{AWS_SHARDS} shards (requests scale with shards), a tick a minute,"
            " tick durations as measured here",
            "requests": round(month_requests),
            "usd": {k: round(v, 2) for k, v in month.items()},
        },
    }


def run(
    *, one_off: int = 200, soon: int = 100, crons: int = 20, cron_ticks: int = 3, seed: int = 7
) -> dict[str, Any]:
    began = time.monotonic()
    rng = random.Random(seed)
    with timed_stack() as stack, Receiver() as receiver:
        # Warm-up: the first tick sweeps the catch-up horizon from an empty cursor; not typical.
        warmup_until = _wait_for_dispatcher_ticks(stack, 2, since=0)
        log("cost: one-off jobs due within seconds (claimed by the api)")
        soon_window = _one_offs(stack, receiver, "soon", soon, (4.0, 9.0), rng)
        log("cost: one-off jobs created beyond the look-ahead (claimed by the dispatcher)")
        ahead_window = _one_offs(
            stack, receiver, "ahead", one_off, (LOOKAHEAD_SECONDS + 2.0, LOOKAHEAD_SECONDS + 6.0), rng
        )
        log(f"cost: {crons} crons every 10 s, {cron_ticks} ticks in steady state")
        cron_window = _recurring(stack, receiver, crons, cron_ticks)
        time.sleep(1)
        events = stack.events(0, time.time() + 1)
        sizes, kinds = _table_sizes(stack.settings)
    put_sizes: dict[tuple[str, str], int] = {}
    for event in events:
        for pk, sk, action, size in event.get("writes", []):
            if action == "put" and size:
                put_sizes[(pk, sk)] = max(size, put_sizes.get((pk, sk), 0))
    idle = _idle(events, warmup_until, sizes, put_sizes)
    scenarios: dict[str, Any] = {}
    for window, include_create in ((ahead_window, True), (soon_window, True), (cron_window, False)):
        figures = _analyse_window(window, events, idle, sizes, put_sizes)
        figures["cost"] = _dollars(figures, include_create=include_create)
        scenarios[window.name] = figures
    # Creating a job (ahead): the api's requests during the create phase only.
    ahead = scenarios["ahead"]
    create_calls = [
        e
        for e in events
        if e["role"] == "api"
        and not e.get("invocation")
        and ahead_window.since <= e["t"] < ahead["create_window_until"]
    ]
    create_ops: dict[str, int] = {}
    for call in create_calls:
        create_ops[call["op"]] = create_ops.get(call["op"], 0) + 1
    scenarios["create_only"] = {
        "requests_per_create": {op: round(n / one_off, 2) for op, n in sorted(create_ops.items())},
        "wru_per_create": round(sum(_wru(c, sizes, put_sizes) for c in create_calls) / one_off, 2),
        "api_seconds_per_create": ahead["api_seconds_per_create"],
    }
    renamed = {
        "one_off_ahead": scenarios["ahead"],
        "one_off_soon": scenarios["soon"],
        "recurring": scenarios["recurring"],
        "create_only": scenarios["create_only"],
    }
    return {
        "name": "cost",
        "what": "AWS requests per executed job by operation and who makes them, and dollars per million jobs",
        "prices": {"as_of": prices.AS_OF, "region": prices.REGION, "table": prices.TABLE},
        "eventbridge_scheduler_usd_per_million": prices.EVENTBRIDGE_SCHEDULER_INVOCATION * 1e6,
        "config": {
            "tick_seconds": TICK_SECONDS,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "shards": SHARDS,
            "worker_pollers": 4,
            "one_off_ahead_jobs": one_off,
            "one_off_soon_jobs": soon,
            "crons": crons,
            "cron_ticks_measured": cron_ticks,
            "memory_gb": prices.MEMORY_GB,
        },
        "item_sizes": kinds,
        "idle_sweep": idle,
        "scenarios": renamed,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def report(result: dict[str, Any]) -> str:
    lines = ["== cost per executed job (us-east-1 list prices) =="]
    for name, figures in result["scenarios"].items():
        if "cost" not in figures:
            continue
        cost = figures["cost"]
        lines.append(
            f"{name}: {figures['executions']} executions, {cost['aws_requests_per_job']} AWS requests/job,"
            f" {cost['wru_per_job']} WRU, {cost['rru_per_job']} RRU, {cost['sqs_requests_per_job']} SQS,"
            f" {cost['lambda_gb_seconds_per_job']} GB-s -> ${cost['usd_per_million_jobs_total']} per million"
            f" (${cost['usd_per_million_jobs_without_logs']} without logs)"
        )
        for who, ops in figures["requests_per_job"].items():
            if ops:
                lines.append(f"    {who:<10} " + ", ".join(f"{op} {n:g}" for op, n in ops.items()))
        lines.append("    $/M: " + ", ".join(f"{k} {v:g}" for k, v in cost["usd_per_million_jobs"].items()))
    idle = result["idle_sweep"]
    lines.append(
        f"idle sweep: {idle['requests_per_tick']} per tick ({idle['shards']} shards);"
        f" per month on AWS: {idle['per_month_on_aws']['usd']}"
    )
    lines.append(
        "EventBridge Scheduler for comparison:"
        f" ${result['eventbridge_scheduler_usd_per_million']:g} per million"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=200, help="one-off jobs created beyond the look-ahead")
    parser.add_argument("--soon", type=int, default=100, help="one-off jobs due within seconds")
    parser.add_argument("--crons", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(one_off=args.jobs, soon=args.soon, crons=args.crons)
    write_json("cost", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()

"""The cost benchmark's measurement: the recorded AWS calls and invocations charged to each
scenario, their requests and DynamoDB capacity units (computed from the item sizes by DynamoDB's
rules, and as the emulator reported them), the idle ticks and the re-reads of sent triggers, the
roles' durations, CPU and log bytes per job, and a scenario's figures over its repetitions."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import median_tree, spread
from bench.cost.hold import _holds_of, hold_median, hold_summary
from bench.cost.scenarios import Scenario, _inside
from bench.cost.stack import ROLES
from punctual_functions.core import aws
from punctual_functions.core.settings import Settings

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
    from punctual.scale.sizes import item_size

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
    dispatching = [interval for scenario in scenarios for interval in scenario.dispatcher]
    ticks = [
        tick
        for tick in _quiet_ticks(events, warmup_until)
        if _reads_triggers(tick) and not _inside(tick["tick"]["t"], dispatching)
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

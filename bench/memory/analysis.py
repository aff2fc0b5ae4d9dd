"""The memory benchmark's analysis of one batch: the worker's outcome log lines (hold, lateness,
re-deliveries), the batch's time line around its second (when its records were ready, when its
calls started, when they arrived) and its figures: lateness at arrival and as recorded, the phases,
the worker's CPU per run and the cgroup's throttling."""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bench.memory.arithmetic import BATCH, _quantile, batch_lateness
from bench.memory.stack import LOOKAHEAD_SECONDS

if TYPE_CHECKING:
    from bench.memory.runner import Slot


# What the worker logs when a delivery finds its run started or ended by another one.
REDELIVERY_LINES = (
    "attempt started by another delivery",
    "duplicate delivery ignored",
    "nothing to do for message",
)


def outcome_lines(lines: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The worker's outcome lines (JSON) by job id: ``hold_ms`` and ``lateness_ms`` of "run
    succeeded" / "run failed" / "retry scheduled", and how often a delivery of the job's run found
    it started or done elsewhere (re-deliveries)."""
    out: dict[str, dict[str, Any]] = {}
    for raw in lines:
        if not raw.startswith("{"):
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        job = line.get("job_id")
        if not isinstance(job, str):
            continue
        entry = out.setdefault(job, {"redeliveries": 0})
        message = line.get("message")
        if message in ("run succeeded", "run failed", "retry scheduled"):
            entry["outcome"] = message
            entry["hold_ms"] = line.get("hold_ms")
            entry["lateness_ms"] = line.get("lateness_ms")
        elif message in REDELIVERY_LINES:
            entry["redeliveries"] += 1
    return out


def _ts(text: str) -> float:
    from punctual_functions.core.model import parse_iso

    return parse_iso(text).timestamp()


def phases(
    due: float, waits: Sequence[tuple[float, float]], arrived: Sequence[float], runs: int = BATCH
) -> dict[str, Any]:
    """A batch's time line around its second ``due`` (epoch seconds), from its records' waits for
    the second (``(began, ended)``: ready to call, call started) and its calls' arrivals (ms):

    - ``starts_ms``: each call's start after the second;
    - ``ready_ms``: when the last record was ready, from the second (negative: that much to spare);
    - ``starting_ms``: the last start after the later of the second and that moment (the ten
      threads taking their turns for the CPU once they may call);
    - ``executing_ms``: the last arrival after the same moment (starting, then sending).

    The phases need every run's wait (``runs`` of them); the starts are those there are."""
    starts = sorted(round((ended - due) * 1000, 1) for _, ended in waits)
    out: dict[str, Any] = {"starts_ms": starts, "ready_ms": None, "starting_ms": None, "executing_ms": None}
    if len(waits) < runs:
        return out
    ready = max(began for began, _ in waits)
    free = max(due, ready)
    out["ready_ms"] = round((ready - due) * 1000, 1)
    out["starting_ms"] = round((max(ended for _, ended in waits) - free) * 1000, 1)
    if arrived:
        out["executing_ms"] = round((max(arrived) - free) * 1000, 1)
    return out


def analyse_batch(
    slot: Slot,
    arrivals: Mapping[str, Sequence[Any]],
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    outcomes: Mapping[str, Mapping[str, Any]],
    invocations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One batch's figures (see the module's docstring)."""
    lateness: list[float] = []
    arrived: list[float] = []
    early = duplicates = 0
    for path in slot.paths:
        got = arrivals.get(path, [])
        if not got:
            continue
        duplicates += len(got) - 1
        first = min(got, key=lambda d: d.received_at)
        late = (first.received_at - _ts(first.scheduled_for)) * 1000
        early += late < 0
        lateness.append(late)
        arrived.append(first.received_at)
    recorded = [
        float(r["lateness_ms"])
        for job in slot.job_ids
        for r in runs.get(job, [])[:1]
        if r.get("lateness_ms") is not None
    ]
    statuses = collections.Counter(r["status"] for job in slot.job_ids for r in runs.get(job, []))
    holds = [
        float(outcomes[job]["hold_ms"])
        for job in slot.job_ids
        if job in outcomes and outcomes[job].get("hold_ms") is not None
    ]
    redeliveries = sum(int(outcomes.get(job, {}).get("redeliveries", 0)) for job in slot.job_ids)
    mine = set(slot.job_ids)
    batch_invocations = [i for i in invocations if mine & set(i.get("jobs", []))]
    # Each record's wait for its second (its moment is the batch's second; the batches' seconds differ).
    waits = [w for i in invocations for w in i.get("waits", []) if abs(w[0] - slot.due) < 0.0005]
    split = phases(slot.due, [(w[1], w[2]) for w in waits], arrived)
    cpu: dict[str, Any] = {}
    if batch_invocations:
        cpu_start = min(i["cpu"][0] for i in batch_invocations)
        cpu_end = max(i["cpu"][1] for i in batch_invocations)
        cpu["batch"] = round((cpu_end - cpu_start) * 1000, 1)
        cpu["per_run"] = round(cpu["batch"] / BATCH, 2)
        if len(waits) >= BATCH:
            cpu["until_ready_per_run"] = round((max(w[3] for w in waits) - cpu_start) * 1000 / BATCH, 2)
    throttled_ns = slot.stat_end.get("throttled_time", 0) - slot.stat_start.get("throttled_time", 0)
    result: dict[str, Any] = {
        "slot": slot.index,
        "size_mb": slot.size,
        "due": datetime.fromtimestamp(slot.due, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "delivered": len(lateness),
        "early": early,
        "duplicates": duplicates,
        "redeliveries_logged": redeliveries,
        "statuses": dict(statuses),
        "start_ms": batch_lateness(split["starts_ms"]),
        "arrival_ms": batch_lateness(lateness),
        "recorded_lateness_ms": batch_lateness(recorded),
        "hold_ms": {
            "min": min(holds) if holds else None,
            "p50": _quantile(holds, 0.5),
            "max": max(holds) if holds else None,
        },
        "ready_ms": split["ready_ms"],
        "starting_ms": split["starting_ms"],
        "executing_ms": split["executing_ms"],
        "invocations": len(batch_invocations),
        "records_per_invocation": [len(i.get("jobs", [])) for i in batch_invocations],
        "cpu_ms": cpu,
        "cgroup": {
            "in_group": slot.in_group,
            "window_s": round(slot.window[1] - slot.window[0], 2) if slot.window[1] else None,
            "cpu_ms": round((slot.usage_end - slot.usage_start) / 1e6, 1) if slot.usage_end else None,
            "throttled_periods": slot.stat_end.get("nr_throttled", 0)
            - slot.stat_start.get("nr_throttled", 0),
            "throttled_ms": round(throttled_ns / 1e6, 1),
        },
        "previous_batch_ended_before_switch": slot.previous_done,
        "sent_by_dispatcher": slot.due - slot.created_at > LOOKAHEAD_SECONDS,
        "starts_ms": split["starts_ms"],
        "arrivals_ms": [round(x, 1) for x in sorted(lateness)],
        "recorded_ms": recorded,
        "holds_ms": holds,
    }
    return result

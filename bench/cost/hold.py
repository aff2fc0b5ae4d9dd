"""The worker's hold in the cost benchmark: its outcome log lines ("run succeeded", "run failed",
"retry scheduled") read back, each charged to the scenario whose job it ran (and, for the crons, by
the repetition's worker interval), and the hold's figures per repetition and over the repetitions."""

from __future__ import annotations

import json
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import quantile
from bench.cost.scenarios import Scenario, _inside

# The worker's outcome lines: one per attempt that called its target (punctual_functions/worker/execute.py).
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

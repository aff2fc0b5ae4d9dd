"""Firing precision through the local stack, with or without roles being killed.

Hundreds of one-off jobs spread over a few minutes (due inside and beyond the dispatcher's look-ahead
when they are created), a burst of jobs due at the very same millisecond, and a few seconds-level
crons, all calling a webhook receiver in this process. Lateness is measured where it matters, at
*arrival*: the moment the receiver has read the request, minus the ``Punctual-Scheduled-For`` header.
The ``lateness_ms`` each run records (start of the attempt minus scheduled time) is reported too.

With ``--faults`` a random worker or the dispatcher is SIGKILLed every few seconds during the window
(the supervisor restarts it); then lost jobs, duplicates and lateness are what count.

    python -m bench.precision [--faults] [--jobs 300] [--window 180]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.common import (
    Arrival,
    Receiver,
    histogram,
    histogram_svg,
    histogram_text,
    local_stack,
    log,
    machine,
    summary,
    write_json,
    write_text,
)
from functions.core.model import iso, parse_iso

LOOKAHEAD_SECONDS = 60
TICK_SECONDS = 10
# Seconds-level crons: every 10 s (the default minimum interval), at different offsets.
CRONS = ("*/10 * * * * *", "3/10 * * * * *", "7/10 * * * * *")
EDGES_MS = [0, 2, 4, 6, 8, 10, 12, 15, 20, 30, 50, 100]
EDGES_FAULTS_MS = [0, 10, 20, 50, 100, 500, 1000, 2000, 3000, 5000, 7000, 10000]


@dataclass
class Planned:
    path: str
    group: str  # "inside" / "beyond" the look-ahead when created, or "burst"
    due: float  # epoch seconds, whole milliseconds
    job_id: str = ""
    created_at: float = 0.0


def _ts(text: str) -> float:
    return parse_iso(text).timestamp()


def _plan(rng: random.Random, jobs: int, window: int, burst: int, start: float) -> list[Planned]:
    planned = [
        Planned(f"/one/{n}", "", round(start + rng.randrange(0, window * 1000) / 1000, 3))
        for n in range(jobs)
    ]
    # The burst: all due at the same millisecond, a whole second well beyond the look-ahead.
    burst_at = float(int(start) + int(window * 0.55))
    planned += [Planned(f"/burst/{n}", "burst", burst_at) for n in range(burst)]
    planned.sort(key=lambda p: p.due)
    return planned


def _kill_loop(
    stack_roles: Any, rng: random.Random, until: float, kills: list[dict[str, Any]], stop: threading.Event
) -> None:
    """Every 3-8 s, SIGKILL a random worker or the dispatcher (the supervisor restarts it)."""
    while not stop.is_set() and time.time() < until:
        if stop.wait(rng.uniform(3, 8)) or time.time() >= until:
            return
        try:
            roles = stack_roles()
        except (OSError, ValueError):
            continue
        victims = sorted(name for name in roles if name.startswith("worker") or name == "dispatcher")
        victim = rng.choice(victims)
        try:
            os.kill(roles[victim], signal.SIGKILL)
            kills.append({"at": round(time.time(), 3), "role": victim})
        except ProcessLookupError:
            pass


def _cron_expected(offset: int, after: float, until: float) -> set[int]:
    """Whole epoch seconds t in (after, until] with t ≡ offset (mod 10): a "o/10" seconds cron."""
    first = int(after) + 1
    return {t for t in range(first, int(until) + 1) if t % 10 == offset}


def _missing(
    planned: list[Planned], crons: list[dict[str, Any]], arrivals: dict[str, list[Arrival]], end: float
) -> bool:
    if any(p.path not in arrivals for p in planned):
        return True
    for k, cron in enumerate(crons):
        delivered = {int(_ts(a.scheduled_for)) for a in arrivals.get(f"/cron/{k}", [])}
        if _cron_expected(cron["offset"], cron["at"] + 1, end - 3) - delivered:
            return True
    return False


def run(
    *,
    jobs: int = 300,
    window: int = 180,
    burst: int = 50,
    workers: int = 3,
    faults: bool = False,
    seed: int = 20261122,
) -> dict[str, Any]:
    name = "precision_faults" if faults else "precision"
    rng = random.Random(seed)
    began = time.monotonic()
    with local_stack(
        workers=workers, tick_seconds=TICK_SECONDS, lookahead_seconds=LOOKAHEAD_SECONDS
    ) as stack:
        api = stack.api
        with Receiver() as receiver:
            # Creating a job takes ~25-40 ms here; the window starts once every job exists.
            lead = 5 + 0.03 * (jobs + burst)
            start = float(int(time.time() + lead) + 1)
            planned = _plan(rng, jobs, window, burst, start)
            log(f"{name}: creating {len(planned)} one-off jobs due over {window}s from {iso(_dt(start))}")
            for item in planned:
                item.created_at = time.time()
                item.group = item.group or (
                    "inside" if item.due - item.created_at <= LOOKAHEAD_SECONDS else "beyond"
                )
                item.job_id = api.create(
                    {
                        "schedule": {"at": iso(_dt(item.due))},
                        "target": {"type": "http", "url": receiver.url + item.path},
                    }
                )["job_id"]
            crons: list[dict[str, Any]] = []
            for k, expression in enumerate(CRONS):
                created = time.time()
                job = api.create(
                    {
                        "schedule": {"cron": expression},
                        "target": {"type": "http", "url": receiver.url + f"/cron/{k}"},
                    }
                )
                offset = 0 if expression.startswith("*") else int(expression.split("/")[0])
                crons.append(
                    {"job_id": job["job_id"], "expression": expression, "offset": offset, "at": created}
                )
            created_late = sum(1 for p in planned if p.created_at > p.due)
            log(f"{name}: created in {time.time() - (start - lead):.1f}s; window until +{window}s")
            end = start + window
            kills: list[dict[str, Any]] = []
            stop = threading.Event()
            killer = None
            if faults:
                killer = threading.Thread(
                    target=_kill_loop, args=(stack.roles, rng, end, kills, stop), daemon=True
                )
                killer.start()
            while time.time() < end:
                time.sleep(1)
            stop.set()
            if killer is not None:
                killer.join()
            # Wait for every one-off and every cron occurrence of the window (stragglers after a
            # kill come back seconds later); the crons stay active meanwhile, so a late occurrence
            # is not cancelled before it arrives.
            deadline = time.time() + (90 if faults else 20)
            while time.time() < deadline and _missing(planned, crons, receiver.by_path(), end):
                time.sleep(0.5)
            time.sleep(3)  # duplicates, if any, arrive now
            for cron in crons:
                api.call("DELETE", f"/v1/jobs/{cron['job_id']}")
            arrivals = receiver.by_path()
        log(f"{name}: reading the recorded runs")
        with ThreadPoolExecutor(max_workers=4) as pool:
            runs_by_job = dict(
                zip(
                    [p.job_id for p in planned] + [c["job_id"] for c in crons],
                    pool.map(api.runs, [p.job_id for p in planned] + [c["job_id"] for c in crons]),
                    strict=True,
                )
            )
        restarts = stack.log_text().count("restarting (restart #")
    result = _analyse(
        name,
        planned,
        crons,
        arrivals,
        runs_by_job,
        end,
        faults=faults,
        kills=kills,
        restarts=restarts,
        created_late=created_late,
    )
    result["config"] = {
        "jobs_spread": jobs,
        "burst_same_millisecond": burst,
        "crons": list(CRONS),
        "window_seconds": window,
        "workers": workers,
        "worker_pollers_each": 4,
        "tick_seconds": TICK_SECONDS,
        "lookahead_seconds": LOOKAHEAD_SECONDS,
        "shards": 4,
        "seed": seed,
        "faults": "SIGKILL a random worker or the dispatcher every 3-8 s" if faults else None,
    }
    result["machine"] = machine()
    result["elapsed_seconds"] = round(time.monotonic() - began, 1)
    return result


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _analyse(
    name: str,
    planned: list[Planned],
    crons: list[dict[str, Any]],
    arrivals: dict[str, list[Arrival]],
    runs_by_job: dict[str, list[dict[str, Any]]],
    end: float,
    *,
    faults: bool,
    kills: list[dict[str, Any]],
    restarts: int,
    created_late: int,
) -> dict[str, Any]:
    lateness: dict[str, list[float]] = {"inside": [], "beyond": [], "burst": [], "cron": []}
    early: list[dict[str, Any]] = []
    header_mismatch = 0
    duplicates = 0
    two_keys = 0
    lost: list[str] = []
    samples: list[list[Any]] = []  # [scheduled_for (epoch s), group, lateness at arrival (ms)]
    for item in planned:
        got = arrivals.get(item.path, [])
        if not got:
            lost.append(item.path)
            continue
        if abs(_ts(got[0].scheduled_for) - item.due) > 0.0005:
            header_mismatch += 1
        duplicates += len(got) - 1
        two_keys += len({a.idempotency_key for a in got}) > 1
        late = (got[0].received_at - _ts(got[0].scheduled_for)) * 1000
        lateness[item.group].append(late)
        samples.append([round(item.due, 3), item.group, round(late, 1)])
    cron_expected = 0
    cron_lost: list[str] = []
    for k, cron in enumerate(crons):
        got = arrivals.get(f"/cron/{k}", [])
        by_occurrence: dict[str, list[Arrival]] = {}
        for arrival in got:
            by_occurrence.setdefault(arrival.scheduled_for, []).append(arrival)
        for occurrence, group in by_occurrence.items():
            duplicates += len(group) - 1
            two_keys += len({a.idempotency_key for a in group}) > 1
            late = (group[0].received_at - _ts(occurrence)) * 1000
            lateness["cron"].append(late)
            samples.append([round(_ts(occurrence), 3), "cron", round(late, 1)])
        delivered = {int(_ts(o)) for o in by_occurrence}
        # Occurrences due between creation and a few seconds before the crons were cancelled.
        expected = _cron_expected(cron["offset"], cron["at"] + 1, end - 3)
        cron_expected += len(expected)
        cron_lost += [f"/cron/{k}@{iso(_dt(t))}" for t in sorted(expected - delivered)]
    # What the table says about each run that never arrived.
    lost_runs = []
    by_job = {p.path: p.job_id for p in planned}
    for path in lost:
        runs = runs_by_job.get(by_job[path], [])
        lost_runs.append({"path": path, "runs": [_brief(r) for r in runs]})
    for label in cron_lost:
        path, _, moment = label.partition("@")
        job_id = crons[int(path.rsplit("/", 1)[1])]["job_id"]
        runs = [r for r in runs_by_job.get(job_id, []) if r["scheduled_for"] == moment]
        lost_runs.append({"path": label, "runs": [_brief(r) for r in runs]})
    for path, got in arrivals.items():
        for arrival in got:
            if arrival.received_at < _ts(arrival.scheduled_for):
                early.append(
                    {"path": path, "scheduled_for": arrival.scheduled_for, "at": arrival.received_at}
                )
    # What the runs record: lateness_ms (attempt start - scheduled) and start -> arrival.
    recorded: list[float] = []
    start_to_arrival: list[float] = []
    first_arrival: dict[str, float] = {}
    for group in arrivals.values():
        for a in group:
            first_arrival[a.idempotency_key] = min(
                a.received_at, first_arrival.get(a.idempotency_key, a.received_at)
            )
    statuses: dict[str, int] = {}
    for runs in runs_by_job.values():
        for run in runs:
            statuses[run["status"]] = statuses.get(run["status"], 0) + 1
            if run["status"] != "SUCCEEDED" or run.get("lateness_ms") is None:
                continue
            recorded.append(float(run["lateness_ms"]))
            arrived = first_arrival.get(run["run_id"])
            if arrived is not None and run.get("started_at"):
                start_to_arrival.append((arrived - _ts(run["started_at"])) * 1000)
    everything = [x for values in lateness.values() for x in values]
    # The SPEC's figure is for jobs spread over minutes; the burst is a separate stress.
    spread = lateness["inside"] + lateness["beyond"] + lateness["cron"]
    edges = EDGES_FAULTS_MS if faults else EDGES_MS
    bins = histogram(everything, edges)
    stats = summary(spread)
    result: dict[str, Any] = {
        "name": name,
        "what": "lateness at arrival = receiver's clock when the request is read - Punctual-Scheduled-For",
        "deliveries_expected": len(planned) + cron_expected,
        "delivered_runs": len(everything),
        "lost": len(lost) + len(cron_lost),
        "lost_examples": (lost + cron_lost)[:10],
        "lost_runs": lost_runs[:10],
        "early": len(early),
        "early_examples": early[:10],
        "duplicates_same_key": duplicates,
        "runs_with_two_keys": two_keys,
        "scheduled_for_header_mismatch": header_mismatch,
        "jobs_created_after_their_due_time": created_late,
        "arrival_lateness_ms": {
            "spread_one_offs_and_crons": stats,
            "all_with_burst": summary(everything),
            "one_off_due_inside_lookahead_at_creation": summary(lateness["inside"]),
            "one_off_due_beyond_lookahead_at_creation": summary(lateness["beyond"]),
            "burst_same_millisecond": summary(lateness["burst"]),
            "cron_every_10s": summary(lateness["cron"]),
        },
        "recorded_lateness_ms": summary(recorded),
        "attempt_start_to_arrival_ms": summary(start_to_arrival),
        "run_statuses": statuses,
        "histogram_ms": bins,
        "samples": sorted(samples),
    }
    if faults:
        result["kills"] = len(kills)
        result["restarts"] = restarts
        result["kill_log"] = kills
        result["targets"] = {
            "nothing lost": len(lost) + len(cron_lost) == 0,
            "never early": not early,
            "p99 <= 5000 ms (spread jobs)": stats.get("p99", float("inf")) <= 5000,
        }
    else:
        result["targets"] = {
            "never early": not early,
            "p99 <= 20 ms (spread jobs)": stats.get("p99", float("inf")) <= 20,
            "max < 100 ms (spread jobs)": stats.get("max", float("inf")) < 100,
        }
    return result


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "status", "scheduled_for", "queued_at", "started_at", "finished_at", "error", "attempt")
    return {key: run.get(key) for key in keys}


def report(result: dict[str, Any]) -> str:
    """The figures as text (printed, and kept in the markdown summary)."""
    lines = [f"== {result['name']} =="]
    lines.append(
        f"runs delivered {result['delivered_runs']} (expected {result['deliveries_expected']}),"
        f" lost {result['lost']},"
        f" early {result['early']}, duplicates (same key) {result['duplicates_same_key']},"
        f" two keys {result['runs_with_two_keys']}"
    )
    for lost in result.get("lost_runs", []):
        states = (
            ", ".join(f"{r['status']} ({r['error'] or 'no error'})" for r in lost["runs"]) or "no run item"
        )
        lines.append(f"  lost {lost['path']}: {states}")
    if "kills" in result:
        lines.append(f"kills {result['kills']}, restarts {result['restarts']}")
    lines.append("lateness at arrival (ms):      count    p50    p90    p99    max")
    for label, stats in result["arrival_lateness_ms"].items():
        if stats.get("count"):
            lines.append(
                f"  {label:<42} {stats['count']:5d} {stats['p50']:6.1f} {stats['p90']:6.1f}"
                f" {stats['p99']:6.1f} {stats['max']:8.1f}"
            )
    for label in ("recorded_lateness_ms", "attempt_start_to_arrival_ms"):
        stats = result[label]
        if stats.get("count"):
            lines.append(
                f"  {label:<42} {stats['count']:5d} {stats['p50']:6.1f} {stats['p90']:6.1f}"
                f" {stats['p99']:6.1f} {stats['max']:8.1f}"
            )
    lines.append(histogram_text(result["histogram_ms"]))
    lines.append(
        "targets: " + ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in result["targets"].items())
    )
    return "\n".join(lines)


def save(result: dict[str, Any]) -> None:
    write_json(result["name"], result)
    title = (
        "Lateness at arrival under faults (ms)"
        if "kills" in result
        else "Lateness at arrival, local stack (ms)"
    )
    write_text(f"{result['name']}.svg", histogram_svg(result["histogram_ms"], title))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--faults", action="store_true", help="SIGKILL workers/dispatcher during the window")
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--window", type=int, default=180)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    args = parser.parse_args()
    result = run(
        jobs=args.jobs, window=args.window, burst=args.burst, workers=args.workers, faults=args.faults
    )
    save(result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()

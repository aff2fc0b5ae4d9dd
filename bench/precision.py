"""Firing precision through the local stack, with or without roles being killed.

Hundreds of one-off jobs spread over a few minutes (due inside and beyond the dispatcher's look-ahead
when they are created), a burst of jobs due at the very same millisecond, one-offs due on whole
seconds (three, then four, at each of a minute's consecutive seconds: the shape of schedules written
by hand; ``--whole-seconds-span``), and a few seconds-level crons, all calling a webhook receiver in
this process. The burst and the whole seconds are reported apart from the spread jobs the precision
targets are about (docs/benchmarks.md). Lateness is measured where it matters, at
*arrival*: the moment the receiver has read the request, minus the ``Punctual-Scheduled-For`` header.
The ``lateness_ms`` each run records (start of the attempt minus scheduled time) is reported too.

With ``--faults`` a random worker or the dispatcher is SIGKILLed every few seconds during the window
(the supervisor restarts it); then lost jobs, duplicates and lateness are what count.

The run is repeated (``--repetitions``, each on a fresh stack with its own random due times): every
statistic is reported as the median over the runs with the lowest and highest, and pooled over all
the runs' deliveries together; lost, early and duplicated deliveries are summed.

    python -m bench.precision [--faults] [--repetitions 3] [--jobs 115] [--window 70]
                              [--whole-seconds-span 60]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import common
from bench.common import (
    histogram,
    histogram_text,
    local_stack,
    log,
    machine,
    spread_of_summaries,
    summary,
    write_json,
)
from functions.core.model import iso, parse_iso
from functions.core.settings import Settings
from tests.support.receiver import Delivery, Receiver

# The stack runs with its defaults, as users run it: a one-minute tick and the 120 s look-ahead (a
# seconds-level cron's occurrences between ticks are dispatched by whoever claims the one before).
TICK_SECONDS = 60
LOOKAHEAD_SECONDS = Settings().lookahead_seconds
# Seconds-level crons: every 10 s (the default minimum interval), at different offsets.
CRONS = ("*/10 * * * * *", "3/10 * * * * *", "7/10 * * * * *")
EDGES_MS = [0, 2, 4, 6, 8, 10, 12, 15, 20, 30, 50, 100]
EDGES_FAULTS_MS = [0, 10, 20, 50, 100, 500, 1000, 2000, 3000, 5000, 7000, 10000]
# Jobs due at each whole second of the whole-seconds span, in turn (3.5 a second on average).
WHOLE_SECONDS_JOBS = (3, 4)
# No whole-second job is due within this many seconds of the burst: the burst's messages reach the
# workers ahead of its second and its attempts start before it, and its outcomes are written after
# it, so nearer ones would meet the burst in the workers and the emulator and blur both figures.
WHOLE_SECONDS_BURST_GAP = 3


@dataclass
class Planned:
    path: str
    group: str  # "inside" / "beyond" the look-ahead when created, "burst" or "whole_seconds"
    due: float  # epoch seconds, whole milliseconds
    job_id: str = ""
    created_at: float = 0.0


def _ts(text: str) -> float:
    return parse_iso(text).timestamp()


def _burst_offset(window: int) -> int:
    """The burst's second, counted from the window's start: a whole second beyond the look-ahead
    when the window is long enough for that (the dispatcher claims it), past the middle of the window."""
    return min(window - 5, max(int(window * 0.55), LOOKAHEAD_SECONDS + 5))


def whole_seconds_offsets(window: int, span: int) -> list[int]:
    """The consecutive whole seconds (counted from the window's start) the whole-seconds jobs are due
    at: ``span`` of them, inside the window (from its second second to its last) and at least
    ``WHOLE_SECONDS_BURST_GAP`` s from the burst. The seconds before the burst are used when they
    hold the span (the last of them: they end the gap before it), else those after it when they do;
    else the span is cut to the longer of the two (the result says so: ``whole_seconds_span_s``)."""
    if span <= 0:
        return []
    burst = _burst_offset(window)
    before = list(range(1, burst - WHOLE_SECONDS_BURST_GAP + 1))
    after = list(range(burst + WHOLE_SECONDS_BURST_GAP, window))
    if len(before) >= span:
        return before[-span:]
    if len(after) >= span:
        return after[:span]
    return before if len(before) >= len(after) else after


def whole_seconds_jobs(offsets: Sequence[int]) -> int:
    return sum(WHOLE_SECONDS_JOBS[k % len(WHOLE_SECONDS_JOBS)] for k in range(len(offsets)))


def _plan(
    rng: random.Random,
    jobs: int,
    window: int,
    burst: int,
    start: float,
    whole_seconds: Sequence[int] = (),
) -> list[Planned]:
    planned = [
        Planned(f"/one/{n}", "", round(start + rng.randrange(0, window * 1000) / 1000, 3))
        for n in range(jobs)
    ]
    # The burst: all due at the same millisecond.
    burst_at = float(int(start) + _burst_offset(window))
    planned += [Planned(f"/burst/{n}", "burst", burst_at) for n in range(burst)]
    # The whole seconds: 3, 4, 3, 4, ... jobs due at each (no draw from rng: the other groups' due
    # times are those of the same seed without them).
    n = 0
    for k, offset in enumerate(whole_seconds):
        for _ in range(WHOLE_SECONDS_JOBS[k % len(WHOLE_SECONDS_JOBS)]):
            planned.append(Planned(f"/whole/{n}", "whole_seconds", float(int(start) + offset)))
            n += 1
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
    planned: list[Planned], crons: list[dict[str, Any]], arrivals: dict[str, list[Delivery]], end: float
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
    repetitions: int = 3,
    jobs: int = 115,
    window: int = 70,
    burst: int = 20,
    workers: int = 3,
    faults: bool = False,
    seed: int = 20261122,
    whole_seconds_span: int = 60,
) -> dict[str, Any]:
    """``repetitions`` runs, each on a fresh stack; the figures of each and over all of them.
    ``whole_seconds_span``: the consecutive whole seconds with 3 or 4 jobs due at each (0: none)."""
    name = "precision_faults" if faults else "precision"
    began = time.monotonic()
    whole_seconds = whole_seconds_offsets(window, whole_seconds_span)
    if len(whole_seconds) < whole_seconds_span:
        log(
            f"{name}: the {window}s window holds {len(whole_seconds)} whole seconds away from the burst,"
            f" not {whole_seconds_span}: the whole-seconds span is cut to {len(whole_seconds)}s"
        )
    runs = []
    for k in range(repetitions):
        log(f"{name}: run {k + 1} of {repetitions}")
        runs.append(
            _run_once(
                name,
                jobs=jobs,
                window=window,
                burst=burst,
                workers=workers,
                faults=faults,
                seed=seed + k,
                whole_seconds=whole_seconds,
            )
        )
    result = _aggregate(name, runs, faults=faults)
    result["whole_seconds_span_s"] = len(whole_seconds)
    result["config"] = {
        "repetitions": repetitions,
        "jobs_spread": jobs,
        "burst_same_millisecond": burst,
        "burst_offset_s": _burst_offset(window),
        "whole_seconds_span_requested_s": whole_seconds_span,
        "whole_seconds_span_s": len(whole_seconds),
        "whole_seconds_offsets_s": [whole_seconds[0], whole_seconds[-1]] if whole_seconds else None,
        "whole_seconds_jobs_each_second": list(WHOLE_SECONDS_JOBS),
        "whole_seconds_jobs": whole_seconds_jobs(whole_seconds),
        "whole_seconds_placement": "consecutive whole seconds of the window, counted from its start"
        f" (whole_seconds_offsets_s: the first and the last), none within {WHOLE_SECONDS_BURST_GAP} s"
        " of the burst's second; cut to fit when the window cannot hold the span requested"
        + (f" (it was: {whole_seconds_span} requested)" if len(whole_seconds) < whole_seconds_span else ""),
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


def _run_once(
    name: str,
    *,
    jobs: int,
    window: int,
    burst: int,
    workers: int,
    faults: bool,
    seed: int,
    whole_seconds: Sequence[int] = (),
) -> dict[str, Any]:
    rng = random.Random(seed)
    began = time.monotonic()
    with local_stack(workers=workers, tick_seconds=None, lookahead_seconds=None) as stack:
        api = stack.api
        with Receiver() as receiver:
            # Creating a job takes ~60-70 ms here (one due within the look-ahead is claimed and sent
            # by its create); the window starts once every job exists.
            lead = 3 + 0.075 * (jobs + burst + whole_seconds_jobs(whole_seconds))
            start = float(int(time.time() + lead) + 1)
            planned = _plan(rng, jobs, window, burst, start, whole_seconds)
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
    result["seed"] = seed
    result["window_start"] = start
    result["window_end"] = end
    burst_items = [p for p in planned if p.group == "burst"]
    result["burst_beyond_lookahead_at_creation"] = bool(burst_items) and all(
        p.due - p.created_at > LOOKAHEAD_SECONDS for p in burst_items
    )
    whole = [p for p in planned if p.group == "whole_seconds"]
    result["whole_seconds_span_s"] = len({p.due for p in whole})
    result["whole_seconds_beyond_lookahead_at_creation"] = sum(
        1 for p in whole if p.due - p.created_at > LOOKAHEAD_SECONDS
    )
    result["elapsed_seconds"] = round(time.monotonic() - began, 1)
    return result


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _analyse(
    name: str,
    planned: list[Planned],
    crons: list[dict[str, Any]],
    arrivals: dict[str, list[Delivery]],
    runs_by_job: dict[str, list[dict[str, Any]]],
    end: float,
    *,
    faults: bool,
    kills: list[dict[str, Any]],
    restarts: int,
    created_late: int,
) -> dict[str, Any]:
    lateness: dict[str, list[float]] = {
        "inside": [],
        "beyond": [],
        "burst": [],
        "cron": [],
        "whole_seconds": [],
    }
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
        by_occurrence: dict[str, list[Delivery]] = {}
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
    # The precision targets are for jobs spread over minutes; the burst and the whole seconds are
    # separate stresses, reported apart.
    spread = lateness["inside"] + lateness["beyond"] + lateness["cron"]
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
            "whole_seconds": summary(lateness["whole_seconds"]),
        },
        # The spread jobs due between the first and the last whole second (a cron's occurrence there
        # shares its second with 3 or 4 of them): how much of the spread figures the whole seconds' load
        # may account for.
        "spread_due_during_whole_seconds_ms": _during(samples, planned),
        "recorded_lateness_ms": summary(recorded),
        "attempt_start_to_arrival_ms": summary(start_to_arrival),
        "run_statuses": statuses,
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


def _during(samples: list[list[Any]], planned: list[Planned]) -> dict[str, Any]:
    """Lateness of the spread jobs (one-offs inside and beyond, crons) due within the whole seconds'
    span (from its first second to the end of its last)."""
    whole = [p.due for p in planned if p.group == "whole_seconds"]
    if not whole:
        return summary([])
    first, last = min(whole), max(whole) + 1
    return summary(s[2] for s in samples if s[1] in SPREAD_KINDS and first <= s[0] < last)


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "status", "scheduled_for", "queued_at", "started_at", "finished_at", "error", "attempt")
    return {key: run.get(key) for key in keys}


# The per-run lateness groups, and which sample kinds each holds.
SPREAD_KINDS = ("inside", "beyond", "cron")
GROUPS = {
    "spread_one_offs_and_crons": SPREAD_KINDS,
    # every delivery (as each run's figure is), the whole seconds too
    "all_with_burst": ("inside", "beyond", "cron", "burst", "whole_seconds"),
    "one_off_due_inside_lookahead_at_creation": ("inside",),
    "one_off_due_beyond_lookahead_at_creation": ("beyond",),
    "burst_same_millisecond": ("burst",),
    "cron_every_10s": ("cron",),
    "whole_seconds": ("whole_seconds",),
}
SUMMED = (
    "deliveries_expected",
    "delivered_runs",
    "lost",
    "early",
    "duplicates_same_key",
    "runs_with_two_keys",
    "scheduled_for_header_mismatch",
    "jobs_created_after_their_due_time",
)


def _aggregate(name: str, runs: list[dict[str, Any]], *, faults: bool) -> dict[str, Any]:
    """The runs together: counts summed, each lateness statistic as its median over the runs (with
    the lowest and highest), and pooled (every run's deliveries in one distribution)."""
    pooled = {
        group: summary(x[2] for r in runs for x in r["samples"] if x[1] in kinds)
        for group, kinds in GROUPS.items()
    }
    everything = [x[2] for r in runs for x in r["samples"]]
    medians = {
        group: spread_of_summaries([r["arrival_lateness_ms"][group] for r in runs]) for group in GROUPS
    }
    result: dict[str, Any] = {
        "name": name,
        "what": "lateness at arrival = receiver's clock when the request is read - Punctual-Scheduled-For",
        "figures": "arrival_lateness_ms: each statistic's median over the runs, with the lowest and highest;"
        " arrival_lateness_ms_pooled: all runs' deliveries together; counts are sums over the runs",
        "repetitions": len(runs),
        **{key: sum(r[key] for r in runs) for key in SUMMED},
        "lost_runs": [lost for r in runs for lost in r["lost_runs"]][:10],
        "early_examples": [e for r in runs for e in r["early_examples"]][:10],
        "arrival_lateness_ms": medians,
        "arrival_lateness_ms_pooled": pooled,
        "recorded_lateness_ms": spread_of_summaries([r["recorded_lateness_ms"] for r in runs]),
        "attempt_start_to_arrival_ms": spread_of_summaries([r["attempt_start_to_arrival_ms"] for r in runs]),
        "spread_due_during_whole_seconds_ms": spread_of_summaries(
            [r.get("spread_due_during_whole_seconds_ms", {}) for r in runs]
        ),
        "histogram_ms": histogram(everything, EDGES_FAULTS_MS if faults else EDGES_MS),
    }
    spread_p99 = medians["spread_one_offs_and_crons"]["p99"].get("median", float("inf"))
    if faults:
        result["kills"] = sum(r["kills"] for r in runs)
        result["restarts"] = sum(r["restarts"] for r in runs)
        result["targets"] = {
            "nothing lost": result["lost"] == 0,
            "never early": result["early"] == 0,
            "p99 <= 5000 ms (spread jobs)": spread_p99 <= 5000,
        }
    else:
        spread_max = medians["spread_one_offs_and_crons"]["max"].get("median", float("inf"))
        result["targets"] = {
            "never early": result["early"] == 0,
            "p99 <= 20 ms (spread jobs)": spread_p99 <= 20,
            "max < 100 ms (spread jobs)": spread_max < 100,
        }
    result["runs"] = runs
    return result


def _cell(figure: dict[str, Any]) -> str:
    if figure.get("runs", 0) < 2:
        return f"{figure.get('median', '-')}"
    return f"{figure['median']:g} [{figure['min']:g}-{figure['max']:g}]"


def report(result: dict[str, Any]) -> str:
    """The figures as text (printed, and kept in the markdown summary)."""
    n = result["repetitions"]
    lines = [f"== {result['name']}: {n} runs, each on a fresh stack =="]
    lines.append(
        f"runs delivered {result['delivered_runs']} (expected {result['deliveries_expected']}),"
        f" lost {result['lost']},"
        f" early {result['early']}, duplicates (same key) {result['duplicates_same_key']},"
        f" two keys {result['runs_with_two_keys']} (sums over the runs)"
    )
    for lost in result.get("lost_runs", []):
        states = (
            ", ".join(f"{r['status']} ({r['error'] or 'no error'})" for r in lost["runs"]) or "no run item"
        )
        lines.append(f"  lost {lost['path']}: {states}")
    if "kills" in result:
        lines.append(f"kills {result['kills']}, restarts {result['restarts']} (sums)")
    config = result.get("config", {})
    if config.get("whole_seconds_span_s"):
        first, last = config["whole_seconds_offsets_s"]
        cut = config["whole_seconds_span_s"] < config["whole_seconds_span_requested_s"]
        lines.append(
            f"whole seconds: {config['whole_seconds_jobs']} jobs, 3 or 4 due at each of"
            f" {config['whole_seconds_span_s']} consecutive seconds (+{first}s to +{last}s of the window;"
            f" the burst at +{config['burst_offset_s']}s)"
            + (f", cut from the {config['whole_seconds_span_requested_s']}s asked for" if cut else "")
        )
    for k, r in enumerate(result["runs"]):
        groups = r["arrival_lateness_ms"]
        stats = groups["spread_one_offs_and_crons"]
        lines.append(
            f"  run {k + 1}: {r['delivered_runs']} delivered"
            f" ({groups['one_off_due_inside_lookahead_at_creation'].get('count', 0)} inside,"
            f" {groups['one_off_due_beyond_lookahead_at_creation'].get('count', 0)} beyond"
            " the look-ahead"
            + (
                f", {groups['whole_seconds'].get('count', 0)} on whole seconds"
                if groups.get("whole_seconds", {}).get("count")
                else ""
            )
            + "),"
            f" lost {r['lost']}, early {r['early']}"
            + (f", kills {r['kills']}" if "kills" in r else "")
            + f"; spread p50 {stats.get('p50')} p99 {stats.get('p99')} max {stats.get('max')} ms"
        )
    lines.append(f"lateness at arrival (ms), median of {n} runs [lowest-highest]:")
    lines.append(f"  {'':<42} {'n/run':>6}  {'p50':<16} {'p90':<18} {'p99':<20} max")
    for label, stats in result["arrival_lateness_ms"].items():
        if stats["count"].get("median"):
            lines.append(
                f"  {label:<42} {stats['count']['median']:6g}  {_cell(stats['p50']):<16}"
                f" {_cell(stats['p90']):<18} {_cell(stats['p99']):<20} {_cell(stats['max'])}"
            )
    for label in (
        "spread_due_during_whole_seconds_ms",
        "recorded_lateness_ms",
        "attempt_start_to_arrival_ms",
    ):
        stats = result.get(label)
        if stats and stats["count"].get("median"):
            lines.append(
                f"  {label:<42} {stats['count']['median']:6g}  {_cell(stats['p50']):<16}"
                f" {_cell(stats['p90']):<18} {_cell(stats['p99']):<20} {_cell(stats['max'])}"
            )
    lines.append(f"pooled, all {n} runs' deliveries together:  count    p50    p90    p99      max")
    for label, stats in result["arrival_lateness_ms_pooled"].items():
        if stats.get("count"):
            lines.append(
                f"  {label:<42} {stats['count']:5d} {stats['p50']:6.1f} {stats['p90']:6.1f}"
                f" {stats['p99']:6.1f} {stats['max']:8.1f}"
            )
    lines.append(histogram_text(result["histogram_ms"]))
    lines.append(
        "targets (lateness: medians of the runs): "
        + ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in result["targets"].items())
    )
    return "\n".join(lines)


def save(result: dict[str, Any]) -> list[str]:
    """The JSON, and the PNG plots when matplotlib is installed; the files written."""
    from bench import plots

    written = [write_json(result["name"], result).name]
    written += plots.write(result["name"], result)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--faults", action="store_true", help="SIGKILL workers/dispatcher during the window")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=115)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--window", type=int, default=70)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--whole-seconds-span",
        type=int,
        default=60,
        help="consecutive whole seconds with 3 or 4 jobs due at each, away from the burst (0: none;"
        " cut to what the window holds)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write the JSON and plots (default bench/results/)"
    )
    args = parser.parse_args()
    if args.out is not None:
        common.RESULTS = args.out
    result = run(
        repetitions=args.repetitions,
        jobs=args.jobs,
        window=args.window,
        burst=args.burst,
        workers=args.workers,
        faults=args.faults,
        whole_seconds_span=args.whole_seconds_span,
    )
    save(result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()

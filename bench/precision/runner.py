"""The precision benchmark's run: each repetition on a fresh local stack, its jobs and crons created,
the window waited out (with ``--faults``, a worker or the dispatcher SIGKILLed every few seconds),
the deliveries and the recorded runs collected and analysed; the result over the repetitions, and
``save`` (the JSON and the plots)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.common import local_stack, log, machine, summary, worker_holds, write_json
from bench.precision.analysis import _aggregate, _analyse
from bench.precision.plan import (
    CRONS,
    LOOKAHEAD_SECONDS,
    TICK_SECONDS,
    WHOLE_SECONDS_BURST_GAP,
    WHOLE_SECONDS_JOBS,
    Planned,
    _burst_offset,
    _cron_expected,
    _dt,
    _plan,
    _ts,
    whole_seconds_jobs,
    whole_seconds_offsets,
)
from punctual.cdk.config import WORKER_MAX_CONCURRENCY
from punctual.testing.receiver import Delivery, Receiver
from punctual_functions.core.model import iso


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
        "worker_invocations_each": -(-WORKER_MAX_CONCURRENCY // workers),
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
            # Creating a job takes ~60-70 ms here (one due within the look-ahead is dispatched
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
        log_text = stack.log_text()
        restarts = log_text.count("restarting (restart #")
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
    result["worker_hold_ms"] = _holds_by_group(planned, worker_holds(log_text))
    result["elapsed_seconds"] = round(time.monotonic() - began, 1)
    return result


def _holds_by_group(planned: Sequence[Planned], holds: dict[str, float]) -> dict[str, Any]:
    """The worker's ``hold_ms`` (due time minus its message's arrival at the worker; negative: it
    arrived late) of each one-off group: a late run with a negative hold was late reaching the
    worker (the queue, the event source), one with a positive hold was late inside it."""
    groups = sorted({p.group for p in planned})
    return {
        group: summary(holds[p.job_id] for p in planned if p.group == group and p.job_id in holds)
        for group in groups
    }


def save(result: dict[str, Any]) -> list[str]:
    """The JSON, and the PNG plots when matplotlib is installed; the files written."""
    from bench import plots

    written = [write_json(result["name"], result).name]
    written += plots.write(result["name"], result)
    return written

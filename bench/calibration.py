"""Distributions the simulator is calibrated against (``make bench``'s ``calibration``).

The local stack with its defaults (a worker process per core, the one-minute tick, the 120 s
look-ahead, 4 shards) runs one-off jobs due over two minutes at three loads, each due at its own
millisecond, all created more than the look-ahead ahead so that the tick's sweep sends them (the path
the simulator's large scenarios take). Every job calls a webhook receiver in this process. Recorded for
each run, not summarized: its lateness at the receiver (the kernel's stamp of the request's first
bytes minus the due time, in microseconds) and the worker's hold (``hold_ms``: the due time minus the
message's arrival at the worker). ``punctual/sim/calibration.py`` simulates the same loads and compares
the distributions (docs/scale.md, "Calibration").

    python -m bench.calibration [--loads 60,300,1000] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import local_stack, log, machine, summary, worker_holds, write_json
from bench.created_soon import iso_at
from punctual.testing.receiver import Receiver
from punctual_functions.core.settings import Settings

LOADS = (60, 300, 1000)  # jobs due a minute
WINDOW_MINUTES = 2
# The window starts this long after the first create: every job is created more than the look-ahead
# before it is due (the creates of the largest load take under a minute).
LEAD_SECONDS = 200
LOOKAHEAD_SECONDS = Settings().lookahead_seconds
CLIENTS = 4


def _run_load(jobs_per_minute: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    count = jobs_per_minute * WINDOW_MINUTES
    with (
        local_stack(workers=None, tick_seconds=None, lookahead_seconds=None, log_format="json") as stack,
        Receiver() as receiver,
    ):
        start = float(int(time.time()) + LEAD_SECONDS)
        dues = sorted(round(start + rng.random() * WINDOW_MINUTES * 60, 3) for _ in range(count))
        jobs: dict[str, tuple[float, float, str]] = {}  # path -> (due, created, job id)
        lock = threading.Lock()
        queue = iter(enumerate(dues))

        def create() -> None:
            while True:
                with lock:
                    item = next(queue, None)
                if item is None:
                    return
                number, due = item
                path = f"/c/{number}"
                created = time.time()
                job_id = stack.api.create(
                    {"schedule": {"at": iso_at(due)}, "target": {"type": "http", "url": receiver.url + path}}
                )["job_id"]
                jobs[path] = (due, created, job_id)

        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            for future in [pool.submit(create) for _ in range(CLIENTS)]:
                future.result()
        log(f"calibration: {count} jobs for {jobs_per_minute} a minute created")
        while time.time() < dues[-1] + 5:
            time.sleep(1)
        deadline = time.time() + 20
        while time.time() < deadline and any(path not in receiver.by_path() for path in jobs):
            time.sleep(0.5)
        arrivals = receiver.by_path()
        holds = worker_holds(stack.log_text())
    lateness, hold = [], []
    lost = early = duplicates = api_sent = 0
    for path, (due, created, job_id) in jobs.items():
        if due - created <= LOOKAHEAD_SECONDS:
            api_sent += 1  # created inside the look-ahead: not the path compared
            continue
        got = arrivals.get(path, [])
        if not got:
            lost += 1
            continue
        duplicates += len(got) - 1
        late = (got[0].received_at - due) * 1000
        early += late < 0
        lateness.append(round(late, 3))
        if job_id in holds:
            hold.append(holds[job_id])
    return {
        "jobs_per_minute": jobs_per_minute,
        "seed": seed,
        "jobs": count,
        "created_inside_lookahead": api_sent,
        "lost": lost,
        "early": early,
        "duplicates": duplicates,
        "lateness_ms": summary(lateness, 3),
        "hold_ms": summary(hold, 0),
        # Every run's figures, for the simulator's comparison of distributions.
        "samples": {"lateness_ms": sorted(lateness), "hold_ms": sorted(hold)},
    }


def run(loads: tuple[int, ...] = LOADS, seed: int = 20261129) -> dict[str, Any]:
    began = time.monotonic()
    results = {}
    for index, load in enumerate(loads):
        log(f"calibration: {load} jobs a minute")
        results[str(load)] = _run_load(load, seed + index)
    return {
        "name": "calibration",
        "what": (
            "one-off jobs due at their own millisecond over two minutes, sent by the tick's sweep, on"
            " the local stack with its defaults: each run's lateness at the receiver (kernel stamp,"
            " microseconds) and the worker's hold"
        ),
        "config": {
            "loads_per_minute": list(loads),
            "window_minutes": WINDOW_MINUTES,
            "lead_seconds": LEAD_SECONDS,
            "stack": "punctual local, its defaults: a worker process per core, tick 60 s, look-ahead 120 s",
            "seed": seed,
        },
        "loads": results,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def report(result: dict[str, Any]) -> str:
    lines = ["== calibration: the local stack's distributions =="]
    for load, figures in result["loads"].items():
        late, hold = figures["lateness_ms"], figures["hold_ms"]
        lines.append(
            f" {load:>5} a minute: {late.get('count', 0)} runs, lost {figures['lost']},"
            f" early {figures['early']}, twice {figures['duplicates']};"
            f" lateness ms p50 {late.get('p50')}, p99 {late.get('p99')},"
            f" max {late.get('max')}; hold ms p50 {hold.get('p50')}, p99 {hold.get('p99')}"
        )
    return "\n".join(lines)


def save(result: dict[str, Any], out: Path | None = None) -> list[str]:
    if out is None:
        return [str(write_json("calibration", result))]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "calibration.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return [str(path)]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__)
    parser.add_argument("--loads", default=",".join(str(load) for load in LOADS))
    parser.add_argument("--out", type=Path, help="write calibration.json here instead of bench/results")
    args = parser.parse_args()
    result = run(tuple(int(load) for load in args.loads.split(",")))
    print(report(result))
    for path in save(result, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

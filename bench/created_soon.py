"""Precision of jobs created at once shortly before they fall due (``make bench``'s ``created_soon``).

A user scheduling a batch: ``jobs`` one-off jobs created one after another as fast as the local
stack's API takes them (four clients at once), each due at a whole second 30 to 90 s after its own
creation (uniformly: several fall due at each second). They are inside the dispatcher's look-ahead,
so each create sends its job's message itself, at once, with whole-second delays: each message
reaches the workers alone, 0.25 to 1.25 s before its second. For comparison, ``jobs / 10`` more are
created in the same stream due 125 to 155 s after their creation, beyond the look-ahead: the minute
tick's sweep sends those, paced and grouped by second. Every job calls a webhook receiver in this
process.

Reported for each size, over ``repetitions`` runs on a fresh ``punctual local`` with its defaults
(a worker process per core, the one-minute tick, the 120 s look-ahead), apart for the runs the API sent
and those the sweep sent: the lateness at the receiver (p50/p95/p99/max: when the request's first bytes
reached its socket, the kernel's time; and, apart, when the receiver's Python had read it) and the
worker's hold
(``hold_ms`` of its outcome lines: the due time minus the moment the message reached the worker;
negative: after it). Lost, early and duplicated deliveries are counted.

    python -m bench.created_soon [--sizes 200,1000] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.common import local_stack, log, machine, spread, summary, worker_holds, write_json
from punctual.cli.local import default_workers
from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from punctual_functions.core.settings import Settings

LOOKAHEAD_SECONDS = Settings().lookahead_seconds
# Due this many seconds after its creation: inside the look-ahead (the API sends it) ...
API_SENT_AHEAD = (30, 90)
# ... and beyond it (the tick's sweep sends it).
SWEEP_SENT_AHEAD = (125, 155)
SWEEP_SENT_SHARE = 10  # one sweep-sent job for every ten API-sent ones
CLIENTS = 4
TARGETS = {"p99_ms": 10.0, "max_ms": 25.0}
SENDERS = ("api", "sweep")


@dataclass
class Job:
    path: str
    sender: str  # "api" (due inside the look-ahead when created) or "sweep" (beyond it)
    ahead: int  # due this many whole seconds after its creation
    due: float = 0.0
    job_id: str = ""


def _plan(rng: random.Random, jobs: int) -> list[Job]:
    """The jobs in creation order: the sweep-sent ones spread evenly through the API-sent ones."""
    planned = [Job(f"/api/{n}", "api", rng.randint(*API_SENT_AHEAD)) for n in range(jobs)]
    for n in range(jobs // SWEEP_SENT_SHARE):
        planned.insert(
            n * (SWEEP_SENT_SHARE + 1), Job(f"/sweep/{n}", "sweep", rng.randint(*SWEEP_SENT_AHEAD))
        )
    return planned


def _run_once(jobs: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    planned = _plan(rng, jobs)
    began = time.monotonic()
    with (
        local_stack(workers=None, tick_seconds=None, lookahead_seconds=None, log_format="json") as stack,
        Receiver() as receiver,
    ):
        lock = threading.Lock()
        queue = iter(planned)

        def create() -> None:
            while True:
                with lock:
                    job = next(queue, None)
                if job is None:
                    return
                job.due = float(int(time.time()) + job.ahead)
                job.job_id = stack.api.create(
                    {
                        "schedule": {"at": iso_at(job.due)},
                        "target": {"type": "http", "url": receiver.url + job.path},
                    }
                )["job_id"]

        started = time.time()
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            for future in [pool.submit(create) for _ in range(CLIENTS)]:
                future.result()
        creating = time.time() - started
        log(f"created_soon: {len(planned)} jobs created in {creating:.1f}s")
        last = max(job.due for job in planned)
        while time.time() < last + 3:
            time.sleep(1)
        deadline = time.time() + 20
        while time.time() < deadline and any(job.path not in receiver.by_path() for job in planned):
            time.sleep(0.5)
        time.sleep(2)  # duplicates, if any, arrive now
        arrivals = receiver.by_path()
        holds = worker_holds(stack.log_text())
    result: dict[str, Any] = {
        "seed": seed,
        "jobs": len(planned),
        "creating_seconds": round(creating, 1),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }
    for sender in SENDERS:
        mine = [job for job in planned if job.sender == sender]
        lateness, handled, hold = [], [], []
        latest: list[tuple[float, float, float | None]] = []
        lost = early = duplicates = 0
        for job in mine:
            got = arrivals.get(job.path, [])
            if not got:
                lost += 1
                continue
            duplicates += len(got) - 1
            late = (got[0].received_at - job.due) * 1000
            early += late < 0
            lateness.append(late)
            handled.append((got[0].handled_at - job.due) * 1000)
            if job.job_id in holds:
                hold.append(holds[job.job_id])
            latest.append((round(late, 1), job.due, holds.get(job.job_id)))
        per_second = [sum(1 for job in mine if job.due == due) for due in {job.due for job in mine}]
        result[sender] = {
            "jobs": len(mine),
            "most_due_at_one_second": max(per_second, default=0),
            "lost": lost,
            "early": early,
            "duplicates": duplicates,
            "lateness_ms": summary(lateness),
            # The same runs at the receiver's handler, once its Python had read the request (the
            # receiver's own queue added): for comparison with figures measured before the kernel's stamp.
            "handled_lateness_ms": summary(handled),
            "hold_ms": summary(hold, 0),
            # The ten latest: lateness (ms), the second of the minute it was due at (the tick is at
            # 0), how many of this sender's runs were due at that second, the worker's hold (ms).
            "latest": [
                [late, int(due) % 60, sum(1 for job in mine if job.due == due), hold_ms]
                for late, due, hold_ms in sorted(latest, key=lambda entry: entry[0], reverse=True)[:10]
            ],
        }
    return result


def iso_at(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def run(sizes: tuple[int, ...] = (200, 1000), repetitions: int = 3, seed: int = 20261128) -> dict[str, Any]:
    began = time.monotonic()
    result: dict[str, Any] = {"name": "created_soon", "sizes": {}}
    for size in sizes:
        runs = []
        for k in range(repetitions):
            log(f"created_soon: {size} jobs, run {k + 1} of {repetitions}")
            runs.append(_run_once(size, seed + k))
        result["sizes"][str(size)] = _aggregate(runs)
    result["targets"] = _targets(result["sizes"])
    result["config"] = {
        "repetitions": repetitions,
        "api_sent_due_after_creation_s": list(API_SENT_AHEAD),
        "sweep_sent_due_after_creation_s": list(SWEEP_SENT_AHEAD),
        "sweep_sent_jobs": f"one for every {SWEEP_SENT_SHARE} API-sent jobs, in the same stream of creates",
        "clients": CLIENTS,
        "stack": "punctual local with its defaults: a worker process per core (at most 4), 60 s tick, 120 s"
        " look-ahead, 4 shards",
        "worker_processes": default_workers(),
        "lookahead_seconds": LOOKAHEAD_SECONDS,
        "seed": seed,
    }
    result["machine"] = machine()
    result["elapsed_seconds"] = round(time.monotonic() - began, 1)
    return result


def _aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure as the median over the runs with the lowest and highest; counts summed."""
    out: dict[str, Any] = {"runs": runs}
    for sender in SENDERS:
        mine = [r[sender] for r in runs]
        out[sender] = {
            "deliveries": sum(m["lateness_ms"].get("count", 0) for m in mine),
            "lost": sum(m["lost"] for m in mine),
            "early": sum(m["early"] for m in mine),
            "duplicates": sum(m["duplicates"] for m in mine),
            "lateness_ms": {
                key: spread(m["lateness_ms"].get(key) for m in mine) for key in ("p50", "p95", "p99", "max")
            },
            "handled_lateness_ms": {
                key: spread(m["handled_lateness_ms"].get(key) for m in mine) for key in ("p50", "p99", "max")
            },
            "hold_ms": {
                key: spread(m["hold_ms"].get(key) for m in mine) for key in ("min", "p50", "p99", "max")
            },
        }
    return out


def _targets(sizes: dict[str, Any]) -> dict[str, bool]:
    """Met on every run: p99 and max lateness at the receiver, none lost, early or twice."""
    met: dict[str, bool] = {}
    for size, figures in sizes.items():
        runs = figures["runs"]
        for sender in SENDERS:
            counted = [r[sender] for r in runs if r[sender]["lateness_ms"].get("count")]
            met[f"{size} {sender}-sent: p99 <= {TARGETS['p99_ms']:g} ms"] = all(
                m["lateness_ms"]["p99"] <= TARGETS["p99_ms"] for m in counted
            )
            met[f"{size} {sender}-sent: max <= {TARGETS['max_ms']:g} ms"] = all(
                m["lateness_ms"]["max"] <= TARGETS["max_ms"] for m in counted
            )
            met[f"{size} {sender}-sent: none lost, early or twice"] = not any(
                m["lost"] or m["early"] or m["duplicates"] for m in (r[sender] for r in runs)
            )
    return met


def report(result: dict[str, Any]) -> str:
    lines = [
        f"== created_soon: {result['config']['repetitions']} runs of each size, each on a fresh stack =="
    ]
    for size, figures in result["sizes"].items():
        for sender in SENDERS:
            f = figures[sender]
            late, hold = f["lateness_ms"], f["hold_ms"]
            lines.append(
                f"{size:>5} jobs, {sender:>5}-sent: {f['deliveries']} delivered, lost {f['lost']},"
                f" early {f['early']}, twice {f['duplicates']}; lateness ms p50 {_cell(late['p50'])},"
                f" p95 {_cell(late['p95'])}, p99 {_cell(late['p99'])}, max {_cell(late['max'])};"
                f" hold ms min {_cell(hold['min'])}, p50 {_cell(hold['p50'])}, max {_cell(hold['max'])}"
            )
    for name, met in result["targets"].items():
        lines.append(f"  {'met ' if met else 'MISSED'} {name}")
    return "\n".join(lines)


def _cell(figure: dict[str, Any]) -> str:
    if not figure.get("runs"):
        return "-"
    if figure["runs"] < 2:
        return f"{figure['median']:g}"
    return f"{figure['median']:g} [{figure['min']:g}-{figure['max']:g}]"


def save(result: dict[str, Any]) -> list[str]:
    return [write_json(result["name"], result).name]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.created_soon", description=__doc__)
    parser.add_argument("--sizes", default="200,1000", help="API-sent jobs of each run, comma-separated")
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    result = run(tuple(int(s) for s in args.sizes.split(",")), args.repetitions)
    save(result)
    print(report(result))


if __name__ == "__main__":
    main()

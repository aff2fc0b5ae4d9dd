"""Dispatch throughput against the local emulator: dispatches per second, per shard and in all.

Jobs are created through the api's own service (in this process) all due in one minute bucket,
well beyond the look-ahead; then the dispatcher sweeps that minute as the tick before it would
(``now`` = the bucket's end minus the look-ahead), dispatching each trigger: its job read, its work
message sent to SQS (in batches of ten), its QUEUED run written. Timed: the sweep only.

It is a lower bound for AWS, on two counts: the emulator serialises every DynamoDB request (one at
a time, across all shards), and it is a Python process on the same two cores as the dispatcher.
On AWS each shard is a different partition and the shards' requests run in parallel.

Repeated (``--repetitions``, each shard count in turn within a repetition, each on a fresh
emulator): the figures are the median over the runs, with the lowest and highest.

    python -m bench.dispatch [--jobs 150] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import emulator, log, machine, median_tree, spread, write_json
from punctual.local.env import local_settings
from punctual.local.provision import provision
from punctual_functions.api.requests import CreateJobIn
from punctual_functions.core.factories import build_dispatcher, build_job_service, build_store
from punctual_functions.core.model import bucket_of, bucket_start, iso

LOOKAHEAD_SECONDS = 60


@contextmanager
def _timing_aws_calls() -> Iterator[dict[str, list[float]]]:
    """How long each AWS call of this process takes, by operation, while the block runs."""
    from botocore.client import BaseClient

    latencies: dict[str, list[float]] = {}
    client_class: Any = BaseClient  # the stubs do not declare the private method patched here
    original = client_class._make_api_call

    def timed(client: Any, operation: str, params: dict[str, Any]) -> Any:
        began = time.perf_counter()
        try:
            return original(client, operation, params)
        finally:
            latencies.setdefault(operation, []).append(time.perf_counter() - began)

    client_class._make_api_call = timed
    try:
        yield latencies
    finally:
        client_class._make_api_call = original


def _measure(
    endpoint: str, shards: int, threads: int, jobs: int, rng: random.Random, repetition: int
) -> dict[str, Any]:
    settings = provision(
        local_settings(
            endpoint,
            prefix=f"dispatch{shards}t{threads}r{repetition}",
            overrides={
                "shard_count": shards,
                "lookahead_seconds": LOOKAHEAD_SECONDS,
                "dispatch_concurrency": threads,
            },
        )
    )
    store = build_store(settings)
    dispatcher = build_dispatcher(settings)
    service = build_job_service(settings, store=store, dispatcher=dispatcher)
    # One minute, ten minutes from now: every job due in it.
    minute = (datetime.now(UTC) + timedelta(minutes=10)).replace(second=0, microsecond=0)
    began = time.perf_counter()
    for _ in range(jobs):
        due = minute + timedelta(milliseconds=rng.randrange(0, 60_000))
        service.create_job(
            "bench",
            CreateJobIn.model_validate(
                {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": "http://127.0.0.1:9/hook"}}
            ),
        )
    create_seconds = time.perf_counter() - began
    bucket = bucket_of(minute)
    for shard in range(shards):
        store.advance_cursor(shard, None, bucket)
    # The tick that sees the whole minute within its look-ahead.
    now = bucket_start(bucket) + timedelta(minutes=1) - timedelta(seconds=LOOKAHEAD_SECONDS)
    with _timing_aws_calls() as latencies:
        began, cpu_began = time.perf_counter(), time.process_time()
        report = dispatcher.sweep_shard(0, now) if shards == 1 else dispatcher.sweep(now)
        seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - cpu_began
    dispatched = report.dispatch.dispatched
    return {
        "repetition": repetition,
        "shards": shards,
        "dispatch_threads": threads,
        "jobs": jobs,
        "dispatched": dispatched,
        "sent": report.dispatch.sent,
        "sweep_seconds": round(seconds, 2),
        "dispatches_per_second": round(dispatched / seconds, 1),
        "dispatches_per_second_per_shard": round(dispatched / seconds / shards, 1),
        # The dispatcher's own CPU (this process; the emulator is another): what bounds one Lambda.
        "dispatcher_cpu_ms_per_dispatch": round(cpu_seconds * 1000 / max(1, dispatched), 2),
        "requests_during_sweep": {
            op: {"count": len(v), "median_ms": round(statistics.median(v) * 1000, 1)}
            for op, v in sorted(latencies.items())
        },
        "create_seconds": round(create_seconds, 1),
        "creates_per_second": round(jobs / create_seconds, 1),
    }


SPREAD = (
    "dispatches_per_second",
    "dispatches_per_second_per_shard",
    "dispatcher_cpu_ms_per_dispatch",
    "sweep_seconds",
)


# (shards, concurrent dispatches per shard's sweep): one at a time, the default four at a time,
# and four shards swept in parallel with four each.
CONFIGURATIONS: tuple[tuple[int, int], ...] = ((1, 1), (1, 4), (4, 4))


def run(
    jobs: int = 150, configurations: tuple[tuple[int, int], ...] = CONFIGURATIONS, repetitions: int = 3
) -> dict[str, Any]:
    began = time.monotonic()
    # The dispatcher logs every run it sends; here that is noise on the terminal.
    logging.getLogger("punctual").setLevel(logging.WARNING)
    rng = random.Random(11)
    runs = []
    for k in range(repetitions):
        for shards, threads in configurations:
            log(
                f"dispatch: run {k + 1} of {repetitions}, {jobs} jobs due in one minute, {shards} shard(s),"
                f" {threads} at a time"
            )
            # A fresh emulator each time: the messages a sweep sends stay in its queue, and moto's
            # SendMessageBatch slows as they pile up (31 ms, then 78 and 95 in the same emulator).
            with emulator(Path(tempfile.mkdtemp(prefix="punctual-bench-dispatch-"))) as endpoint:
                runs.append(_measure(endpoint, shards, threads, jobs, rng, k))
    by_shards = []
    for shards, threads in configurations:
        mine = [r for r in runs if r["shards"] == shards and r["dispatch_threads"] == threads]
        by_shards.append(
            {
                "shards": shards,
                "dispatch_threads": threads,
                **{key: spread((r[key] for r in mine), 2) for key in SPREAD},
                "creates_per_second": spread(r["creates_per_second"] for r in mine),
                "requests_during_sweep": median_tree([r["requests_during_sweep"] for r in mine], 1),
                "per_run": {key: [r[key] for r in mine] for key in SPREAD},
            }
        )
    return {
        "name": "dispatch",
        "what": "dispatcher sweep of one minute bucket against the local emulator: dispatches per second;"
        " the median over the runs, with the lowest and highest",
        "lower_bound": "the emulator serialises all DynamoDB requests and shares 2 cores with the dispatcher",
        "lookahead_seconds": LOOKAHEAD_SECONDS,
        "jobs": jobs,
        "repetitions": repetitions,
        "shards": by_shards,
        "runs": runs,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def _range(figure: dict[str, Any]) -> str:
    if figure.get("runs", 0) < 2:
        return f"{figure.get('median')}"
    return f"{figure['median']:g} ({figure['min']:g}-{figure['max']:g})"


def report(result: dict[str, Any]) -> str:
    lines = [
        f"== dispatches against the emulator (lower bound); median of {result['repetitions']} runs"
        " (lowest-highest) =="
    ]
    for r in result["shards"]:
        lines.append(
            f"{r['shards']} shard(s) x {r.get('dispatch_threads', 1)} at a time,"
            f" {result['jobs']} dispatches: {_range(r['dispatches_per_second'])}/s"
            f" ({_range(r['dispatches_per_second_per_shard'])}/s per shard);"
            f" sweep {_range(r['sweep_seconds'])} s; creates {r['creates_per_second'].get('median')}/s;"
            f" dispatcher CPU {_range(r['dispatcher_cpu_ms_per_dispatch'])} ms/dispatch"
        )
        lines.append(
            "    median per run: "
            + ", ".join(
                f"{op} {v['count']:g}x {v['median_ms']:g} ms" for op, v in r["requests_during_sweep"].items()
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.jobs, repetitions=args.repetitions)
    write_json("dispatch", result)
    from bench import plots

    plots.write("dispatch", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()

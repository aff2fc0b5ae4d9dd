"""The cost benchmark's run: the stack and the receiver, the warm-up and idle ticks, every
scenario in turn, then the recorded calls analysed and priced into the result (its JSON keys)."""

from __future__ import annotations

import random
import time
from typing import Any

from bench import prices
from bench.common import log, machine, median_tree
from bench.cost.analysis import _aggregate, _analyse, _log_lines, _rescans, _table_sizes
from bench.cost.hold import _outcome_lines
from bench.cost.pricing import CAPACITY_NOTE, _dollars, _idle
from bench.cost.scenarios import BATCH, Scenario, _next_tick, _one_offs, _recurring
from bench.cost.stack import LOOKAHEAD_SECONDS, ROLES, SHARDS, TICK_SECONDS, timed_stack
from punctual.testing.receiver import Receiver


def run(
    *,
    one_off: int = 60,
    soon: int = 40,
    crons: int = 20,
    cron_ticks: int = 1,
    repetitions: int = 3,
    seed: int = 7,
) -> dict[str, Any]:
    began = time.monotonic()
    rng = random.Random(seed)
    with timed_stack() as stack, Receiver() as receiver:
        # Warm-up: the first tick sweeps the catch-up horizon from an empty cursor; not typical.
        warmup = _next_tick(stack, 0)
        warmup_until = warmup[1]
        _next_tick(stack, warmup_until)  # an idle tick: what a tick costs with nothing in its window
        stack.counters(reset=True)
        counted_since = time.time()
        scenarios = _one_offs(stack, receiver, repetitions, one_off, soon, rng, warmup)
        log(f"cost: {repetitions} x {one_off} jobs due in a minute, created {BATCH} a request")
        now = time.time()
        scenarios += _one_offs(
            stack, receiver, repetitions, one_off, 0, rng, (now, now + 10), "one_off_batch"
        )
        log(f"cost: {crons} crons every 10 s, {repetitions} x {cron_ticks} tick(s) in steady state")
        scenarios += _recurring(stack, receiver, repetitions, crons, cron_ticks)
        log(f"cost: the same crons with issue 14's controls on, {repetitions} x {cron_ticks} tick(s)")
        scenarios += _recurring(
            stack, receiver, repetitions, crons, cron_ticks, name="recurring_controls", controls=True
        )
        counters = stack.counters()
        counted_until = time.time()
        time.sleep(1)
        events = stack.events(0, time.time() + 1)
        sizes, kinds = _table_sizes(stack.settings)
        logs = {role: _log_lines(stack.workdir / f"{role}.log") for role in ROLES}
        outcomes = _outcome_lines(stack.workdir / "worker.log")
    put_sizes: dict[tuple[str, str], int] = {}
    for event in events:
        for pk, sk, action, size in event.get("writes", []):
            if action == "put" and size:
                put_sizes[(pk, sk)] = max(size, put_sizes.get((pk, sk), 0))
    idle = _idle(events, warmup_until, sizes, put_sizes)
    rescans = _rescans(events, warmup_until, scenarios, idle, sizes, put_sizes)
    # the create is counted
    names = {
        "one_off_ahead": True,
        "one_off_soon": True,
        "one_off_batch": True,
        "recurring": False,
        "recurring_controls": False,
    }
    result_scenarios: dict[str, Any] = {}
    for name, include_create in names.items():
        runs = []
        for scenario in (s for s in scenarios if s.name == name):
            figures = _analyse(scenario, events, idle, sizes, put_sizes, logs, rescans, outcomes)
            figures["cost"] = _dollars(figures, include_create=include_create)
            figures["hold_ms"] = figures.pop("hold_ms")  # beside the cost it explains
            runs.append(figures)
        mine = [s for s in scenarios if s.name == name]
        together = Scenario(
            name,
            -1,
            mine[0].tag[: -len(str(mine[0].repetition)) - 1] if mine[0].tag else None,
            dispatcher=[i for s in mine for i in s.dispatcher],
            worker=[i for s in mine for i in s.worker],
            api=[i for s in mine for i in s.api],
            creates=sum(s.creates for s in mine),
            executions=sum(s.executions for s in mine),
            jobs={job for s in mine for job in s.jobs},
            jobs_shared=mine[0].jobs_shared,
        )
        pooled = _analyse(together, events, idle, sizes, put_sizes, logs, rescans, outcomes)
        pooled["cost"] = _dollars(pooled, include_create=include_create)
        pooled["hold_ms"] = pooled.pop("hold_ms")
        for key in ("intervals", "repetition"):
            pooled.pop(key, None)
        result_scenarios[name] = _aggregate(runs, pooled)
    # Creating a job: the api's requests for the ahead batches (dispatched later by the dispatcher).
    ahead_runs = result_scenarios["one_off_ahead"]["runs"]
    result_scenarios["create_only"] = {
        "requests_per_create": median_tree([r["requests_per_job"]["api"] for r in ahead_runs]),
        "wcu_per_create": median_tree(
            [
                sum(
                    v["wcu"]
                    for k, v in r["dynamodb_capacity_per_job_by_operation"].items()
                    if k[:4] == "api "
                )
                for r in ahead_runs
            ]
        ),
        "api_seconds_per_create": median_tree([r["api_seconds_per_create"] for r in ahead_runs]),
    }
    recorded = sum(1 for e in events if not e.get("invocation") and counted_since <= e["t"] < counted_until)
    # Which answers carried a ConsumedCapacity at all (successful DynamoDB calls; errors never do).
    answered: dict[str, list[int]] = {}
    for event in events:
        if event.get("op", "").startswith("dynamodb:") and event.get("ok"):
            tally = answered.setdefault(event["op"], [0, 0])
            tally[0] += event.get("reported") is not None
            tally[1] += 1
    return {
        "name": "cost",
        "what": "AWS requests and DynamoDB capacity units per executed job by operation and who makes"
        " them, and dollars per million jobs; each scenario repeated, the median of the repetitions",
        "repetitions": repetitions,
        "capacity_units": CAPACITY_NOTE,
        "prices": {"as_of": prices.AS_OF, "region": prices.REGION, "table": prices.TABLE},
        "eventbridge_scheduler_usd_per_million": prices.EVENTBRIDGE_SCHEDULER_INVOCATION * 1e6,
        "config": {
            "repetitions": repetitions,
            "tick_seconds": TICK_SECONDS,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "shards": SHARDS,
            "worker_pollers": 4,
            "one_off_ahead_jobs": one_off,
            "one_off_soon_jobs": soon,
            "crons": crons,
            "cron_ticks_per_repetition": cron_ticks,
            "memory_gb": prices.MEMORY_GB,
        },
        "request_count_check": {
            "emulator_requests": sum(counters.values()),
            "recorded_calls": recorded,
            "emulator_requests_by_operation": dict(sorted(counters.items())),
        },
        "consumed_capacity_in_answers": {
            op: round(with_capacity / total, 2) for op, (with_capacity, total) in sorted(answered.items())
        },
        "item_sizes": kinds,
        "idle_sweep": idle,
        "rescans_per_job": {
            "what": "per executed job, what later ticks spent reading its sent trigger again (the query"
            f" and the check that its run exists), beyond an idle tick; here a tick every {TICK_SECONDS} s"
            f" with a {LOOKAHEAD_SECONDS} s look-ahead reads a trigger in about"
            f" {(LOOKAHEAD_SECONDS + 60) // TICK_SECONDS} ticks, on AWS (a tick a minute, 120 s) in about 3;"
            " included in every scenario's dispatcher figures",
            "units": {op: units.per(1) for op, units in rescans.items()},
        },
        "hold_ms": "per scenario: due time minus the moment the run's message reached the worker, from"
        " the worker's outcome log lines (negative: it arrived after its due time); what the worker's"
        " billed duration waits out. Each run's figure, the median over the repetitions under"
        " median.hold_ms (spread.hold_ms_median, spread.hold_ms_p99) and all repetitions together under"
        " pooled.hold_ms",
        "worker_outcome_lines": len(outcomes),
        "scenarios": result_scenarios,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }

"""What a simulation shows: lateness, lost / early / duplicated starts, throttling, peaks, cost.

Figures of a group of shards are scaled to the deployment (``Deployment.groups``): counts of
requests, units and concurrency are the group's times the number of groups; lateness and the
per-job figures are the group's own.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from punctual.scale.costs import Usage, dynamodb_usd, operating_usd
from punctual.scale.sizes import item_size
from punctual.sim.engine import Simulation
from punctual_functions.core.model import MISSED_REASONS
from punctual_functions.core.store.items import run_to_item


@dataclass(frozen=True)
class Expected:
    """An occurrence the scenario expects to start once, at its second."""

    job_id: str
    due: float  # virtual seconds


def percentile(values: list[float], share: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


@dataclass
class Report:
    scenario: str
    groups: int
    expected: int
    started: int
    lost: int
    skipped_by_policy: int  # missed occurrences the job's misfire policy skipped or collapsed: a row each
    early: int
    duplicated: int
    lateness_ms: dict[str, float]
    within_seconds: dict[str, float]
    throttled: dict[str, int]
    failed_after_retries: int
    peak_wcu_per_second: float
    peak_rcu_per_second: float
    peak_index_wcu_per_second: float  # the owner index's, against its own capacity
    peak_concurrency: dict[str, int]
    peak_in_flight: int
    peak_delayed: int
    requests: dict[str, float]
    usd_per_million_jobs: float
    usd_breakdown: dict[str, float]
    cpu_ms: dict[str, float]
    # By function, a job's share of what its requests carried: KB of items and messages (the SDK's
    # serializing, CPU the planner counts) and requests (``punctual/scale/plan.py`` sizes by them).
    kb_per_job: dict[str, float]
    requests_per_job: dict[str, float]
    api: dict[str, int]
    api_seconds: dict[str, float]  # each API invocation's duration: p50, p99, max; span
    invocation_errors: dict[str, dict[str, int]]
    esm: dict[str, float]
    simulated_seconds: float
    # Each sweep's duration (a group's, from its invocation's start): p50 and max, seconds. A sweep
    # must end well within its tick (docs/scale.md: at most 75 % of it).
    sweep_seconds: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    bulk: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @property
    def correct(self) -> bool:
        return self.lost == 0 and self.early == 0 and self.duplicated == 0


def _not_run_by_policy(simulation: Simulation, occurrence: Expected) -> bool:
    """Whether the occurrence has a row saying why it did not run (the misfire policy skipped it, or
    collapsed it into a later run): the history tells it, so it is not lost."""
    due = simulation.at(occurrence.due)
    for run in simulation.store.runs.get(occurrence.job_id, {}).values():
        if run.reason in MISSED_REASONS and run.scheduled_for <= due <= (
            run.covers_until or run.scheduled_for
        ):
            return True
    return False


def report(
    simulation: Simulation, scenario: str, expected: list[Expected], jobs: int, *, runs_a_month: float = 0.0
) -> Report:
    """Read a finished simulation. ``expected``: the occurrences that must have started;
    ``jobs``: how many executions the cost is shared by (the group's); ``runs_a_month``: the whole
    load's in a month if it went on (Lambda's logs are priced by the month's volume; 0: the first
    tier's price)."""
    groups = simulation.groups  # 1 when the whole deployment was simulated (unsplit)
    calls: dict[tuple[str, str, int], list[float]] = {}
    for call in simulation.targets.calls:
        calls.setdefault((call.job_id, call.run_id, call.attempt), []).append(call.called_at)
    first_calls: dict[tuple[str, float], float] = {}
    for call in simulation.targets.calls:
        if call.attempt == 1:
            key = (call.job_id, round(simulation.seconds(call.scheduled_for), 3))
            first_calls[key] = min(first_calls.get(key, math.inf), call.called_at)
    lateness: list[float] = []
    lost = early = skipped = 0
    for occurrence in expected:
        called = first_calls.get((occurrence.job_id, round(occurrence.due, 3)))
        if called is None:
            if _not_run_by_policy(simulation, occurrence):
                skipped += 1
            else:
                lost += 1
            continue
        late_us = round((called - occurrence.due) * 1e6)  # the clock's resolution: a microsecond
        if late_us < 0:
            early += 1
        lateness.append(late_us / 1000)
    duplicated = sum(len(moments) - 1 for moments in calls.values())
    tables = simulation.tables.stats
    queue = simulation.queue.stats
    lambdas = simulation.lambdas
    params = simulation.params
    provisioned = simulation.deployment.capacity_mode == "provisioned"
    sqs_requests = sum(queue.requests.values()) + simulation.esm.idle_polls
    lambda_requests = sum(stats.invocations for stats in lambdas.functions.values())
    gb_seconds = sum(stats.gb_seconds for stats in lambdas.functions.values())
    usd = {
        "dynamodb writes": dynamodb_usd(params, tables.wcu, 0.0, provisioned=provisioned),
        "dynamodb reads": dynamodb_usd(params, 0.0, tables.rcu, provisioned=provisioned),
        "sqs": sqs_requests * params.usd_per_million_sqs / 1e6,
        "lambda requests": lambda_requests * params.usd_per_million_lambda_requests / 1e6,
        "lambda duration": gb_seconds * params.usd_per_gb_second,
        "api gateway": simulation.api.requests * params.usd_per_million_api_requests / 1e6,
        **operating_usd(
            params,
            _usage(simulation, lambda_requests),
            retention_days=simulation.deployment.settings().run_retention_days,
            runs_a_month=runs_a_month,
        ),
    }
    per_million = {name: round(value / max(1, jobs) * 1e6, 3) for name, value in usd.items()}
    requests: dict[str, float] = {}
    for operation, count in tables.requests.items():
        requests[f"dynamodb:{operation}"] = round(count / max(1, jobs), 3)
    for operation, count in queue.requests.items():
        requests[f"sqs:{operation}"] = round(count / max(1, jobs), 3)
    cpu = {
        name: round(stats.cpu_seconds * 1000 / max(1, jobs), 2) for name, stats in lambdas.functions.items()
    }
    kb: dict[str, float] = {}
    by_function: dict[str, int] = {}
    for books, counts in ((tables.kb, tables.requests), (queue.kb, queue.requests)):
        for books_key, value in books.items():  # "<function> <operation>"
            function = books_key.split(" ", 1)[0]
            kb[function] = kb.get(function, 0.0) + value
        for counts_key, count in counts.items():
            function = counts_key.split(" ", 1)[0]
            by_function[function] = by_function.get(function, 0) + count
    return Report(
        scenario=scenario,
        groups=groups,
        expected=len(expected) * groups,
        started=len(lateness) * groups,
        lost=lost * groups,
        skipped_by_policy=skipped * groups,
        early=early * groups,
        duplicated=duplicated * groups,
        lateness_ms={
            "p50": round(percentile(lateness, 0.5), 1),
            "p99": round(percentile(lateness, 0.99), 1),
            "max": round(max(lateness, default=math.nan), 1),
        },
        within_seconds={
            "1": round(sum(value <= 1000 for value in lateness) / max(1, len(lateness)), 4),
            "60": round(sum(value <= 60_000 for value in lateness) / max(1, len(lateness)), 4),
        },
        throttled={
            f"{kind} {operation}": count * groups for (kind, operation), count in tables.throttled.items()
        },
        failed_after_retries=tables.failed_after_retries * groups,
        peak_wcu_per_second=round(tables.peak_wcu_per_second),
        peak_rcu_per_second=round(tables.peak_rcu_per_second),
        peak_index_wcu_per_second=round(tables.index_peak_wcu_per_second),
        peak_concurrency={
            "account": lambdas.peak_running * groups,
            **{name: stats.peak_running * groups for name, stats in lambdas.functions.items()},
        },
        peak_in_flight=queue.peak_in_flight * groups,
        peak_delayed=queue.peak_delayed * groups,
        requests=requests,
        usd_per_million_jobs=round(sum(per_million.values()), 2),
        usd_breakdown=per_million,
        cpu_ms=cpu,
        kb_per_job={name: round(value / max(1, jobs), 2) for name, value in sorted(kb.items())},
        requests_per_job={
            name: round(count / max(1, jobs), 3) for name, count in sorted(by_function.items())
        },
        api={name: count * groups for name, count in vars(simulation.api).items()},
        api_seconds={
            "p50": round(percentile(simulation.api_seconds, 0.5), 3),
            "p99": round(percentile(simulation.api_seconds, 0.99), 3),
            "max": round(max(simulation.api_seconds, default=math.nan), 3),
            # from the first request to the last success: how long the load took to be accepted
            "span": round(simulation.api_span[1] - simulation.api_span[0], 1) if simulation.api_span else 0.0,
        },
        invocation_errors={name: stats.errors for name, stats in lambdas.functions.items() if stats.errors},
        esm={
            "peak_batches": simulation.esm.peak_busy * groups,
            "batches": simulation.esm.batches * groups,
            "records_per_batch": round(simulation.esm.records / max(1, simulation.esm.batches), 2),
            "throttled": simulation.esm.throttled * groups,
        },
        simulated_seconds=simulation.world.now,
        sweep_seconds=_sweeps(simulation),
    )


def _sweeps(simulation: Simulation) -> dict[str, float]:
    durations = [end - began for began, end in simulation.ticks if end is not None]
    return {
        "p50": round(percentile(durations, 0.5), 1),
        "max": round(max(durations, default=math.nan), 1),
        "sweeps": len(durations),
    }


def bulk_summary(simulation: Simulation) -> dict[str, Any]:
    """A bulk action's client as it went: its requests, how long each took, what they did."""
    steps = simulation.bulk_steps
    if not steps:
        return {}
    summary: dict[str, Any] = {"done": simulation.bulk_done is not None, "jobs": len(simulation.store.jobs)}
    for action in dict.fromkeys(step.action for step in steps):
        mine = [step for step in steps if step.action == action]
        seconds = [step.seconds for step in mine]
        summary[action] = {
            "requests": len(mine),
            "acted_on": sum(step.acted_on for step in mine),
            "refused": sum(step.refused for step in mine),
            "seconds_per_request": {"p50": round(percentile(seconds, 0.5), 2), "max": round(max(seconds), 2)},
            "total_seconds": round(mine[-1].sent + mine[-1].seconds - mine[0].sent, 1),
        }
    summary["statuses_at_end"] = dict(Counter(job.status.value for job in simulation.store.jobs.values()))
    return summary


def _usage(simulation: Simulation, invocations: int) -> Usage:
    """The runs the simulation recorded and their bytes as the table stores them."""
    expires = datetime(2100, 1, 1, tzinfo=UTC)  # the TTL attribute's size does not depend on it
    runs = [run for by_run in simulation.store.runs.values() for run in by_run.values()]
    return Usage(
        runs=len(runs),
        invocations=invocations,
        run_bytes=sum(item_size(run_to_item(run, expires)) for run in runs),
        poller_hours=simulation.esm.poller_seconds / 3600,
    )

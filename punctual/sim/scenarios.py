"""The scenarios of docs/scale.md: what load reaches the API, when, and what must start.

Each builds a ``Simulation`` of one group of shards (``Deployment.groups`` stand for the rest), feeds
it jobs through the API's own logic, runs it, and reports (``sim.report``). Every occurrence due in
the measured window must start once, at or after its second.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from punctual.scale.costs import MINUTES_A_MONTH
from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS, Parameters
from punctual.scale.plan import plan
from punctual.sim.engine import HOOK_HOST, Simulation
from punctual.sim.report import Expected, Report, bulk_summary, report
from punctual_functions.core.model import iso

EPOCH = datetime(2026, 12, 1, tzinfo=UTC)
TARGET = {"type": "http", "url": f"https://{HOOK_HOST}/hook"}
OWNERS = 50  # jobs are spread over this many owners (the owner index's partitions)
DRAIN_SECONDS = 180  # after the window: late runs, retries
BULK_HORIZON = 4 * 3600.0  # a bulk action's client not done by then is reported as such


@dataclass(frozen=True)
class Load:
    """Jobs due in the measured window, and how they reach the API."""

    jobs_per_minute: int
    minutes: int = 2
    cron_fraction: float = 0.3
    # One-offs are created this long before their second (uniform), a hundred to a request.
    lead_seconds: tuple[float, float] = (130.0, 400.0)
    # All one-offs due at this second of the window's first minute instead of spread over it.
    same_second: bool = False
    # One owner: every job belongs to it (the owner index's one partition).
    one_owner: bool = False
    # Whole seconds, as most callers schedule; else spread over the millisecond.
    whole_seconds: bool = False
    # The same load runs this long before the measured window (a steady state: warm functions, a
    # table and an event source scaled to it); 0 for a load that comes out of the blue.
    warmup_minutes: int = 1
    # Every one-off created at a moment uniform in this span (seconds from the window's start,
    # negative: before it) instead of its lead before its second: a burst of creates.
    created_within: tuple[float, float] | None = None
    # Creates carry an Idempotency-Key (a retried request answers as the first time).
    idempotent: bool = False


@dataclass(frozen=True)
class BulkLoad:
    """An owner's jobs, created ahead at a pace its index takes, then paused and resumed by tag."""

    jobs: int
    created_per_second: float = 150.0
    action_at: float = 60.0  # seconds after the last create


@dataclass
class Scenario:
    name: str
    load: Load
    deployment: Deployment = field(default_factory=Deployment)
    params: Parameters = DEFAULTS
    first_minute: int = 8
    idle_minutes: int = 0  # an idle stretch before the window (the spike after an idle hour)
    # The dispatcher down from the window's start for this long (its ticks fail), then back: the
    # window's occurrences are missed and the misfire policies (run_once: the crons) decide.
    dispatcher_down_minutes: int = 0
    target_latency_seconds: float = 0.05
    seed: int = 1
    bulk: BulkLoad | None = None
    # The whole deployment in one world (every group's sweep fanned out) instead of one group of
    # shards standing for the rest: how the group agreement is shown (slower: every group's load).
    unsplit: bool = False


def _body(schedule: dict[str, Any], owner_hint: str) -> dict[str, Any]:
    return {"schedule": schedule, "target": TARGET, "tags": {"load": owner_hint}}


def build(scenario: Scenario) -> tuple[Simulation, float, float]:
    """The simulation with its load scheduled; the measured window (virtual seconds)."""
    load = scenario.load
    first = (scenario.first_minute + scenario.idle_minutes) * 60
    window = (float(first), float(first + load.minutes * 60))
    loaded = window[0] - load.warmup_minutes * 60  # when the load starts (the warm-up's start)
    down = None
    if scenario.dispatcher_down_minutes:
        down = (window[0], window[0] + scenario.dispatcher_down_minutes * 60)
    simulation = Simulation(
        scenario.params,
        scenario.deployment,
        epoch=EPOCH,
        seed=scenario.seed,
        target_latency_seconds=scenario.target_latency_seconds,
        dispatcher_down=down,
        unsplit=scenario.unsplit,
    )
    rng = random.Random(scenario.seed)
    per_group = load.jobs_per_minute / simulation.groups
    crons = round(per_group * load.cron_fraction)
    one_offs = round(per_group - crons)

    def owner(index: int) -> str:
        return "owner-0" if load.one_owner else f"owner-{index % OWNERS}"

    # Recurring jobs: one occurrence a minute each, spread over the minute, created in the first
    # minute of the simulation (the chain carries them from then on).
    cron_bodies: dict[str, list[dict[str, Any]]] = {}
    for index in range(crons):
        offset = rng.randrange(60) if load.whole_seconds else rng.random() * 60
        start = simulation.at(loaded + offset)
        schedule = {"rate": "1 minute", "start_at": iso(start), "end_at": iso(simulation.at(window[1]))}
        cron_bodies.setdefault(owner(index), []).append(_body(schedule, "cron"))
    for who, bodies in cron_bodies.items():
        for chunk in range(0, len(bodies), 100):
            simulation.create_batch(rng.random() * 50, who, bodies[chunk : chunk + 100])
    # One-offs: due over the window, each created its lead before its second.
    dues: list[float] = []
    for minute in range(load.warmup_minutes + load.minutes):
        for _ in range(one_offs):
            if load.same_second:
                dues.append(loaded + minute * 60 + 30)
            elif load.whole_seconds:
                dues.append(loaded + minute * 60 + rng.randrange(60))
            else:
                dues.append(loaded + minute * 60 + round(rng.random() * 60, 3))
    within = load.created_within
    planned = sorted(
        (
            window[0] + rng.uniform(*within) if within else max(0.0, due - rng.uniform(*load.lead_seconds)),
            due,
        )
        for due in dues
    )
    for index, chunk in enumerate(range(0, len(planned), 100)):
        batch = planned[chunk : chunk + 100]
        bodies = [_body({"at": iso(simulation.at(due))}, "one-off") for _created, due in batch]
        simulation.create_batch(batch[0][0], owner(index), bodies, idempotent=load.idempotent)
    if scenario.bulk is not None:
        _bulk(simulation, scenario.bulk)
    return simulation, window[0], window[1]


BULK_TAGS = {"group": "bulk"}
FAR_CRON = {"cron": "0 3 1 1 *"}  # once a year: the jobs wait, the bulk action is what runs


def _bulk(simulation: Simulation, bulk: BulkLoad) -> None:
    """One owner's ``bulk.jobs`` jobs tagged ``group=bulk``, created a hundred to a request at
    ``created_per_second``; then a client pauses them all by tag, and when it is done, resumes them."""
    body = {"schedule": FAR_CRON, "target": TARGET, "tags": BULK_TAGS}
    requests = -(-bulk.jobs // 100)
    for index in range(requests):
        count = min(100, bulk.jobs - index * 100)
        simulation.create_batch(
            index * 100 / bulk.created_per_second, "owner-0", [body] * count, idempotent=True
        )
    simulation.bulk(
        bulk.jobs / bulk.created_per_second + bulk.action_at,
        "owner-0",
        [{"action": "pause", "tags": BULK_TAGS}, {"action": "resume", "tags": BULK_TAGS}],
    )


def expected_in(simulation: Simulation, start: float, end: float) -> list[Expected]:
    """Every occurrence of every job due in [start, end), from the jobs as the table holds them."""
    expected = []
    for job in simulation.store.jobs.values():
        for moment in job.schedule.occurrences_from(simulation.at(start), simulation.at(end), 10_000):
            expected.append(Expected(job.job_id, simulation.seconds(moment)))
    return expected


def run(scenario: Scenario, *, progress: Callable[[str], None] | None = None) -> Report:
    began = time.perf_counter()
    simulation, start, end = build(scenario)
    back = start + scenario.dispatcher_down_minutes * 60
    simulation.run(max(end, back) + DRAIN_SECONDS)
    while scenario.bulk is not None and simulation.bulk_done is None and simulation.world.now < BULK_HORIZON:
        simulation.run(simulation.world.now + 600)  # until the bulk action's client is done
    expected = expected_in(simulation, start, end)
    executions = len(simulation.targets.calls)
    # A steady load's month of logs is priced at its tiers; a load out of the blue at the first's.
    steady = scenario.load.warmup_minutes > 0
    runs_a_month = scenario.load.jobs_per_minute * MINUTES_A_MONTH if steady else 0.0
    result = report(simulation, scenario.name, expected, executions, runs_a_month=runs_a_month)
    result.wall_seconds = round(time.perf_counter() - began, 1)
    result.bulk = bulk_summary(simulation)
    if simulation.api.failed:
        result.notes.append(f"{simulation.api.failed} API requests failed")
    if progress is not None:
        progress(f"{scenario.name}: {result.wall_seconds} s")
    return result


# The deployments ``punctual plan`` recommends: the simulator checks the planner's sizing.
MILLION = plan(1_000_000).deployment
MILLION_SPIKE = plan(1_000_000, spike=True).deployment
HUNDRED_THOUSAND = plan(100_000).deployment
TEN_THOUSAND = plan(10_000).deployment

SCENARIOS: dict[str, Scenario] = {
    "steady-1k": Scenario("steady 1,000 a minute", Load(1_000)),
    "steady-10k": Scenario("steady 10,000 a minute", Load(10_000), TEN_THOUSAND),
    "steady-100k": Scenario("steady 100,000 a minute", Load(100_000), HUNDRED_THOUSAND),
    "steady-1m": Scenario("steady 1,000,000 a minute", Load(1_000_000), MILLION),
    "steady-1m-30min": Scenario(
        "steady 1,000,000 a minute for 30 minutes", Load(1_000_000, minutes=30), MILLION
    ),
    "spike-1m": Scenario(
        "1,000,000 due in one minute after an idle hour",
        Load(1_000_000, minutes=1, cron_fraction=0.0, warmup_minutes=0, lead_seconds=(130.0, 3500.0)),
        MILLION_SPIKE,
        first_minute=2,
        idle_minutes=58,
    ),
    "dispatcher-down-1h": Scenario(
        "10,000 a minute due while the dispatcher is down for an hour, then back",
        Load(10_000, minutes=5, lead_seconds=(300.0, 400.0)),
        dispatcher_down_minutes=60,
    ),
    "one-owner-5k-per-second": Scenario(
        "one owner creating 5,000 jobs a second (50,000 in 10 s, due over the next 5 minutes)",
        Load(
            10_000,
            minutes=5,
            cron_fraction=0.0,
            warmup_minutes=0,
            one_owner=True,
            created_within=(-290.0, -280.0),
            idempotent=True,
        ),
    ),
    "bulk-100k-one-owner": Scenario(
        "a bulk pause by tag over 100,000 jobs of one owner",
        Load(0, minutes=1, warmup_minutes=0),
        first_minute=1,
        bulk=BulkLoad(100_000),
    ),
    "same-second-100k": Scenario(
        "100,000 due at the same second",
        Load(100_000, minutes=1, cron_fraction=0.0, same_second=True, warmup_minutes=0),
        HUNDRED_THOUSAND,
    ),
}

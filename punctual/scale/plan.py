"""The capacity planner: the settings to deploy for a load, the quotas to ask AWS for, and what it
should cost, from the scale model's parameters (``params``). ``punctual plan`` prints it; the
simulator's large scenarios run exactly these settings (``punctual/sim/scenarios.py``), which is how the
planner's sizing is checked (docs/scale.md).

The sizing, each step from a parameter or a simulated figure, each with the margin docs/scale.md
publishes (every sensitive parameter at 1.5x its value, one at a time):

- **Sweeps.** A busy sweep is CPU-bound: each dispatch costs its requests' CPU on the boto3 path and
  the CPU of the bytes they carry (one run written for every job, a job read and a next occurrence
  written for a recurring one, a share of the bucket's query and of the sends), as the simulator
  counts them. One sweep invocation (a full vCPU) is given the CPU that, made half as much again,
  still ends within 90 % of its tick after its staggered start (36 s alone, 29 s fanned out); the
  shards are two a sweep, at least the default eight.
- **Worker.** An invocation lasts its head start, its target's call and its records' CPU at its
  share of a vCPU, its batch's records due over a spread of time; the batch as the event source
  fills it at load. Its concurrency is sized for a target answering in 500 ms, ten times the
  scenarios' 50 ms. Beyond the event source's default ceiling (1,250), or for a spike, provisioned
  pollers.
- **Table.** Write and read units a second from the units a job uses (simulated), with a margin;
  beyond the on-demand defaults, the table's maximum raised and its warm throughput set, so that it
  serves the load at once rather than doubling its previous peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from punctual.scale.costs import MINUTES_A_MONTH, Usage, dynamodb_usd, operating_usd
from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS, Parameters
from punctual_functions.core.resources import DISPATCHER_MEMORY_MB, WORKER_MEMORY_MB
from punctual_functions.core.sweep import FANOUT_SPREAD

# The run history's retention the cost assumes: the deployment's default.
RUN_RETENTION_DAYS = Deployment().settings().run_retention_days

# The margin a plan is sized for: each sensitive parameter made worse by this much
# (punctual/sim/sensitivity.py checks the plans so).
MARGIN = 1.5
TICK_SECONDS = 60.0
# A sweep's CPU made MARGIN times more still ends within this share of its tick, its staggered
# start included (a fanned-out tick starts its sweeps over FANOUT_SPREAD). The sensitivity table found
# 45 s of CPU a sweep too much: CPU a request x1.5 left 100,000 and 1,000,000 a minute's sweeps behind
# their ticks, runs tens of seconds late.
SWEEP_END_SHARE = 0.9
DEFAULT_SHARDS = 8
MAX_MINIMUM_POLLERS = 200  # ProvisionedPollerConfig's MinimumPollers (Lambda API)
BATCH = 10
# Simulated units a second per job a second, with a margin (docs/scale.md: ~7 write units a job,
# reads in bursts at each tick): what the table's maxima are sized for.
WCU_MARGIN = 1.5
WCU_PER_JOB = 7.0 * WCU_MARGIN
RCU_PER_JOB = 5.0 * 1.6
# The units a job consumes, as the simulator counts them at the scenarios' mix (30 % recurring): what
# the cost counts, and a provisioned table's minima. The audit trail's record of each create is about
# one of the writes.
WRITE_UNITS_PER_JOB = 6.2
READ_UNITS_PER_JOB = 2.8
# The owner index's write units per job a second, with a margin: a job's index entry is written when
# it is created and when it ends (about 0.7 a job, as the audit measured at a million a minute).
INDEX_WCU_PER_JOB = 0.7 * 1.5
HEAD_START_SECONDS = 0.25
TARGET_SECONDS = 0.05  # a target answering in 50 ms, as the scenarios assume: what the cost counts
SLOW_TARGET_SECONDS = 0.5  # what the worker's concurrency is sized for (the margin's slow target)
# A worker's run, as the simulator counts it: its requests besides the target's call (the start and
# outcome writes, its job read for some), its batch's (the runs' read, the visibility change), the KB
# they carry; and how far apart a batch's records arrive and are due: the invocation waits for its
# last, ARRIVAL_SPREAD_SECONDS x (1 - 1/batch) on average (simulated: 0.02 s with 1.14 records a
# batch, 0.11 s with 1.68, 0.20 s with 5.8).
WORKER_REQUESTS = 2.5
WORKER_BATCH_REQUESTS = 2.0
WORKER_KB = 1.6
ARRIVAL_SPREAD_SECONDS = 0.24
# The share of its pollers' time a worker's event source is planned to keep busy with a slow target
# (each poller holds an invocation for its batch's time: Little's law gives the pollers a load needs).
POLLER_UTILIZATION = 0.6
# As the simulator shows them: the share of the time a poller holds an invocation at load (0.69 at
# 100,000 a minute), and how close together in time a sweep's messages that become visible at once are
# (1.14 a batch at 1,000 a minute, 1.68 at 5,000: 8 ms).
POLLER_BUSY = 0.7
VISIBLE_TOGETHER_SECONDS = 0.008
# What a dispatch carries, as the simulator counts it at the scenarios' mix (30 % recurring): the
# requests of a one-off (its run written, a share of the bucket's query, of the claims and of the
# sends), the two more of a recurring one (its job read, its next occurrence written), and the KB
# the SDK serializes and parses for them (a trigger carries its job; tests/sim/test_plan_agrees.py).
DISPATCH_REQUESTS = 1.12
DISPATCH_REQUESTS_RECURRING = 2.0
DISPATCH_KB = 4.3
# Above this load (and steady: no spike) the table is planned in provisioned mode. Below it the
# saving is small and on-demand needs no sizing.
PROVISIONED_TABLE_FROM = 10_000


@dataclass(frozen=True)
class Plan:
    jobs_per_minute: int
    crons: float
    spike: bool
    deployment: Deployment
    dispatch_cpu_ms: float
    worker_seconds: float  # a worker invocation's duration
    records_per_batch: float
    usd_per_million: dict[str, float]
    # The same load's cost with the table in the other capacity mode: why this one was chosen.
    other_mode_usd_per_million: dict[str, float] = field(default_factory=dict)
    quotas: list[str] = field(default_factory=list)

    @property
    def usd_per_month(self) -> float:
        return sum(self.usd_per_million.values()) * self.jobs_per_minute * MINUTES_A_MONTH / 1e6


def plan(
    jobs_per_minute: int, *, crons: float = 0.3, spike: bool = False, params: Parameters = DEFAULTS
) -> Plan:
    """The deployment for ``jobs_per_minute`` due jobs (``crons`` of them recurring executions)."""
    if jobs_per_minute < 1 or not 0 <= crons <= 1:
        raise ValueError("jobs_per_minute must be at least 1 and crons a fraction between 0 and 1")
    per_second = jobs_per_minute / 60
    dispatch_cpu_ms = dispatch_cpu(params, crons)
    dispatcher_vcpu = min(1.0, DISPATCHER_MEMORY_MB / params.lambda_full_vcpu_mb)
    cpu_seconds = jobs_per_minute * dispatch_cpu_ms / 1000 / dispatcher_vcpu  # a minute's dispatches
    sweeps = max(1, math.ceil(cpu_seconds / sweep_seconds(1)))
    if sweeps > 1:  # fanned out: each sweep starts up to FANOUT_SPREAD late
        sweeps = math.ceil(cpu_seconds / sweep_seconds(sweeps))
    shards = max(DEFAULT_SHARDS, 2 * sweeps)
    shards = math.ceil(shards / sweeps) * sweeps  # each sweep its own whole shards
    # The pollers a target answering in SLOW_TARGET_SECONDS keeps busy POLLER_UTILIZATION of the
    # time, each holding an invocation of a full batch for its time (Little's law).
    slow = invocation_seconds(params, BATCH, SLOW_TARGET_SECONDS)
    workers = max(50, math.ceil(per_second * slow / (BATCH * POLLER_UTILIZATION)))
    # Beyond what MaximumConcurrency may be set to, or for a spike: provisioned pollers (AWS takes
    # one of the two).
    provisioned = spike or workers > min(params.esm_maximum_concurrency_setting, params.esm_max_concurrency)
    account = workers + sweeps + 1 + math.ceil(per_second / 100)  # the API: batches of 100
    wcu, rcu = per_second * WCU_PER_JOB, per_second * RCU_PER_JOB
    quotas: list[str] = []
    changes: dict[str, int | None] = {}
    if account > params.lambda_account_concurrency * 0.8:
        changes["account_concurrency"] = _round_up(account * 1.5)
        quotas.append(f"Lambda concurrent executions: {changes['account_concurrency']:,} (default 1,000)")
    # The table's mode: provisioned with auto scaling for a steady, dense load (a unit kept busy at
    # the target utilization costs about a third of on-demand's), on-demand otherwise (a spike or a
    # burst is served at once up to double the previous peak, where auto scaling takes minutes).
    steady_provisioned = not spike and jobs_per_minute > PROVISIONED_TABLE_FROM
    utilization = params.ddb_target_utilization
    if steady_provisioned:
        changes["capacity_mode"] = "provisioned"  # type: ignore[assignment]
        changes["table_max_write_units"] = _round_up(wcu / utilization)
        changes["table_max_read_units"] = _round_up(rcu / utilization)
        changes["index_max_write_units"] = _round_up(per_second * INDEX_WCU_PER_JOB / utilization)
        # The steady load itself (its units without the planner's margin) kept provisioned at least.
        changes["table_min_write_units"] = _round_up(per_second * WRITE_UNITS_PER_JOB / utilization)
        # Reads come in bursts at each tick: the minimum keeps their average, DynamoDB's burst
        # capacity (up to five minutes of unused units) serves the tick's burst above it.
        changes["table_min_read_units"] = _round_up(per_second * READ_UNITS_PER_JOB / utilization)
        changes["index_min_write_units"] = _round_up(per_second * INDEX_WCU_PER_JOB / 1.5 / utilization)
        if wcu / utilization > params.ddb_table_wcu * 0.8 or rcu / utilization > params.ddb_table_rcu * 0.8:
            quotas.append(
                f"DynamoDB table throughput: {changes['table_max_write_units']:,} write and"
                f" {changes['table_max_read_units']:,} read capacity units a second (default 40,000 each)"
            )
    elif wcu > params.ddb_table_wcu * 0.8 or rcu > params.ddb_table_rcu * 0.8:
        changes["table_max_wcu"] = _round_up(max(wcu, params.ddb_table_wcu))
        changes["table_max_rcu"] = _round_up(max(rcu, params.ddb_table_rcu))
        quotas.append(
            f"DynamoDB table throughput: {changes['table_max_wcu']:,} write and"
            f" {changes['table_max_rcu']:,} read request units a second (default 40,000 each)"
        )
    if not steady_provisioned and (
        wcu > 2 * params.ddb_initial_peak_wcu or rcu > 2 * params.ddb_initial_peak_rcu
    ):
        changes["table_warm_wcu"] = _round_up(wcu)
        changes["table_warm_rcu"] = _round_up(rcu)
    index_wcu = per_second * INDEX_WCU_PER_JOB
    if not steady_provisioned and index_wcu > 2 * params.ddb_index_initial_peak_wcu:
        changes["index_warm_wcu"] = _round_up(index_wcu)
    if provisioned:
        quotas.append(
            "the worker's event source in provisioned mode (pollers scale 1,000 a minute, to 20,000)"
        )
    if provisioned:
        # Pollers kept ready for half the steady load's concurrency, the event source scaling the
        # rest: from the mode's minimum it took the simulated million a minute more than a minute,
        # its first jobs seconds late. Kept ready for all of it, every poller finds fewer messages
        # waiting, and smaller batches each pay an invocation's hold (docs/scale.md).
        minimum = min(MAX_MINIMUM_POLLERS, math.ceil(workers / 2 / params.esm_invocations_per_poller))
        # Pollers to scale to, within what MaximumPollers may be: a steady load's concurrency (sized
        # for a slow target already); a spike's and half again. The event source scales while
        # messages wait, which at a steady load they always briefly do: given half again, the
        # simulated steady million reached it in half an hour, its batches smaller, $4.90 a million
        # instead of $4.33.
        room = 1.5 if spike else 1.0
        maximum = min(
            params.esm_maximum_pollers, math.ceil(workers * room / params.esm_invocations_per_poller)
        )
        changes["minimum_pollers"] = min(minimum, maximum)
        changes["maximum_pollers"] = max(minimum, maximum)
    deployment = Deployment(
        shard_count=shards,
        sweep_invocations=sweeps,
        dispatch_concurrency=16 if sweeps > 1 else 4,
        worker_max_concurrency=workers,
        provisioned_pollers=provisioned,
        **changes,  # type: ignore[arg-type]
    )
    batch = records_per_batch(params, per_second, workers, sweeps)
    worker_seconds = invocation_seconds(params, batch, TARGET_SECONDS)
    # Provisioned mode bills its event pollers by the hour: those the load's concurrency keeps.
    pollers = workers / params.esm_invocations_per_poller if provisioned else 0.0
    poller_hours = pollers * 1e6 / (per_second * 3600)  # a million jobs' share
    # Lambda's logs are priced by the month's volume: a steady load's month of them (a spike's at the
    # first tier's price).
    runs_a_month = 0.0 if spike else jobs_per_minute * MINUTES_A_MONTH
    costed = (params, crons, dispatch_cpu_ms, worker_seconds, batch, poller_hours, runs_a_month)
    return Plan(
        jobs_per_minute=jobs_per_minute,
        crons=crons,
        spike=spike,
        deployment=deployment,
        dispatch_cpu_ms=round(dispatch_cpu_ms, 2),
        worker_seconds=round(worker_seconds, 2),
        records_per_batch=round(batch, 2),
        usd_per_million=_cost(*costed, provisioned_table=steady_provisioned),
        other_mode_usd_per_million=_cost(*costed, provisioned_table=not steady_provisioned),
        quotas=quotas,
    )


def sweep_seconds(sweeps: int) -> float:
    """The CPU seconds a sweep is given of each tick: made MARGIN times more, it ends within
    SWEEP_END_SHARE of the tick after its staggered start (36 s alone, 29 s fanned out)."""
    stagger = FANOUT_SPREAD.total_seconds() if sweeps > 1 else 0.0
    return (TICK_SECONDS * SWEEP_END_SHARE - stagger) / MARGIN


def dispatch_cpu(params: Parameters, crons: float) -> float:
    """CPU milliseconds (one vCPU's) a dispatch takes, ``crons`` of them recurring."""
    requests = DISPATCH_REQUESTS + DISPATCH_REQUESTS_RECURRING * crons
    return params.cpu_per_request_ms * requests + params.cpu_per_kb_ms * DISPATCH_KB


def worker_cpu(params: Parameters, batch: float) -> float:
    """CPU milliseconds (one vCPU's) a worker's run takes in a batch of ``batch`` records: its
    requests and the target's call, the KB they carry, its own code, its share of the invocation's."""
    requests = WORKER_REQUESTS + 1 + WORKER_BATCH_REQUESTS / batch
    return (
        params.cpu_per_request_ms * requests
        + params.cpu_per_kb_ms * WORKER_KB
        + params.cpu_per_record_ms
        + params.cpu_per_invocation_ms / batch
    )


def invocation_seconds(params: Parameters, batch: float, target_seconds: float) -> float:
    """How long a worker's invocation of ``batch`` records lasts: its head start, its records
    arriving and due apart, the target's call, the records' CPU at the worker's vCPU."""
    vcpu = min(1.0, WORKER_MEMORY_MB / params.lambda_full_vcpu_mb)
    cpu = batch * worker_cpu(params, batch) / 1000 / vcpu
    return HEAD_START_SECONDS + ARRIVAL_SPREAD_SECONDS * (1 - 1 / batch) + target_seconds + cpu


def records_per_batch(params: Parameters, per_second: float, pollers: int, sweeps: int = 1) -> float:
    """The records of a worker's batch at ``per_second`` runs a second with ``pollers`` concurrent
    invocations, one to ten. A message becomes visible before its run is due and a free poller takes
    what is visible at once: at load each poller holds an invocation most of the time
    (POLLER_BUSY), and a batch holds what arrives over one (Little's law: per_second x its duration
    / busy pollers); at a light load, what becomes visible together (a sweep's send)."""
    together = 1 + per_second / sweeps * VISIBLE_TOGETHER_SECONDS
    batch = 1.0
    for _ in range(20):  # the duration depends on the batch: its fixed point
        held = per_second * invocation_seconds(params, batch, TARGET_SECONDS) / (pollers * POLLER_BUSY)
        batch = min(BATCH, max(together, held))
    return batch


def _cost(
    params: Parameters,
    crons: float,
    dispatch_cpu_ms: float,
    worker_seconds: float,
    batch: float,
    poller_hours: float,
    runs_a_month: float,
    *,
    provisioned_table: bool = False,
) -> dict[str, float]:
    """Dollars per million jobs, by service: the units and requests a job uses (as the simulator
    counts them at load), the worker's invocations shared by a batch, the dispatcher's CPU time."""
    sqs = 3 / batch + 0.11  # a receive, a delete and a visibility change a batch; a send for ten
    gb_seconds = worker_seconds / batch * WORKER_MEMORY_MB / 1024
    gb_seconds += dispatch_cpu_ms / 1000 * DISPATCHER_MEMORY_MB / 1024
    api = 1 - crons  # a one-off is created once, a hundred to a request
    invocations = 1e6 * (1 / batch + api / 100)  # the dispatcher's ticks are a rounding error
    operating = operating_usd(
        params,
        Usage(
            runs=1e6,
            invocations=invocations,
            run_bytes=1e6 * params.run_item_bytes,
            poller_hours=poller_hours,
        ),
        retention_days=RUN_RETENTION_DAYS,
        runs_a_month=runs_a_month,
    )
    dynamodb = dynamodb_usd(
        params, WRITE_UNITS_PER_JOB * 1e6, READ_UNITS_PER_JOB * 1e6, provisioned=provisioned_table
    )
    return {
        "dynamodb": round(dynamodb, 2),
        "sqs": round(sqs * params.usd_per_million_sqs, 2),
        "lambda": round(
            gb_seconds * 1e6 * params.usd_per_gb_second
            + invocations * params.usd_per_million_lambda_requests / 1e6,
            2,
        ),
        "api gateway": round(api / 100 * params.usd_per_million_api_requests, 3),
        **{name: round(usd, 3) for name, usd in operating.items()},
    }


def _round_up(value: float) -> int:
    """Up to two significant digits: what a quota request asks for."""
    if value <= 0:
        return 0
    magnitude = 10 ** max(0, math.floor(math.log10(value)) - 1)
    return int(math.ceil(value / magnitude) * magnitude)

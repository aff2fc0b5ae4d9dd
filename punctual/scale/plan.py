"""The capacity planner: the settings to deploy for a load, the quotas to ask AWS for, and what it
should cost, from the scale model's parameters (``params``). ``punctual plan`` prints it; the
simulator's large scenarios run exactly these settings (``punctual/sim/scenarios.py``), which is how the
planner's sizing is checked (docs/scale.md).

The sizing, each step from a parameter or a simulated figure:

- **Sweeps.** A busy sweep is CPU-bound: each dispatch costs its requests' CPU on the boto3 path (one
  run written for every job, a job read and a next occurrence written for a recurring one, a share of
  the bucket's query and run reads). One sweep invocation (a full vCPU) is given 40 s of each minute;
  the shards are two a sweep, at least the default eight.
- **Worker.** Runs a second, ten to a batch; an invocation lasts its head start, the call and its
  records' CPU at its share of a vCPU, with a margin for the due times a batch spans. Beyond the
  event source's default ceiling (1,250), or for a spike, provisioned pollers.
- **Table.** Write and read units a second from the units a job uses (simulated), with a margin;
  beyond the on-demand defaults, the table's maximum raised and its warm throughput set, so that it
  serves the load at once rather than doubling its previous peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from punctual.scale.costs import Usage, dynamodb_usd, operating_usd
from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS, Parameters
from punctual_functions.core.resources import DISPATCHER_MEMORY_MB, WORKER_MEMORY_MB

# The run history's retention the cost assumes: the deployment's default.
RUN_RETENTION_DAYS = Deployment().settings().run_retention_days

# Of each minute, for a sweep's CPU (the rest: its staggered start, its waits, a late tick).
SWEEP_SECONDS = 45.0
DEFAULT_SHARDS = 8
MAX_MINIMUM_POLLERS = 200  # ProvisionedPollerConfig's MinimumPollers (Lambda API)
BATCH = 10
# Simulated units a second per job a second, with a margin (docs/scale.md: ~6 write units a job,
# reads in bursts at each tick).
WCU_MARGIN = 1.5
WCU_PER_JOB = 6.0 * WCU_MARGIN
RCU_PER_JOB = 5.0 * 1.6
RCU_AVERAGE_PER_JOB = 1.0  # the reads' average over a minute, bursts and all (what the cost counts)
# The owner index's write units per job a second, with a margin: a job's index entry is written when
# it is created and when it ends (about 0.7 a job, as the audit measured at a million a minute).
INDEX_WCU_PER_JOB = 0.7 * 1.5
HEAD_START_SECONDS = 0.25
TARGET_SECONDS = 0.05  # a target answering in 50 ms, as the scenarios assume
BATCH_SPREAD_SECONDS = 1.0  # the due times one batch spans, and the event source's own latency


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
    worker_seconds: float
    usd_per_million: dict[str, float]
    # The same load's cost with the table in the other capacity mode: why this one was chosen.
    other_mode_usd_per_million: dict[str, float] = field(default_factory=dict)
    quotas: list[str] = field(default_factory=list)

    @property
    def usd_per_month(self) -> float:
        return sum(self.usd_per_million.values()) * self.jobs_per_minute * 60 * 24 * 30 / 1e6


def plan(
    jobs_per_minute: int, *, crons: float = 0.3, spike: bool = False, params: Parameters = DEFAULTS
) -> Plan:
    """The deployment for ``jobs_per_minute`` due jobs (``crons`` of them recurring executions)."""
    if jobs_per_minute < 1 or not 0 <= crons <= 1:
        raise ValueError("jobs_per_minute must be at least 1 and crons a fraction between 0 and 1")
    per_second = jobs_per_minute / 60
    # One run written per job; a recurring one also reads its job and writes its next occurrence; a
    # tenth of a request for the bucket's query and the runs' read.
    requests_per_dispatch = 1 + 2 * crons + 0.2
    dispatch_cpu_ms = params.cpu_per_request_ms * requests_per_dispatch
    dispatcher_vcpu = min(1.0, DISPATCHER_MEMORY_MB / params.lambda_full_vcpu_mb)
    per_sweep = SWEEP_SECONDS * 1000 * dispatcher_vcpu / dispatch_cpu_ms
    sweeps = max(1, math.ceil(jobs_per_minute / per_sweep))
    shards = max(DEFAULT_SHARDS, 2 * sweeps)
    shards = math.ceil(shards / sweeps) * sweeps  # each sweep its own whole shards
    worker_vcpu = min(1.0, WORKER_MEMORY_MB / params.lambda_full_vcpu_mb)
    record_cpu_ms = params.cpu_per_record_ms + 2 * params.cpu_per_request_ms
    worker_seconds = HEAD_START_SECONDS + TARGET_SECONDS + BATCH * record_cpu_ms / 1000 / worker_vcpu
    workers = max(50, math.ceil(per_second / BATCH * (worker_seconds + BATCH_SPREAD_SECONDS)))
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
        changes["table_min_write_units"] = _round_up(per_second * WCU_PER_JOB / WCU_MARGIN / utilization)
        # Reads come in bursts at each tick: the minimum keeps their average, DynamoDB's burst
        # capacity (up to five minutes of unused units) serves the tick's burst above it.
        changes["table_min_read_units"] = _round_up(per_second * RCU_AVERAGE_PER_JOB / utilization)
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
        # Pollers to scale to: the load's concurrency and half again (a spike, a slow target), within
        # what MaximumPollers may be.
        maximum = min(
            params.esm_maximum_pollers, math.ceil(workers * 1.5 / params.esm_invocations_per_poller)
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
    costed = (params, crons, dispatch_cpu_ms, worker_seconds, per_second)
    return Plan(
        jobs_per_minute=jobs_per_minute,
        crons=crons,
        spike=spike,
        deployment=deployment,
        dispatch_cpu_ms=round(dispatch_cpu_ms, 2),
        worker_seconds=round(worker_seconds, 2),
        usd_per_million=_cost(*costed, provisioned_table=steady_provisioned),
        other_mode_usd_per_million=_cost(*costed, provisioned_table=not steady_provisioned),
        quotas=quotas,
    )


def _cost(
    params: Parameters,
    crons: float,
    dispatch_cpu_ms: float,
    worker_seconds: float,
    per_second: float,
    *,
    provisioned_table: bool = False,
) -> dict[str, float]:
    """Dollars per million jobs, by service: the units and requests a job uses (as the simulator
    counts them at load), the worker's invocations shared by a batch (a batch holds what becomes
    visible in the event source's ~25 ms: one record at a thousand a minute, ten from about
    25,000), the dispatcher's CPU time."""
    batch = min(BATCH, max(1.0, per_second * 0.025))
    worker_seconds -= (BATCH - batch) * (worker_seconds - HEAD_START_SECONDS - TARGET_SECONDS) / BATCH
    wcu = 5 * (1 - crons) + 4 * crons
    rcu = RCU_AVERAGE_PER_JOB
    sqs = 4 / batch + 0.05  # a receive, a delete and a hold a batch; a send for ten
    gb_seconds = worker_seconds / batch * WORKER_MEMORY_MB / 1024
    gb_seconds += dispatch_cpu_ms / 1000 * DISPATCHER_MEMORY_MB / 1024
    api = 1 - crons  # a one-off is created once, a hundred to a request
    invocations = 1e6 * (1 / batch + api / 100)  # the dispatcher's ticks are a rounding error
    operating = operating_usd(
        params,
        Usage(runs=1e6, invocations=invocations, run_bytes=1e6 * params.run_item_bytes),
        retention_days=RUN_RETENTION_DAYS,
    )
    return {
        "dynamodb": round(dynamodb_usd(params, wcu * 1e6, rcu * 1e6, provisioned=provisioned_table), 2),
        "sqs": round(sqs * params.usd_per_million_sqs, 2),
        "lambda": round(
            gb_seconds * 1e6 * params.usd_per_gb_second
            + (1 / batch) * params.usd_per_million_lambda_requests,
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

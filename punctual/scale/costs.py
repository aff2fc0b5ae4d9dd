"""What running Punctual costs beyond its requests and compute, in one place for the planner
(``punctual/scale/plan.py``) and the simulator's report (``punctual/sim/report.py``): the logs a run
and an invocation write, the traces X-Ray records, and the run history the table keeps for
``run_retention_days`` (with point-in-time recovery), and the event pollers provisioned mode keeps
(billed by the poller-hour)."""

from __future__ import annotations

from dataclasses import dataclass

from punctual.scale.params import Parameters

HOURS_A_MONTH = 730
DAYS_A_MONTH = 30
MINUTES_A_MONTH = DAYS_A_MONTH * 24 * 60


@dataclass(frozen=True)
class Usage:
    """What a load used, in total: its runs, its Lambda invocations (every function's), the bytes of
    run history it leaves in the table."""

    runs: float
    invocations: float
    run_bytes: float
    poller_hours: float = 0.0  # provisioned mode's event pollers (0 in the default mode)


def operating_usd(
    params: Parameters, usage: Usage, *, retention_days: int, runs_a_month: float = 0.0
) -> dict[str, float]:
    """Dollars, by item, for ``usage``: logs (a line a run and Lambda's platform lines an
    invocation, ingested, at the price of the month's volume when the load runs ``runs_a_month``),
    traces (X-Ray's default sampling of every invocation), and the run history stored for its
    retention (standard storage and continuous backups, by the GB-month), and provisioned mode's
    event pollers."""
    log_bytes = usage.runs * params.log_bytes_per_run + usage.invocations * params.log_bytes_per_invocation
    month_gb = log_bytes / max(1.0, usage.runs) * runs_a_month / 1e9
    gb_months = usage.run_bytes / 1e9 * retention_days / DAYS_A_MONTH
    return {
        "logs": log_bytes / 1e9 * usd_per_log_gb(params, month_gb),
        "traces": usage.invocations * params.xray_sampled_share * params.usd_per_million_traces / 1e6,
        "run storage": gb_months * (params.usd_per_gb_month_ddb + params.usd_per_gb_month_pitr),
        "pollers": usage.poller_hours * params.usd_per_poller_hour,
    }


def usd_per_log_gb(params: Parameters, month_gb: float) -> float:
    """What a GB of Lambda's logs costs on average when the account ingests ``month_gb`` of them a
    month: CloudWatch prices Lambda's logs by tiers of the month's volume (``lambda_log_tiers``)."""
    tiers = params.lambda_log_tiers
    if month_gb <= 0:
        return tiers[0][1]
    usd, below = 0.0, 0.0
    for upper_tb, price in tiers:
        upper = upper_tb * 1000
        usd += (min(month_gb, upper) - below) * price
        if month_gb <= upper:
            break
        below = upper
    return usd / month_gb


def dynamodb_usd(params: Parameters, write_units: float, read_units: float, *, provisioned: bool) -> float:
    """What the table charges for ``write_units`` and ``read_units`` consumed: on-demand, by the
    request unit; provisioned, by the unit-hour, each consumed unit kept at the target utilization
    (a steady load auto scaling has caught up with)."""
    if not provisioned:
        return (write_units * params.usd_per_million_wru + read_units * params.usd_per_million_rru) / 1e6
    unit_seconds = 1 / params.ddb_target_utilization / 3600
    return (write_units * params.usd_per_wcu_hour + read_units * params.usd_per_rcu_hour) * unit_seconds


def poller_hours_a_month(minimum_pollers: int) -> int:
    """The poller-hours a month that provisioned mode's pollers kept ready are billed for (at least)."""
    return minimum_pollers * HOURS_A_MONTH

"""``punctual plan``: the settings, quotas and cost for a load, from the scale model (docs/scale.md)."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import click

from punctual.cli.common import main
from punctual.output import emit_json, fields

if TYPE_CHECKING:
    from punctual.scale.deployment import Deployment
    from punctual.scale.plan import Plan


@main.command("plan")
@click.option("--jobs-per-minute", type=click.IntRange(min=1), required=True, help="Due jobs a minute.")
@click.option(
    "--crons", type=click.FloatRange(0, 1), default=0.3, show_default=True, help="Share that are recurring."
)
@click.option("--spike", is_flag=True, help="The load comes at once after an idle stretch.")
@click.option(
    "--simulate",
    is_flag=True,
    help="Also run the simulator on these settings (punctual.sim, installed with the package).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
def plan_command(jobs_per_minute: int, crons: float, spike: bool, simulate: bool, as_json: bool) -> None:
    """The deployment settings for JOBS_PER_MINUTE, the quotas to request, and the expected cost."""
    from punctual.scale.plan import plan

    result = plan(jobs_per_minute, crons=crons, spike=spike)
    simulated = _simulate(result) if simulate else None
    d = result.deployment
    if as_json:
        emit_json(
            {
                "jobs_per_minute": jobs_per_minute,
                "settings": dataclasses.asdict(d),
                "cdk_context": d.cdk_context(),
                "quotas": result.quotas,
                "set_by_hand": _not_settable(d),
                "usd_per_million_estimate": result.usd_per_million,
                "usd_per_month_estimate": round(result.usd_per_month, 2),
                "simulated": simulated,
            }
        )
        return
    context = d.cdk_context()
    rows = [
        ("deploy with", " ".join(f"-c {key}={value}" for key, value in context.items())),
        ("memory", ", ".join(f"{name} {mb} MB" for name, mb in d.memory_mb.items())),
        ("event source", _event_source(d)),
        ("table", _table(result)),
        ("quotas to request", "; ".join(result.quotas) or "none: the defaults serve it"),
        ("set by hand", "; ".join(_not_settable(d)) or "nothing"),
        (
            "cost (estimate)",
            f"${sum(result.usd_per_million.values()):.2f} per million jobs,"
            f" ${result.usd_per_month:,.0f} a month ("
            + ", ".join(f"{name} ${usd:g}" for name, usd in result.usd_per_million.items())
            + "; the simulator's figure: --simulate)",
        ),
    ]
    if simulated is not None:
        late = simulated["lateness_ms"]
        rows.append(
            (
                "simulated",
                f"lateness p50 {late['p50']:g} ms, p99 {late['p99']:g} ms, max {late['max']:g} ms; lost"
                f" {simulated['lost']}, early {simulated['early']}, twice {simulated['duplicated']};"
                f" ${simulated['usd_per_million_jobs']:.2f} per million",
            )
        )
    click.echo(fields(rows, limit=None))  # the deploy line is copied whole


def _event_source(d: Deployment) -> str:
    if not d.provisioned_pollers:
        return f"default scaling, at most {d.worker_max_concurrency:,} invocations"
    context = d.cdk_context()
    from punctual.scale.costs import poller_hours_a_month

    minimum = int(context["worker_minimum_pollers"])
    return (
        f"provisioned pollers, {minimum:,} to {context['worker_maximum_pollers']:,} (the minimum kept"
        f" ready: {poller_hours_a_month(minimum):,} poller-hours a month at least; the pollers the load"
        " keeps are in the cost below)"
    )


def _table(result: Plan) -> str:
    d = result.deployment
    this, other = sum(result.usd_per_million.values()), sum(result.other_mode_usd_per_million.values())
    if d.capacity_mode == "provisioned":
        writes = f"{d.table_min_write_units or 0:,} to {d.table_max_write_units or 0:,} WCU/s"
        reads = f"{d.table_min_read_units or 0:,} to {d.table_max_read_units or 0:,} RCU/s"
        index = f"{d.index_min_write_units or 0:,} to {d.index_max_write_units or 0:,} WCU/s"
        return (
            f"provisioned with auto scaling, {writes} and {reads} (owner index {index}):"
            f" ${this:.2f} per million against ${other:.2f} on-demand at this steady load; a burst beyond"
            " what is provisioned is throttled until auto scaling catches up (minutes)"
        )
    parts = ["on-demand"]
    if d.table_max_wcu:
        parts.append(f"maximum {d.table_max_wcu:,} WRU/s, {d.table_max_rcu or 0:,} RRU/s")
    if d.table_warm_wcu:
        parts.append(f"warm throughput {d.table_warm_wcu:,} WRU/s, {d.table_warm_rcu or 0:,} RRU/s")
    if d.index_warm_wcu:
        parts.append(f"owner index warm throughput {d.index_warm_wcu:,} WRU/s")
    if other:
        parts.append(f"${this:.2f} per million against ${other:.2f} provisioned: served at once, bursts too")
    return ", ".join(parts)


def _not_settable(d: Deployment) -> list[str]:
    """What the plan asks for that the CDK app does not set yet: done by hand after the deploy."""
    missing = []
    if d.table_max_wcu or d.table_warm_wcu or d.index_warm_wcu:
        missing.append(
            "the table's and its owner index's maximum and warm throughput (console or API: UpdateTable)"
        )
    return missing


def _simulate(result: Plan) -> dict[str, Any]:
    from punctual.sim.scenarios import Load, Scenario, run
    from punctual_functions.core.observability import logger

    logger.setLevel(logging.ERROR)
    jobs = result.jobs_per_minute
    load = Load(jobs, minutes=1, cron_fraction=result.crons)
    return run(Scenario(f"plan {jobs}", load, result.deployment)).as_dict()

"""Margin, published: the planned deployments for 10,000, 100,000 and 1,000,000 jobs a minute,
simulated with each sensitive parameter made worse by half, one at a time. A plan has its margin when
every variant keeps p99 lateness within a second (``P99_TARGET_MS``) and the base case keeps each
sweep within three quarters of its tick (``SWEEP_SHARE``).

``python -m punctual.sim.sensitivity`` runs the table and writes ``bench/results/sensitivity.json``;
docs/scale.md ("Margin") carries it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from punctual.scale.params import Parameters
from punctual.sim.report import Report
from punctual.sim.scenarios import SCENARIOS, Scenario, run
from punctual_functions.core.observability import logger

P99_TARGET_MS = 1000.0
SWEEP_SHARE = 0.75
FACTOR = 1.5
LOADS = ("steady-10k", "steady-100k", "steady-1m")


def _params(change: Callable[[Parameters], Parameters]) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(scenario, params=change(scenario.params))


def _cpu_per_request(params: Parameters) -> Parameters:
    return params.replace(cpu_per_request_ms=params.cpu_per_request_ms * FACTOR)


def _cpu_per_record(params: Parameters) -> Parameters:
    return params.replace(cpu_per_record_ms=params.cpu_per_record_ms * FACTOR)


def _tail(params: Parameters) -> Parameters:
    """The event source's latency beyond its published p99 made half as long again."""
    latency = tuple((q, value * FACTOR if q > 0.99 else value) for q, value in params.esm_latency_ms)
    return params.replace(esm_latency_ms=latency)


def _slower_scaling(params: Parameters) -> Parameters:
    """Lambda and the event source scaling at two thirds of their published rates."""
    return params.replace(
        lambda_scaling_environments=int(params.lambda_scaling_environments / FACTOR),
        esm_scale_per_minute=int(params.esm_scale_per_minute / FACTOR),
        esm_provisioned_scale_per_minute=int(params.esm_provisioned_scale_per_minute / FACTOR),
    )


def _slow_target(scenario: Scenario) -> Scenario:
    return dataclasses.replace(scenario, target_latency_seconds=0.5)


# Each variant: how it changes the scenario (its parameters, or its target's latency).
VARIANTS: dict[str, Callable[[Scenario], Scenario]] = {
    "base": lambda scenario: scenario,
    "CPU per AWS request x1.5": _params(_cpu_per_request),
    "CPU per record x1.5": _params(_cpu_per_record),
    "event source latency tail x1.5": _params(_tail),
    "target answering in 500 ms": _slow_target,
    "scaling rates /1.5": _params(_slower_scaling),
}


def _row(report: Report, tick_seconds: int) -> dict[str, Any]:
    late = report.lateness_ms
    return {
        "p99_ms": late["p99"],
        "max_ms": late["max"],
        "within_1s": report.within_seconds["1"],
        "lost_early_twice": report.lost + report.early + report.duplicated,
        "sweep_max_s": report.sweep_seconds.get("max"),
        "sweep_share_of_tick": round(report.sweep_seconds.get("max", 0.0) / tick_seconds, 2),
        "usd_per_million": report.usd_per_million_jobs,
        "meets": late["p99"] <= P99_TARGET_MS and report.correct,
    }


def table(loads: tuple[str, ...] = LOADS, variants: tuple[str, ...] = tuple(VARIANTS)) -> dict[str, Any]:
    """Every load under every variant; ``margin`` says whether each load's plan has it."""
    rows: dict[str, dict[str, Any]] = {}
    for load in loads:
        scenario = SCENARIOS[load]
        tick = scenario.deployment.tick_seconds
        rows[load] = {name: _row(run(VARIANTS[name](scenario)), tick) for name in variants}
    margin = {
        load: all(row["meets"] for row in by_variant.values())
        and by_variant.get("base", {}).get("sweep_share_of_tick", 0.0) <= SWEEP_SHARE
        for load, by_variant in rows.items()
    }
    return {
        "factor": FACTOR,
        "p99_target_ms": P99_TARGET_MS,
        "sweep_share": SWEEP_SHARE,
        "rows": rows,
        "margin": margin,
    }


def markdown(result: dict[str, Any]) -> str:
    """The table as docs/scale.md shows it: a row per variant, a column per load."""
    loads = list(result["rows"])
    lines = [
        "| variant | " + " | ".join(loads) + " |",
        "| --- | " + " | ".join("---" for _ in loads) + " |",
    ]
    variants = list(next(iter(result["rows"].values())))
    for name in variants:
        cells = []
        for load in loads:
            row = result["rows"][load][name]
            cell = f"p99 {row['p99_ms']:g} ms, sweep {row['sweep_max_s']:g} s, ${row['usd_per_million']:.2f}"
            cells.append(cell if row["meets"] else f"**{cell}: misses**")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m punctual.sim.sensitivity", description=__doc__)
    parser.add_argument("--only", default=",".join(LOADS), help="comma-separated scenarios")
    parser.add_argument("--json", type=Path, help="write the table to this file")
    args = parser.parse_args(argv)
    logger.setLevel(logging.ERROR)
    result = table(tuple(name.strip() for name in args.only.split(",")))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))
    print(json.dumps(result["margin"]))
    return 0 if all(result["margin"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

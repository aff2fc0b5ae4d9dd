"""The simulator's scenarios (``punctual/sim/``, docs/scale.md): the engine's own code in virtual time against
models of DynamoDB, SQS, Lambda and EventBridge. Each scenario reports lateness, lost / early /
duplicated starts, throttling, peaks and the cost per million jobs; the run is deterministic for its
seed, so one repetition is the figure.

    python -m bench.scale [--only steady-1k,steady-10k]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

from bench.common import log, machine, write_json
from punctual.scale.params import parameter_table
from punctual.sim.calibration import calibrate
from punctual.sim.scenarios import SCENARIOS
from punctual.sim.scenarios import run as run_scenario
from punctual_functions.core.observability import logger

# What the issue asks of each scale (docs/scale.md, "Targets").
TARGET_P99_MS = 1000
TARGET_SPIKE_SECONDS = 60
TARGET_USD_AT_MILLION = 3.0


def run(only: list[str] | None = None) -> dict[str, Any]:
    logger.setLevel(logging.ERROR)  # the engine's lines, one a run, are not the figures
    names = only or list(SCENARIOS)
    began = time.monotonic()
    reports = []
    for name in names:
        log(f"scale: {name} ...")
        result = run_scenario(SCENARIOS[name])
        reports.append({"name": name, **result.as_dict()})
        log(f"scale: {name} done in {result.wall_seconds:.0f} s")
    log("scale: calibration ...")
    calibration = calibrate()
    return {
        "name": "scale",
        "calibration": calibration,
        "what": "the engine's own code in virtual time (punctual/sim/), one group of shards standing for all",
        "repetitions": 1,
        "scenarios": reports,
        "parameters": [{**row, "value": repr(row["value"])} for row in parameter_table()],
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def report(result: dict[str, Any]) -> str:
    lines = ["== scale: simulated (punctual/sim/), deterministic per seed =="]
    for row in result.get("calibration", {}).get("checks", []):
        lines.append(
            f"calibration: {row['figure']}: measured {row['measured']:g}, simulated {row['simulated']:g}"
            f" (±{row['tolerance']:g}): {'within' if row['within'] else 'OUTSIDE'}"
        )
    for s in result["scenarios"]:
        if s.get("bulk"):
            lines.append(f"{s['scenario']}: {json.dumps(s['bulk'])}; api {s['api']}")
            continue
        late = s["lateness_ms"]
        lines.append(
            f"{s['scenario']}: {s['expected']:,} due; lost {s['lost']}, early {s['early']},"
            f" twice {s['duplicated']}, skipped by policy {s['skipped_by_policy']};"
            f" lateness p50 {late['p50']:g} ms, p99 {late['p99']:g} ms, max {late['max']:g} ms;"
            f" ${s['usd_per_million_jobs']:.2f} per million; wall {s['wall_seconds']:.0f} s"
        )
        throttled = ", ".join(f"{k} {v:,}" for k, v in s["throttled"].items()) or "none"
        lines.append(
            f"    throttled: {throttled}; peak WCU/s {s['peak_wcu_per_second']:,}, RCU/s"
            f" {s['peak_rcu_per_second']:,}; concurrency {s['peak_concurrency']}; in flight"
            f" {s['peak_in_flight']:,}; CPU ms/job {s['cpu_ms']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated scenario names (default: all)")
    args = parser.parse_args()
    result = run(args.only.split(",") if args.only else None)
    write_json("scale", result)
    from bench import plots

    plots.write("scale", result)
    print(report(result))
    print(json.dumps({"elapsed_seconds": result["elapsed_seconds"]}))


if __name__ == "__main__":
    main()

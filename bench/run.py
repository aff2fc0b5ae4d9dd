"""``make bench``: every benchmark in turn, the figures printed and written to ``bench/results/``.

    python -m bench.run                      # all of them (about 10 minutes on 2 cores)
    python -m bench.run --only coldstart,cost
    python -m bench.run --quick              # shorter windows, to try the harness (results in /tmp)

Writes ``bench/results/<name>.json`` for each benchmark, ``latest.json`` with all of them,
``summary.md`` (the figures next to the SPEC's targets) and SVG histograms of lateness.
Run them on a quiet machine: other processes on the same cores show up as lateness.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import claims, coldstart, common, cost, precision
from bench.common import log, machine, write_json, write_text

ALL = ("coldstart", "claims", "precision", "precision_faults", "cost")


def _benchmarks(
    quick: bool,
) -> dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], str]]]:
    return {
        "coldstart": (
            lambda: coldstart.run(repeat=3 if quick else 10, repeat_cold=2 if quick else 5),
            coldstart.report,
        ),
        "claims": (lambda: claims.run(jobs=100 if quick else 300), claims.report),
        "precision": (
            lambda: precision.run(
                jobs=60 if quick else 300, window=45 if quick else 180, burst=10 if quick else 50
            ),
            precision.report,
        ),
        # The same density of jobs as the precision run (1.7 a second), over two minutes.
        "precision_faults": (
            lambda: precision.run(
                jobs=60 if quick else 200, window=45 if quick else 120, burst=10 if quick else 30, faults=True
            ),
            precision.report,
        ),
        "cost": (
            lambda: cost.run(
                one_off=50 if quick else 200, soon=30 if quick else 100, crons=10 if quick else 20
            ),
            cost.report,
        ),
    }


def _cell(value: Any) -> str:
    return "—" if value is None else str(value)


def summary_markdown(results: dict[str, Any], elapsed: float, only: list[str] | None = None) -> str:
    info = machine()
    lines = [
        "# Benchmark summary",
        "",
        f"Run {info['date']} on {info['nproc']} cores ({info['cpu'] or 'unknown CPU'}),"
        f" Python {info['python']}, commit {info['commit']};"
        + (f" this run ({', '.join(only)}) took" if only else " `make bench` took")
        + f" {elapsed / 60:.1f} min."
        " Full figures: `latest.json`; method and discussion: `docs/benchmarks.md`.",
        "",
        "| what | SPEC target | measured | |",
        "| --- | --- | --- | --- |",
    ]

    def row(what: str, target: str, measured: str, met: bool | None) -> None:
        mark = "" if met is None else ("met" if met else "**missed**")
        lines.append(f"| {what} | {target} | {measured} | {mark} |")

    if "precision" in results:
        p = results["precision"]
        stats = p["arrival_lateness_ms"]["spread_one_offs_and_crons"]
        row("early deliveries, local", "0", str(p["early"]), p["early"] == 0)
        row(
            "lateness p99, local, jobs spread over minutes",
            "≤ 20 ms",
            f"{stats.get('p99')} ms (p50 {stats.get('p50')} ms)",
            p["targets"]["p99 <= 20 ms (spread jobs)"],
        )
        row(
            "lateness max, local, spread",
            "< 100 ms",
            f"{stats.get('max')} ms",
            p["targets"]["max < 100 ms (spread jobs)"],
        )
        burst = p["arrival_lateness_ms"]["burst_same_millisecond"]
        if burst.get("count"):
            row(
                f"lateness, {burst['count']} jobs due at the same millisecond",
                "—",
                f"p50 {burst.get('p50')} ms, max {burst.get('max')} ms",
                None,
            )
    if "precision_faults" in results:
        f = results["precision_faults"]
        stats = f["arrival_lateness_ms"]["spread_one_offs_and_crons"]
        row(f"lost under faults ({f.get('kills')} kills)", "0", str(f["lost"]), f["lost"] == 0)
        row("early under faults", "0", str(f["early"]), f["early"] == 0)
        row(
            "lateness p99 under faults, spread",
            "≤ 5 s",
            f"{stats.get('p99')} ms (max {stats.get('max')} ms)",
            f["targets"]["p99 <= 5000 ms (spread jobs)"],
        )
    if "coldstart" in results:
        c = results["coldstart"]["modules"]
        for module in ("functions.api.handler", "functions.dispatcher.handler", "functions.worker.handler"):
            figures = c[module]
            cold, cold_ratio = (
                figures["as_deployed_import_ms"]["median"],
                figures["ratio_to_boto3_as_deployed"],
            )
            row(
                f"import {module.split('.')[1]} handler",
                "little more than boto3",
                f"{figures['warm_bytecode_import_ms']['median']} ms = {figures['ratio_to_boto3_warm']}x boto3"
                f" ({cold} ms = {cold_ratio}x without bytecode, as deployed)",
                figures["ratio_to_boto3_warm"] <= 1.25,
            )
    if "cost" in results:
        for name, figures in results["cost"]["scenarios"].items():
            if "cost" in figures:
                c = figures["cost"]
                dollars = c["usd_per_million_jobs_total"]
                row(
                    f"cost, {name.replace('_', ' ')}",
                    "counted",
                    f"{c['aws_requests_per_job']} AWS requests/job, ${dollars} per million",
                    None,
                )
    if "claims" in results:
        for r in results["claims"]["runs"]:
            row(
                f"claims, {r['shards']} shard(s), emulator",
                "(lower bound)",
                f"{r['claims_per_second']} claims/s",
                None,
            )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated, of: {', '.join(ALL)}")
    parser.add_argument("--quick", action="store_true", help="short windows, to try the harness")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the results (default bench/results/; with --quick a temporary directory)",
    )
    args = parser.parse_args()
    # Quick figures are not comparable: they never overwrite the recorded ones unless asked to.
    common.RESULTS = args.out or (
        Path(tempfile.gettempdir()) / "punctual-bench-quick" if args.quick else common.RESULTS
    )
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    benchmarks = _benchmarks(args.quick)
    began = time.monotonic()
    results: dict[str, Any] = {}
    texts = []
    for name in ALL:
        if name not in chosen:
            continue
        log(f"benchmark {name}")
        run, report = benchmarks[name]
        result = run()
        if name.startswith("precision"):
            precision.save(result)
        else:
            write_json(name, result)
        results[name] = result
        text = report(result)
        texts.append(text)
        print(text + "\n", flush=True)
    elapsed = time.monotonic() - began
    if set(chosen) != set(ALL) and (common.RESULTS / "latest.json").exists():
        # A partial run updates its benchmarks in latest.json and keeps the others' figures (each
        # result carries its own date and machine).
        earlier = json.loads((common.RESULTS / "latest.json").read_text()).get("results", {})
        results = {
            name: results.get(name) or earlier[name] for name in ALL if name in results or name in earlier
        }
        texts = [benchmarks[name][1](results[name]) for name in results]
    latest = {
        "machine": machine(),
        "quick": args.quick,
        "only": chosen,
        "elapsed_seconds": round(elapsed, 1),
        "results": results,
    }
    write_json("latest", latest)
    partial = chosen if set(chosen) != set(ALL) else None
    summary = summary_markdown(results, elapsed, partial)
    summary += "\n## Figures as printed\n\n```text\n" + "\n\n".join(texts) + "\n```\n"
    write_text("summary.md", summary)
    print(summary_markdown(results, elapsed, partial))
    print(f"results in {common.RESULTS}/ (latest.json, summary.md); {elapsed / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()

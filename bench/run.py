"""``make bench``: every benchmark in turn, the figures printed and written to ``bench/results/``.

    python -m bench.run                      # all of them (about 45 minutes on 2 cores)
    python -m bench.run --only coldstart,cost
    python -m bench.run --quick              # shorter windows, to try the harness (results in /tmp)

Every benchmark is repeated and reports the median over its runs, with the lowest and highest
(coldstart: the median of 15 fresh interpreters per module). Writes ``bench/results/<name>.json``
for each benchmark (with every run's own figures), ``latest.json`` with all of them, ``summary.md``
(the figures next to their targets, docs/benchmarks.md) and PNG plots (with matplotlib, the ``bench`` extra).
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

from bench import (
    calibration,
    coldstart,
    common,
    cost,
    created_soon,
    dispatch,
    limits_burst,
    memory,
    plots,
    precision,
    scale,
    trail,
    worker_cpu,
    worker_queue,
)
from bench.common import log, machine, write_json, write_text

ALL = (
    "coldstart",
    "dispatch",
    "worker_cpu",
    "precision",
    "precision_faults",
    "created_soon",
    "calibration",
    "cost",
    "limits_burst",
    "trail",
    "worker_queue",
    "memory",
    "scale",
)


def _benchmarks(
    quick: bool,
) -> dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], str]]]:
    # Sized so that everything takes about 20 minutes on 2 cores (docs/benchmarks.md has the sums):
    # coldstart ~0.5 min, dispatch ~0.5, worker_cpu ~0.3, precision 3 x ~2.7, precision_faults 3 x ~2.7,
    # cost ~2.7.
    return {
        "coldstart": (
            lambda: coldstart.run(repeat=3 if quick else 15),
            coldstart.report,
        ),
        "dispatch": (
            lambda: dispatch.run(jobs=100 if quick else 150, repetitions=2 if quick else 3),
            dispatch.report,
        ),
        "worker_cpu": (
            lambda: worker_cpu.run(runs=50 if quick else 100, repetitions=2 if quick else 3),
            worker_cpu.report,
        ),
        # The stack's defaults (one-minute tick, 120 s look-ahead), with windows longer than the
        # look-ahead, so that some jobs are due beyond it when created and a tick sweeps them.
        "precision": (
            lambda: precision.run(
                repetitions=2 if quick else 3,
                jobs=40 if quick else 215,
                window=40 if quick else 130,
                burst=8 if quick else 20,
                whole_seconds_span=10 if quick else 60,
            ),
            precision.report,
        ),
        # The same density of jobs as the precision runs (~1.7 a second), with kills; as above, some
        # one-offs are due beyond the look-ahead when created.
        "precision_faults": (
            lambda: precision.run(
                repetitions=2 if quick else 3,
                jobs=40 if quick else 215,
                window=40 if quick else 130,
                burst=8 if quick else 15,
                whole_seconds_span=0,  # as the recorded runs: comparable figures under faults
                faults=True,
            ),
            precision.report,
        ),
        # Jobs created at once 30-90 s before they fall due (the API sends them), 200 then 1,000 of
        # them, a tenth more due beyond the look-ahead (the tick sends those): ~3 + ~4 min a run.
        "created_soon": (
            lambda: created_soon.run(sizes=(50,) if quick else (200, 1000), repetitions=1 if quick else 3),
            created_soon.report,
        ),
        # One-offs due at their own millisecond over two minutes, at 60, 300 and 1,000 a minute, sent
        # by the tick: every run's lateness and hold, for the simulator's calibration (~17 min).
        "calibration": (
            lambda: calibration.run(loads=(30,) if quick else calibration.LOADS),
            calibration.report,
        ),
        # 1,000 one-offs due at once, half of them calling a webhook that answers after 6 s (~2 min a
        # run), and the heartbeat in simulated time (instant).
        "worker_queue": (
            lambda: worker_queue.run(runs=1 if quick else 3, jobs=200 if quick else 1000),
            worker_queue.report,
        ),
        "cost": (
            lambda: cost.run(
                repetitions=2 if quick else 3,
                one_off=20 if quick else 60,
                soon=10 if quick else 40,
                crons=6 if quick else 20,
            ),
            cost.report,
        ),
        # 50 jobs created and changed five ways on the emulator: the audit trail's cost a change (~1 min).
        "trail": (lambda: trail.run(jobs=10 if quick else 50), trail.report),
        # 300 one-offs due at one second under a target limit of 10, calls of 0.2 s (~1.5 min a run).
        "limits_burst": (
            lambda: limits_burst.run(repetitions=1 if quick else 3, jobs=100 if quick else 300),
            limits_burst.report,
        ),
        # The worker's memory: batches of ten due at one second, the worker's CPU held to each Lambda
        # size's share by a cgroup quota (needs root; skipped without it). ~7.5 min: 49 batches 8 s
        # apart after the 60 s look-ahead.
        "memory": (
            lambda: memory.run_or_skip(
                sizes=(512, 1769) if quick else memory.DEFAULT_SIZES, batches=2 if quick else 8
            ),
            memory.report,
        ),
        # The simulator's scenarios in virtual time (docs/scale.md); --quick: the small ones only.
        "scale": (
            lambda: scale.run(["steady-1k", "steady-10k"] if quick else None),
            scale.report,
        ),
    }


def _median(figure: dict[str, Any], unit: str = "", scale: float = 1.0, money: bool = False) -> str:
    """A ``spread()`` as "median (lowest-highest)", e.g. "246 ms (150-300)"."""
    if not figure.get("runs"):
        return "—"

    def text(value: float) -> str:
        value = value * scale
        return f"${value:,.2f}" if money else f"{value:,.3g}" if value < 100 else f"{value:,.0f}"

    spread = f" ({text(figure['min'])}-{text(figure['max'])})" if figure["runs"] > 1 else ""
    return f"{text(figure['median'])}{unit}{spread}"


def _current(name: str, result: dict[str, Any]) -> bool:
    """Results written before the benchmarks were repeated, or (cold start) before it measured the
    assets as deployed, have no place in this summary."""
    if name == "coldstart":
        return "python" in result
    return "repetitions" in result


def summary_markdown(results: dict[str, Any], elapsed: float, only: list[str] | None = None) -> str:
    info = machine()
    lines = [
        "# Benchmark summary",
        "",
        f"Run {info['date']} on {info['nproc']} cores ({info['cpu'] or 'unknown CPU'}),"
        f" Python {info['python']}, commit {info['commit']};"
        + (f" this run ({', '.join(only)}) took" if only else " `make bench` took")
        + f" {elapsed / 60:.1f} min."
        " Each figure is the median over the benchmark's runs (how many: in the first column), with the"
        " lowest and highest run in parentheses; pooled = all runs' deliveries in one distribution."
        " Full figures: `latest.json`; method and discussion: `docs/benchmarks.md`.",
        "",
        "| what | target | measured: median (lowest-highest) | |",
        "| --- | --- | --- | --- |",
    ]

    def row(what: str, target: str, measured: str, met: bool | None) -> None:
        mark = "" if met is None else ("met" if met else "**missed**")
        lines.append(f"| {what} | {target} | {measured} | {mark} |")

    if "precision" in results:
        p = results["precision"]
        n = p["repetitions"]
        stats = p["arrival_lateness_ms"]["spread_one_offs_and_crons"]
        pooled = p["arrival_lateness_ms_pooled"]["spread_one_offs_and_crons"]
        row(
            f"early deliveries, local ({n} runs, {p['delivered_runs']} deliveries)",
            "0",
            f"{p['early']} (sum)",
            p["early"] == 0,
        )
        row(
            f"lateness p99, local, jobs spread over minutes ({n} runs,"
            f" ~{stats['count'].get('median'):g} each)",
            "≤ 20 ms",
            f"{_median(stats['p99'], ' ms')}; pooled {pooled.get('p99')} ms;"
            f" p50 {_median(stats['p50'], ' ms')}",
            p["targets"]["p99 <= 20 ms (spread jobs)"],
        )
        row(
            f"lateness max, local, spread ({n} runs)",
            "< 100 ms",
            f"{_median(stats['max'], ' ms')}; pooled {pooled.get('max')} ms",
            p["targets"]["max < 100 ms (spread jobs)"],
        )
        burst = p["arrival_lateness_ms"]["burst_same_millisecond"]
        if burst["count"].get("median"):
            row(
                f"lateness, {burst['count']['median']:g} jobs due at the same millisecond ({n} runs)",
                "—",
                f"p50 {_median(burst['p50'], ' ms')}, max {_median(burst['max'], ' ms')}",
                None,
            )
        whole = p["arrival_lateness_ms"].get("whole_seconds", {"count": {}})
        if whole["count"].get("median"):
            row(
                f"lateness, {whole['count']['median']:g} jobs due 3 or 4 at each of"
                f" {p.get('whole_seconds_span_s', '?')} consecutive whole seconds ({n} runs)",
                "—",
                f"p50 {_median(whole['p50'], ' ms')}, p99 {_median(whole['p99'], ' ms')},"
                f" max {_median(whole['max'], ' ms')}",
                None,
            )
    if "precision_faults" in results:
        f = results["precision_faults"]
        n = f["repetitions"]
        stats = f["arrival_lateness_ms"]["spread_one_offs_and_crons"]
        pooled = f["arrival_lateness_ms_pooled"]["spread_one_offs_and_crons"]
        row(
            f"lost under faults ({n} runs, {f.get('kills')} kills, {f['deliveries_expected']} deliveries)",
            "0",
            f"{f['lost']} (sum)",
            f["lost"] == 0,
        )
        row(f"early under faults ({n} runs)", "0", f"{f['early']} (sum)", f["early"] == 0)
        row(
            f"lateness p99 under faults, spread ({n} runs)",
            "≤ 5 s",
            f"{_median(stats['p99'], ' s', scale=0.001)}; pooled {pooled.get('p99', 0) / 1000:.2f} s;"
            f" max {_median(stats['max'], ' s', scale=0.001)}",
            f["targets"]["p99 <= 5000 ms (spread jobs)"],
        )
    if "created_soon" in results:
        r = results["created_soon"]
        n = r["config"]["repetitions"]
        for size, figures in r["sizes"].items():
            for sender in created_soon.SENDERS:
                late = figures[sender]["lateness_ms"]
                row(
                    f"lateness, {size} jobs created 30-90 s ahead, {sender}-sent ({n} runs)",
                    "p99 ≤ 10 ms, max ≤ 25 ms",
                    f"p99 {_median(late['p99'], ' ms')}; max {_median(late['max'], ' ms')};"
                    f" hold p50 {_median(figures[sender]['hold_ms']['p50'], ' ms')}",
                    all(
                        met for name, met in r["targets"].items() if name.startswith(f"{size} {sender}-sent")
                    ),
                )
    if "coldstart" in results:
        c = results["coldstart"]
        for module in (
            "punctual_functions.api.handler",
            "punctual_functions.dispatcher.handler",
            "punctual_functions.worker.handler",
        ):
            figures = c["modules"][module]
            row(
                f"import {module.split('.')[1]} handler, as deployed ({c['repeat']} runs)",
                f"≤ {c['target_ratio']}x boto3",
                f"{_median(figures['as_deployed_import_ms'], ' ms')} ="
                f" {figures['ratio_to_boto3_as_deployed']}x boto3"
                f" (without bytecode {figures['no_bytecode_import_ms']['median']} ms ="
                f" {figures['ratio_to_boto3_no_bytecode']}x)",
                figures["meets_target"],
            )
    if "cost" in results:
        titles = {
            "one_off_ahead": "one-off job created ahead",
            "one_off_soon": "one-off job due within seconds",
            "one_off_batch": "one-off job created ahead, 100 a request",
            "recurring": "recurring, per execution",
            "recurring_controls": "recurring with issue 14's controls on, per execution",
        }
        for name, scenario in results["cost"]["scenarios"].items():
            if "spread" not in scenario:
                continue
            spread, capacity = scenario["spread"], scenario["median"]["dynamodb_capacity_per_job"]
            # The worker's hold (due time - arrival), beside its billed duration (measured), which
            # waits it out; absent from results written before the worker logged it.
            hold = scenario["median"].get("hold_ms") or {}
            held = (
                f"; worker {scenario['median']['worker_seconds_per_job']:g} s/job billed, hold"
                f" {_median(spread['hold_ms_median'], ' ms')} (p99 {_median(spread['hold_ms_p99'], ' ms')},"
                f" min {hold['min']:g} ms)"
                if hold.get("count") and "hold_ms_median" in spread
                else ""
            )
            row(
                f"cost, {titles.get(name, name)} ({scenario['repetitions']} runs,"
                f" {scenario['executions']} executions)",
                "counted",
                f"{_median(spread['aws_requests_per_job'])} AWS requests/job, of which DynamoDB"
                f" {_median(spread['dynamodb_requests_per_job'])} using {capacity['wcu']:.1f} WCU +"
                f" {capacity['rcu']:.1f} RCU (computed from item sizes);"
                f" {_median(spread['usd_per_million_jobs_total'], money=True)} per million" + held,
                None,
            )
    if "worker_queue" in results:
        w = results["worker_queue"]
        redelivery = w["redelivery"]
        row(
            f"re-deliveries per 1,000 runs, batches mixing instant and {redelivery['slow_seconds']:g} s"
            f" calls ({w['repetitions']} runs)",
            "—",
            _median(redelivery["redelivered_per_1000_runs"]),
            None,
        )
        longest = w["heartbeat"]["attempts"][-1]
        row(
            f"heartbeat renewals of a {longest['attempt_seconds']} s attempt (simulated time)",
            "—",
            f"{longest['renewals']} (a fixed lease: {longest['renewals_fixed_lease']})",
            None,
        )
    if "trail" in results:
        actions = results["trail"]["actions"]
        each = ", ".join(f"{action} {figures['record_bytes']:.0f} B" for action, figures in actions.items())
        recorded = all(figures["records"] == figures["changes"] for figures in actions.values())
        small = all(figures["record_write_units"] <= 1 for figures in actions.values())
        row("audit trail: each change's record", "one write a change (1 KB)", each, recorded and small)
    if "limits_burst" in results:
        b = results["limits_burst"]
        row(
            f"a burst under a target limit: the last call after the due second ({b['repetitions']} runs;"
            f" ideal {b['ideal_seconds']:g} s)",
            "—",
            _median(b["last_seconds"], " s"),
            None,
        )
    if "dispatch" in results:
        c = results["dispatch"]
        for r in c["shards"]:
            row(
                f"dispatches, {r['shards']} shard(s) x {r.get('dispatch_threads', 1)} at a time, emulator"
                f" ({r['dispatches_per_second']['runs']} runs)",
                "(lower bound)",
                f"{_median(r['dispatches_per_second'], ' dispatches/s')}",
                None,
            )
            cpu = r["dispatcher_cpu_ms_per_dispatch"]
            row(
                f"dispatcher CPU per dispatch, {r['shards']} shard(s)"
                f" x {r.get('dispatch_threads', 1)} at a time ({cpu['runs']} runs)",
                "≤ 2 ms",
                _median(cpu, " ms"),
                cpu["median"] <= 2,
            )
    if "worker_cpu" in results:
        w = results["worker_cpu"]
        cpu = w["worker_cpu_ms_per_run"]
        row(
            f"worker CPU per run, batches of {w['batch']} ({cpu['runs']} runs)",
            "≤ 8 ms",
            _median(cpu, " ms"),
            cpu["median"] <= 8,
        )
    if "scale" in results:
        for s in results["scale"]["scenarios"]:
            late = s["lateness_ms"]
            correct = s["lost"] == s["early"] == s["duplicated"] == 0
            if s.get("bulk"):  # a bulk action: no runs due, its requests are the figures
                acted = {a: s["bulk"][a] for a in ("pause", "resume") if a in s["bulk"]}
                row(
                    f"simulated: {s['scenario']}",
                    "every job acted on, no request near API Gateway's 29 s",
                    "; ".join(
                        f"{a}: {v['acted_on']:,} in {v['requests']} requests"
                        f" of ≤ {v['seconds_per_request']['max']:g} s"
                        for a, v in acted.items()
                    ),
                    s["bulk"]["done"] and s["api"]["gateway_timeouts"] == 0,
                )
                continue
            row(
                f"simulated: {s['scenario']} ({s['expected']:,} due)",
                "0 lost/early/twice; p99 ≤ 1 s at steady loads",
                f"lost {s['lost']}, early {s['early']}, twice {s['duplicated']}; p99 {late['p99']:,.0f} ms,"
                f" max {late['max']:,.0f} ms; ${s['usd_per_million_jobs']:.2f}/M",
                correct and (not s["name"].startswith("steady") or late["p99"] <= 1000),
            )
        for c in results["scale"].get("calibration", {}).get("checks", []):
            row(
                f"simulator calibration: {c['figure']}",
                f"within ±{c['tolerance']:g} of the measured {c['measured']:g}",
                f"{c['simulated']:g}",
                c["within"],
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
        write_json(name, result)
        plotted = plots.write(name, result)
        if plotted:
            log(f"{name}: {', '.join(plotted)}")
        results[name] = result
        text = report(result)
        texts.append(text)
        print(text + "\n", flush=True)
    elapsed = time.monotonic() - began
    if set(chosen) != set(ALL) and (common.RESULTS / "latest.json").exists():
        # A partial run updates its benchmarks in latest.json and keeps the others' figures (each
        # result carries its own date and machine).
        earlier = json.loads((common.RESULTS / "latest.json").read_text()).get("results", {})
        stale = sorted(name for name, result in earlier.items() if not _current(name, result))
        if stale:
            log(f"left out of latest.json, written before the benchmarks were repeated: {', '.join(stale)}")
        earlier = {name: result for name, result in earlier.items() if name not in stale}
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

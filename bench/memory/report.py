"""The memory benchmark's printed report: per size a table of its batches (ms after the second),
then the sizes side by side, the smallest size on time and which phases fit from which size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.memory.arithmetic import BATCH, ON_TIME_MS

# ------------------------------------------------------------------------------------- report


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def report(result: dict[str, Any]) -> str:
    """The figures as text: a table of batches per size, then the sizes side by side."""
    if "skipped" in result:
        return f"== memory: skipped ({result['skipped']}) =="
    config = result["config"]
    answer = result["answer"]
    lines = [
        f"== memory: {config['batches_per_size']} batches of {config['runs_per_batch']} per size,"
        f" head start {config['head_start_ms']} ms" + f", CFS period {config['cfs_period_us']} µs ==",
        f"note: {result['note']}",
        "cgroup check, share of a core a busy loop got (expected/measured): "
        + ", ".join(
            f"{size} MB {c['expected']:.3f}/{c['measured']:.3f}"
            for size, c in result["cgroup_check_share_of_a_core"].items()
        ),
        f"messages reached the worker {answer['hold_ms_p50']} ms before their second (median hold;"
        f" head start {config['head_start_ms']} ms)",
    ]
    if config.get("jobs_sent_by_the_api"):
        lines.append(
            f"{config['jobs_sent_by_the_api']} jobs were sent by the api (created within the look-ahead)"
        )
    if result.get("worker_restarts"):
        lines.append(f"worker restarts: {result['worker_restarts']}")
    for size, figures in result["sizes"].items():
        lines.append("")
        lines.append(
            f"-- {size} MB ({figures['vcpu']:.3f} vCPU, quota {figures['quota_us']} µs /"
            f" {figures['period_us']} µs): per batch, ms after the second --"
        )
        lines.append(
            f"  {'due (UTC)':<9} {'start':>13} {'arrival first/p50/last':>22} {'rec.max':>7} {'hold':>9}"
            f" {'ready':>7} {'start.':>6} {'exec':>6} {'cpu/run':>7} {'pre/run':>7} {'thr':>5} inv"
        )
        for batch in result["batches"]:
            if str(batch["size_mb"]) != size:
                continue
            a, st, hold = batch["arrival_ms"], batch["start_ms"], batch["hold_ms"]
            lines.append(
                f"  {batch['due'][11:19]:<9} {_fmt(st.get('first')) + '/' + _fmt(st.get('last')):>13}"
                f" {_fmt(a.get('first')) + '/' + _fmt(a.get('p50')) + '/' + _fmt(a.get('last')):>22}"
                f" {_fmt(batch['recorded_lateness_ms'].get('max')):>7}"
                f" {_fmt(hold.get('min'), 0) + '-' + _fmt(hold.get('max'), 0):>9}"
                f" {_fmt(batch['ready_ms']):>7} {_fmt(batch['starting_ms']):>6}"
                f" {_fmt(batch['executing_ms']):>6}"
                f" {_fmt(batch['cpu_ms'].get('per_run')):>7}"
                f" {_fmt(batch['cpu_ms'].get('until_ready_per_run')):>7}"
                f" {_fmt(batch['cgroup']['throttled_ms'], 0):>5} {batch['records_per_invocation']}"
                + ("" if batch["delivered"] == BATCH else f"  delivered {batch['delivered']}")
                + ("" if batch["previous_batch_ended_before_switch"] else "  (previous batch still running)")
            )
    lines.append("")
    lines.append(
        "sizes side by side (ms after the second; the batch's last call, p99 over batches by nearest"
        " rank, p50 in brackets):"
    )
    lines.append(
        f"  {'MB':>5} {'vCPU':>5} {'last start':>14} {'last arrival':>14} {'all arr. p99':>12}"
        f" {'rec p99':>7} {'hold p50':>8} {'ready':>7} {'starting':>8} {'exec':>6}"
        f" {'cpu/run':>7} {'pre/run':>7} {'on time':>7}"
    )
    for size, f in result["sizes"].items():

        def both(figure: Mapping[str, Any]) -> str:
            return f"{_fmt(figure.get('p99'))} [{_fmt(figure.get('p50'))}]"

        lines.append(
            f"  {size:>5} {f['vcpu']:>5.3f} {both(f['last_start_ms']):>14} {both(f['last_call_ms']):>14}"
            f" {_fmt(f['all_calls_ms'].get('p99')):>12} {_fmt(f['recorded_lateness_ms'].get('p99')):>7}"
            f" {_fmt(f['hold_ms'].get('p50')):>8} {_fmt(f['ready_ms'].get('p99')):>7}"
            f" {_fmt(f['starting_ms'].get('p99')):>8} {_fmt(f['executing_ms'].get('p99')):>6}"
            f" {_fmt(f['cpu_per_run_ms'].get('median'), 2):>7}"
            f" {_fmt(f['cpu_until_ready_per_run_ms'].get('median'), 2):>7}"
            f" {('yes' if f['on_time'] else 'NO') + ('/yes' if f['on_time_at_arrival'] else '/NO'):>7}"
        )
    if answer["smallest_on_time_mb"] is None:
        lines.append(f"no size measured starts the batch's last call within {ON_TIME_MS:g} ms of its second")
    else:
        lines.append(
            f"smallest size on time: {answer['smallest_on_time_mb']} MB (the batch's last call starts"
            f" {answer['last_start_p99_ms']} ms after its second, p99; arrives"
            f" {answer['last_call_arrival_p99_ms']} ms after it)"
            + (
                f"; {answer['smallest_on_time_anywhere_mb']} MB was on time too, below a size that was not"
                if answer["smallest_on_time_anywhere_mb"] != answer["smallest_on_time_mb"]
                else ""
            )
        )
    lines.append(
        f"on time at arrival (the last call reaching the receiver within {ON_TIME_MS:g} ms) from"
        f" {answer['smallest_on_time_at_arrival_mb'] or 'no size measured'}"
        + (" MB" if answer["smallest_on_time_at_arrival_mb"] else "")
    )
    lines.append(
        "phases: holding (the ten ready before their second) fits from"
        f" {answer['holding_fits_from_mb'] or '-'} MB, starting (the ten started within"
        f" {ON_TIME_MS:g} ms once free to) from"
        f" {answer['starting_fits_from_mb'] or '-'} MB, executing (arrived within {ON_TIME_MS:g} ms) from"
        f" {answer['executing_fits_from_mb'] or '-'} MB; arithmetic for holding:"
        f" {answer['holding_estimate_mb'] or '-'} MB ({answer['holding_estimate_from']})"
    )
    lines.append(
        "columns: start = first/last call start; hold = second - message arrival (min-max); ready = last"
        " record ready to call (negative: before the second); start. = last start after the later of"
        " the second and ready; exec = last arrival after the same; cpu/run = worker process CPU over"
        " the batch's invocations / 10; pre/run = the part until the last record was ready; thr = ms"
        " the cgroup was throttled; inv = records per invocation; on time = by start / at arrival"
    )
    return "\n".join(lines)

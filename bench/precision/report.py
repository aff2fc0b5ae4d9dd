"""The precision benchmark's printed report (kept in the markdown summary too): deliveries, losses
and duplicates, each run's headline, the lateness at arrival per kind of job as the median of the
runs and pooled, the histogram and the targets."""

from __future__ import annotations

from typing import Any

from bench.common import histogram_text


def _cell(figure: dict[str, Any]) -> str:
    if figure.get("runs", 0) < 2:
        return f"{figure.get('median', '-')}"
    return f"{figure['median']:g} [{figure['min']:g}-{figure['max']:g}]"


def report(result: dict[str, Any]) -> str:
    """The figures as text (printed, and kept in the markdown summary)."""
    n = result["repetitions"]
    lines = [f"== {result['name']}: {n} runs, each on a fresh stack =="]
    lines.append(
        f"runs delivered {result['delivered_runs']} (expected {result['deliveries_expected']}),"
        f" lost {result['lost']},"
        f" early {result['early']}, duplicates (same key) {result['duplicates_same_key']},"
        f" two keys {result['runs_with_two_keys']} (sums over the runs)"
    )
    for lost in result.get("lost_runs", []):
        states = (
            ", ".join(f"{r['status']} ({r['error'] or 'no error'})" for r in lost["runs"]) or "no run item"
        )
        lines.append(f"  lost {lost['path']}: {states}")
    if "kills" in result:
        lines.append(f"kills {result['kills']}, restarts {result['restarts']} (sums)")
    config = result.get("config", {})
    if config.get("whole_seconds_span_s"):
        first, last = config["whole_seconds_offsets_s"]
        cut = config["whole_seconds_span_s"] < config["whole_seconds_span_requested_s"]
        lines.append(
            f"whole seconds: {config['whole_seconds_jobs']} jobs, 3 or 4 due at each of"
            f" {config['whole_seconds_span_s']} consecutive seconds (+{first}s to +{last}s of the window;"
            f" the burst at +{config['burst_offset_s']}s)"
            + (f", cut from the {config['whole_seconds_span_requested_s']}s asked for" if cut else "")
        )
    for k, r in enumerate(result["runs"]):
        groups = r["arrival_lateness_ms"]
        stats = groups["spread_one_offs_and_crons"]
        lines.append(
            f"  run {k + 1}: {r['delivered_runs']} delivered"
            f" ({groups['one_off_due_inside_lookahead_at_creation'].get('count', 0)} inside,"
            f" {groups['one_off_due_beyond_lookahead_at_creation'].get('count', 0)} beyond"
            " the look-ahead"
            + (
                f", {groups['whole_seconds'].get('count', 0)} on whole seconds"
                if groups.get("whole_seconds", {}).get("count")
                else ""
            )
            + "),"
            f" lost {r['lost']}, early {r['early']}"
            + (f", kills {r['kills']}" if "kills" in r else "")
            + f"; spread p50 {stats.get('p50')} p99 {stats.get('p99')} max {stats.get('max')} ms"
        )
    lines.append(f"lateness at arrival (ms), median of {n} runs [lowest-highest]:")
    lines.append(f"  {'':<42} {'n/run':>6}  {'p50':<16} {'p90':<18} {'p99':<20} max")
    for label, stats in result["arrival_lateness_ms"].items():
        if stats["count"].get("median"):
            lines.append(
                f"  {label:<42} {stats['count']['median']:6g}  {_cell(stats['p50']):<16}"
                f" {_cell(stats['p90']):<18} {_cell(stats['p99']):<20} {_cell(stats['max'])}"
            )
    for label in (
        "spread_due_during_whole_seconds_ms",
        "recorded_lateness_ms",
        "attempt_start_to_arrival_ms",
    ):
        stats = result.get(label)
        if stats and stats["count"].get("median"):
            lines.append(
                f"  {label:<42} {stats['count']['median']:6g}  {_cell(stats['p50']):<16}"
                f" {_cell(stats['p90']):<18} {_cell(stats['p99']):<20} {_cell(stats['max'])}"
            )
    lines.append(f"pooled, all {n} runs' deliveries together:  count    p50    p90    p99      max")
    for label, stats in result["arrival_lateness_ms_pooled"].items():
        if stats.get("count"):
            lines.append(
                f"  {label:<42} {stats['count']:5d} {stats['p50']:6.1f} {stats['p90']:6.1f}"
                f" {stats['p99']:6.1f} {stats['max']:8.1f}"
            )
    lines.append(histogram_text(result["histogram_ms"]))
    lines.append(
        "targets (lateness: medians of the runs): "
        + ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in result["targets"].items())
    )
    return "\n".join(lines)

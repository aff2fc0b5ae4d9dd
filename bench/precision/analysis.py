"""The precision benchmark's analysis: one run's deliveries and recorded runs turned into its figures
(lateness at arrival by kind of job, lost, early and duplicated deliveries, what the table says about
a lost run), and the runs together (counts summed, each statistic's median over the runs, pooled
distributions, the histogram and the targets)."""

from __future__ import annotations

from typing import Any

from bench.common import histogram, spread_of_summaries, summary
from bench.precision.plan import Planned, _cron_expected, _dt, _ts
from punctual.testing.receiver import Delivery
from punctual_functions.core.model import iso

EDGES_MS = [0, 2, 4, 6, 8, 10, 12, 15, 20, 30, 50, 100]
EDGES_FAULTS_MS = [0, 10, 20, 50, 100, 500, 1000, 2000, 3000, 5000, 7000, 10000]


def _analyse(
    name: str,
    planned: list[Planned],
    crons: list[dict[str, Any]],
    arrivals: dict[str, list[Delivery]],
    runs_by_job: dict[str, list[dict[str, Any]]],
    end: float,
    *,
    faults: bool,
    kills: list[dict[str, Any]],
    restarts: int,
    created_late: int,
) -> dict[str, Any]:
    lateness: dict[str, list[float]] = {
        "inside": [],
        "beyond": [],
        "burst": [],
        "cron": [],
        "whole_seconds": [],
    }
    early: list[dict[str, Any]] = []
    header_mismatch = 0
    duplicates = 0
    two_keys = 0
    lost: list[str] = []
    samples: list[list[Any]] = []  # [scheduled_for (epoch s), group, lateness at arrival (ms)]
    for item in planned:
        got = arrivals.get(item.path, [])
        if not got:
            lost.append(item.path)
            continue
        if abs(_ts(got[0].scheduled_for) - item.due) > 0.0005:
            header_mismatch += 1
        duplicates += len(got) - 1
        two_keys += len({a.idempotency_key for a in got}) > 1
        late = (got[0].received_at - _ts(got[0].scheduled_for)) * 1000
        lateness[item.group].append(late)
        samples.append([round(item.due, 3), item.group, round(late, 1)])
    cron_expected = 0
    cron_lost: list[str] = []
    for k, cron in enumerate(crons):
        got = arrivals.get(f"/cron/{k}", [])
        by_occurrence: dict[str, list[Delivery]] = {}
        for arrival in got:
            by_occurrence.setdefault(arrival.scheduled_for, []).append(arrival)
        for occurrence, group in by_occurrence.items():
            duplicates += len(group) - 1
            two_keys += len({a.idempotency_key for a in group}) > 1
            late = (group[0].received_at - _ts(occurrence)) * 1000
            lateness["cron"].append(late)
            samples.append([round(_ts(occurrence), 3), "cron", round(late, 1)])
        delivered = {int(_ts(o)) for o in by_occurrence}
        # Occurrences due between creation and a few seconds before the crons were cancelled.
        expected = _cron_expected(cron["offset"], cron["at"] + 1, end - 3)
        cron_expected += len(expected)
        cron_lost += [f"/cron/{k}@{iso(_dt(t))}" for t in sorted(expected - delivered)]
    # What the table says about each run that never arrived.
    lost_runs = []
    by_job = {p.path: p.job_id for p in planned}
    for path in lost:
        runs = runs_by_job.get(by_job[path], [])
        lost_runs.append({"path": path, "runs": [_brief(r) for r in runs]})
    for label in cron_lost:
        path, _, moment = label.partition("@")
        job_id = crons[int(path.rsplit("/", 1)[1])]["job_id"]
        runs = [r for r in runs_by_job.get(job_id, []) if r["scheduled_for"] == moment]
        lost_runs.append({"path": label, "runs": [_brief(r) for r in runs]})
    for path, got in arrivals.items():
        for arrival in got:
            if arrival.received_at < _ts(arrival.scheduled_for):
                early.append(
                    {"path": path, "scheduled_for": arrival.scheduled_for, "at": arrival.received_at}
                )
    # What the runs record: lateness_ms (attempt start - scheduled) and start -> arrival.
    recorded: list[float] = []
    start_to_arrival: list[float] = []
    first_arrival: dict[str, float] = {}
    for group in arrivals.values():
        for a in group:
            first_arrival[a.idempotency_key] = min(
                a.received_at, first_arrival.get(a.idempotency_key, a.received_at)
            )
    statuses: dict[str, int] = {}
    for runs in runs_by_job.values():
        for run in runs:
            statuses[run["status"]] = statuses.get(run["status"], 0) + 1
            if run["status"] != "SUCCEEDED" or run.get("lateness_ms") is None:
                continue
            recorded.append(float(run["lateness_ms"]))
            arrived = first_arrival.get(run["run_id"])
            if arrived is not None and run.get("started_at"):
                start_to_arrival.append((arrived - _ts(run["started_at"])) * 1000)
    everything = [x for values in lateness.values() for x in values]
    # The precision targets are for jobs spread over minutes; the burst and the whole seconds are
    # separate stresses, reported apart.
    spread = lateness["inside"] + lateness["beyond"] + lateness["cron"]
    stats = summary(spread)
    result: dict[str, Any] = {
        "name": name,
        "what": "lateness at arrival = receiver's clock when the request is read - Punctual-Scheduled-For",
        "deliveries_expected": len(planned) + cron_expected,
        "delivered_runs": len(everything),
        "lost": len(lost) + len(cron_lost),
        "lost_examples": (lost + cron_lost)[:10],
        "lost_runs": lost_runs[:10],
        "early": len(early),
        "early_examples": early[:10],
        "duplicates_same_key": duplicates,
        "runs_with_two_keys": two_keys,
        "scheduled_for_header_mismatch": header_mismatch,
        "jobs_created_after_their_due_time": created_late,
        "arrival_lateness_ms": {
            "spread_one_offs_and_crons": stats,
            "all_with_burst": summary(everything),
            "one_off_due_inside_lookahead_at_creation": summary(lateness["inside"]),
            "one_off_due_beyond_lookahead_at_creation": summary(lateness["beyond"]),
            "burst_same_millisecond": summary(lateness["burst"]),
            "cron_every_10s": summary(lateness["cron"]),
            "whole_seconds": summary(lateness["whole_seconds"]),
        },
        # The spread jobs due between the first and the last whole second (a cron's occurrence there
        # shares its second with 3 or 4 of them): how much of the spread figures the whole seconds' load
        # may account for.
        "spread_due_during_whole_seconds_ms": _during(samples, planned),
        "recorded_lateness_ms": summary(recorded),
        "attempt_start_to_arrival_ms": summary(start_to_arrival),
        "run_statuses": statuses,
        "samples": sorted(samples),
    }
    if faults:
        result["kills"] = len(kills)
        result["restarts"] = restarts
        result["kill_log"] = kills
        result["targets"] = {
            "nothing lost": len(lost) + len(cron_lost) == 0,
            "never early": not early,
            "p99 <= 5000 ms (spread jobs)": stats.get("p99", float("inf")) <= 5000,
        }
    else:
        result["targets"] = {
            "never early": not early,
            "p99 <= 20 ms (spread jobs)": stats.get("p99", float("inf")) <= 20,
            "max < 100 ms (spread jobs)": stats.get("max", float("inf")) < 100,
        }
    return result


def _during(samples: list[list[Any]], planned: list[Planned]) -> dict[str, Any]:
    """Lateness of the spread jobs (one-offs inside and beyond, crons) due within the whole seconds'
    span (from its first second to the end of its last)."""
    whole = [p.due for p in planned if p.group == "whole_seconds"]
    if not whole:
        return summary([])
    first, last = min(whole), max(whole) + 1
    return summary(s[2] for s in samples if s[1] in SPREAD_KINDS and first <= s[0] < last)


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "status", "scheduled_for", "queued_at", "started_at", "finished_at", "error", "attempt")
    return {key: run.get(key) for key in keys}


# The per-run lateness groups, and which sample kinds each holds.
SPREAD_KINDS = ("inside", "beyond", "cron")
GROUPS = {
    "spread_one_offs_and_crons": SPREAD_KINDS,
    # every delivery (as each run's figure is), the whole seconds too
    "all_with_burst": ("inside", "beyond", "cron", "burst", "whole_seconds"),
    "one_off_due_inside_lookahead_at_creation": ("inside",),
    "one_off_due_beyond_lookahead_at_creation": ("beyond",),
    "burst_same_millisecond": ("burst",),
    "cron_every_10s": ("cron",),
    "whole_seconds": ("whole_seconds",),
}
SUMMED = (
    "deliveries_expected",
    "delivered_runs",
    "lost",
    "early",
    "duplicates_same_key",
    "runs_with_two_keys",
    "scheduled_for_header_mismatch",
    "jobs_created_after_their_due_time",
)


def _aggregate(name: str, runs: list[dict[str, Any]], *, faults: bool) -> dict[str, Any]:
    """The runs together: counts summed, each lateness statistic as its median over the runs (with
    the lowest and highest), and pooled (every run's deliveries in one distribution)."""
    pooled = {
        group: summary(x[2] for r in runs for x in r["samples"] if x[1] in kinds)
        for group, kinds in GROUPS.items()
    }
    everything = [x[2] for r in runs for x in r["samples"]]
    medians = {
        group: spread_of_summaries([r["arrival_lateness_ms"][group] for r in runs]) for group in GROUPS
    }
    result: dict[str, Any] = {
        "name": name,
        "what": "lateness at arrival = receiver's clock when the request is read - Punctual-Scheduled-For",
        "figures": "arrival_lateness_ms: each statistic's median over the runs, with the lowest and highest;"
        " arrival_lateness_ms_pooled: all runs' deliveries together; counts are sums over the runs",
        "repetitions": len(runs),
        **{key: sum(r[key] for r in runs) for key in SUMMED},
        "lost_runs": [lost for r in runs for lost in r["lost_runs"]][:10],
        "early_examples": [e for r in runs for e in r["early_examples"]][:10],
        "arrival_lateness_ms": medians,
        "arrival_lateness_ms_pooled": pooled,
        "recorded_lateness_ms": spread_of_summaries([r["recorded_lateness_ms"] for r in runs]),
        "attempt_start_to_arrival_ms": spread_of_summaries([r["attempt_start_to_arrival_ms"] for r in runs]),
        "spread_due_during_whole_seconds_ms": spread_of_summaries(
            [r.get("spread_due_during_whole_seconds_ms", {}) for r in runs]
        ),
        "histogram_ms": histogram(everything, EDGES_FAULTS_MS if faults else EDGES_MS),
        "worker_hold_ms": {
            group: spread_of_summaries([r.get("worker_hold_ms", {}).get(group, {}) for r in runs])
            for group in sorted({g for r in runs for g in r.get("worker_hold_ms", {})})
        },
    }
    spread_p99 = medians["spread_one_offs_and_crons"]["p99"].get("median", float("inf"))
    if faults:
        result["kills"] = sum(r["kills"] for r in runs)
        result["restarts"] = sum(r["restarts"] for r in runs)
        result["targets"] = {
            "nothing lost": result["lost"] == 0,
            "never early": result["early"] == 0,
            "p99 <= 5000 ms (spread jobs)": spread_p99 <= 5000,
        }
    else:
        spread_max = medians["spread_one_offs_and_crons"]["max"].get("median", float("inf"))
        result["targets"] = {
            "never early": result["early"] == 0,
            "p99 <= 20 ms (spread jobs)": spread_p99 <= 20,
            "max < 100 ms (spread jobs)": spread_max < 100,
        }
    result["runs"] = runs
    return result

"""The benchmarks' own arithmetic, on synthetic inputs (no stack): the worker's hold read from its
outcome lines and charged to the cost scenarios, and the precision bench's whole-seconds group."""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench import cost, precision, run
from bench.common import RESULTS
from punctual.testing.receiver import Delivery

# ------------------------------------------------------------------------------------------ cost


def _line(at: float, message: str, **fields: Any) -> str:
    """One line as the worker's Powertools logger writes it (PUNCTUAL_LOG_FORMAT=json)."""
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] + "+0000"
    return json.dumps(
        {
            "level": "INFO",
            "location": "_record:633",
            "message": message,
            "timestamp": stamp,
            "service": "punctual",
            **fields,
        }
    )


T0 = 1_795_000_000.0


def _worker_log(tmp_path: Path) -> Path:
    lines = [
        _line(T0 + 1, "run succeeded", job_id="job_a", run_id="r1", attempt=1, lateness_ms=2, hold_ms=2480),
        _line(T0 + 2, "retry scheduled", job_id="job_b", run_id="r2", lateness_ms=0, hold_ms=2600),
        _line(T0 + 3, "run failed", job_id="job_b", run_id="r2", lateness_ms=0, hold_ms=-40),
        # not outcome lines with a hold: left out
        _line(T0 + 4, "run failed: delivery exhausted", job_id="job_a", run_id="r1"),
        _line(T0 + 5, "run succeeded", job_id="job_c", run_id="r3", lateness_ms=0),
        _line(T0 + 6, "job to be deleted", job_id="job_a", deletes_at="2026-12-01T00:00:00+00:00"),
        "Traceback (most recent call last):",
        "[1, 2]",
        # the crons' lines: one job, two repetitions told apart by time
        _line(T0 + 15, "run succeeded", job_id="job_cron", run_id="c1", lateness_ms=1, hold_ms=2100),
        _line(T0 + 25, "run succeeded", job_id="job_cron", run_id="c2", lateness_ms=1, hold_ms=2300),
    ]
    path = tmp_path / "worker.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_outcome_lines_keep_the_three_outcomes_with_a_hold(tmp_path: Path) -> None:
    outcomes = cost._outcome_lines(_worker_log(tmp_path))
    assert [(o["message"], o["run_id"], o["hold_ms"]) for o in outcomes] == [
        ("run succeeded", "r1", 2480.0),
        ("retry scheduled", "r2", 2600.0),
        ("run failed", "r2", -40.0),
        ("run succeeded", "c1", 2100.0),
        ("run succeeded", "c2", 2300.0),
    ]
    assert outcomes[0]["t"] == pytest.approx(T0 + 1, abs=0.001)
    assert cost._outcome_lines(tmp_path / "absent.log") == []


def test_holds_are_charged_by_job_and_for_shared_jobs_by_the_worker_interval(tmp_path: Path) -> None:
    outcomes = cost._outcome_lines(_worker_log(tmp_path))
    # One-off batches: by the jobs they created, wherever the line falls in time.
    ahead = cost.Scenario("one_off_ahead", 0, "/ahead0/", worker=[(T0 + 100, T0 + 110)], jobs={"job_a"})
    soon = cost.Scenario("one_off_soon", 0, "/soon0/", worker=[(T0, T0 + 10)], jobs={"job_b"})
    assert cost._holds_of(ahead, outcomes) == [2480.0]
    assert cost._holds_of(soon, outcomes) == [2600.0, -40.0]
    # The crons' repetitions share their jobs: each takes the lines inside its worker interval.
    first = cost.Scenario(
        "recurring", 0, None, worker=[(T0 + 10, T0 + 20)], jobs={"job_cron"}, jobs_shared=True
    )
    second = cost.Scenario(
        "recurring", 1, None, worker=[(T0 + 20, T0 + 30)], jobs={"job_cron"}, jobs_shared=True
    )
    assert cost._holds_of(first, outcomes) == [2100.0]
    assert cost._holds_of(second, outcomes) == [2300.0]
    # No job ids known: the worker interval alone.
    unknown = cost.Scenario("recurring", 0, None, worker=[(T0, T0 + 2.5)])
    assert cost._holds_of(unknown, outcomes) == [2480.0, 2600.0]


def test_hold_summary_and_its_median_over_repetitions() -> None:
    assert cost.hold_summary([]) == {"median": None, "p99": None, "max": None, "min": None, "count": 0}
    held = cost.hold_summary([2500.0, 2400.0, -30.0, 2600.0])
    assert held == {"median": 2450.0, "p99": 2600.0, "max": 2600.0, "min": -30.0, "count": 4}
    other = cost.hold_summary([2000.0, 2200.0])
    # A repetition without a line does not count as zeros.
    median = cost.hold_median([held, cost.hold_summary([]), other])
    assert median == {"median": 2275.0, "p99": 2400.0, "max": 2400.0, "min": 985.0, "count": 3.0}
    assert cost.hold_median([cost.hold_summary([])])["count"] == 0


def _cost_run(hold: list[float], usd: float) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "repetition": 0,
        "executions": 10,
        "worker_seconds_per_job": 0.3,
        "cost": dict.fromkeys(cost.HEADLINE, 1.0),
    }
    figures["cost"]["usd_per_million_jobs_total"] = usd
    figures["cost"]["usd_per_million_jobs"] = {"lambda_duration": 2.5}
    figures["hold_ms"] = cost.hold_summary(hold)
    return figures


def test_a_scenario_keeps_its_cost_keys_and_gains_the_hold() -> None:
    runs = [_cost_run([2500.0, 2600.0], 9.0), _cost_run([], 10.0), _cost_run([2300.0], 11.0)]
    scenario = cost._aggregate(runs, pooled={})
    assert scenario["median"]["cost"]["usd_per_million_jobs_total"] == 10.0
    assert scenario["median"]["hold_ms"]["median"] == 2425.0
    assert scenario["spread"]["hold_ms_median"] == {"median": 2425.0, "min": 2300.0, "max": 2550.0, "runs": 2}
    assert scenario["spread"]["usd_per_million_jobs_total"]["median"] == 10.0
    assert "hold (due time - arrival at the worker, ms): median 2425.0 (2300.0-2550.0)" in cost.hold_line(
        scenario
    )


def test_reports_read_results_with_and_without_the_hold() -> None:
    recorded = json.loads((RESULTS / "cost.json").read_text())
    # As written before the worker logged its hold (the recorded file may have it by now).
    without = copy.deepcopy(recorded)
    with_hold = copy.deepcopy(recorded)
    for scenario in without["scenarios"].values():
        for block in ("median", "pooled", "spread"):
            for key in ("hold_ms", "hold_ms_median", "hold_ms_p99"):
                scenario.get(block, {}).pop(key, None)
        for figures in scenario.get("runs", []):
            figures.pop("hold_ms", None)
    for scenario in with_hold["scenarios"].values():
        if "runs" not in scenario:
            continue
        for figures in scenario["runs"]:
            figures["hold_ms"] = cost.hold_summary([2400.0, 2500.0, 2700.0])
        scenario.update(cost._aggregate(scenario["runs"], scenario["pooled"]))
    for result in (without, with_hold):
        assert "per million" in run.summary_markdown({"cost": result}, elapsed=60)
    assert "hold: not measured" in cost.report(without)
    assert "hold 2,500 ms" not in run.summary_markdown({"cost": without}, elapsed=60)
    assert "hold (due time - arrival at the worker, ms): median 2500" in cost.report(with_hold)
    assert "hold 2,500 ms" in run.summary_markdown({"cost": with_hold}, elapsed=60)


# ------------------------------------------------------------------------------------- precision


@pytest.mark.parametrize(
    ("window", "span", "first", "last"),
    [
        (130, 60, 63, 122),  # make bench: the minute before the burst (at +125 s)
        (70, 60, 3, 62),  # the CLI's default window: the burst at +65 s
        (150, 20, 103, 122),
        (40, 10, 23, 32),  # --quick
        (40, 60, 1, 32),  # cut to the 32 s before the burst's gap
    ],
)
def test_whole_seconds_keep_away_from_the_burst_inside_the_window(
    window: int, span: int, first: int, last: int
) -> None:
    offsets = precision.whole_seconds_offsets(window, span)
    assert (offsets[0], offsets[-1]) == (first, last)
    assert offsets == list(range(first, last + 1))
    burst = precision._burst_offset(window)
    assert all(abs(offset - burst) >= precision.WHOLE_SECONDS_BURST_GAP for offset in offsets)
    assert all(0 < offset < window for offset in offsets)
    assert precision.whole_seconds_offsets(window, 0) == []


def test_the_plan_adds_three_or_four_jobs_a_whole_second_and_leaves_the_others_alone() -> None:
    start = 1_795_000_000.0
    offsets = precision.whole_seconds_offsets(130, 60)
    without = precision._plan(random.Random(1), 215, 130, 20, start)
    planned = precision._plan(random.Random(1), 215, 130, 20, start, offsets)
    whole = [p for p in planned if p.group == "whole_seconds"]
    assert len(whole) == precision.whole_seconds_jobs(offsets) == 210
    per_second: dict[float, int] = {}
    for item in whole:
        per_second[item.due] = per_second.get(item.due, 0) + 1
    assert sorted(per_second) == [start + offset for offset in offsets]
    assert [per_second[start + offset] for offset in offsets[:4]] == [3, 4, 3, 4]
    assert len({p.path for p in planned}) == len(planned)
    others = sorted((p.path, p.due) for p in planned if p.group != "whole_seconds")
    assert others == sorted((p.path, p.due) for p in without)


def _delivery(path: str, due: float, late_ms: float) -> Delivery:
    scheduled = datetime.fromtimestamp(due, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    headers = {"Punctual-Scheduled-For": scheduled, "Idempotency-Key": f"{path}@{due}"}
    return Delivery(path, headers, b"", due + late_ms / 1000)


def test_whole_seconds_are_reported_apart_from_the_spread_jobs() -> None:
    start = 1_795_000_000.0
    planned = [
        precision.Planned("/one/0", "inside", start + 0.5),
        precision.Planned("/one/1", "beyond", start + 1.25),
        precision.Planned("/one/2", "inside", start + 3.5),  # due during the whole seconds
        precision.Planned("/burst/0", "burst", start + 9),
        precision.Planned("/whole/0", "whole_seconds", start + 3),
        precision.Planned("/whole/1", "whole_seconds", start + 3),
        precision.Planned("/whole/2", "whole_seconds", start + 4),
    ]
    lateness = {
        "/one/0": 2.0,
        "/one/1": 3.0,
        "/one/2": 4.0,
        "/burst/0": 30.0,
        "/whole/0": 5.0,
        "/whole/1": 900.0,
        "/whole/2": 7.0,
    }
    arrivals = {p.path: [_delivery(p.path, p.due, lateness[p.path])] for p in planned}
    one = precision._analyse(
        "precision",
        planned,
        [],
        arrivals,
        {},
        start + 10,
        faults=False,
        kills=[],
        restarts=0,
        created_late=0,
    )
    groups = one["arrival_lateness_ms"]
    assert groups["whole_seconds"]["count"] == 3
    assert groups["whole_seconds"]["max"] == pytest.approx(900.0, abs=0.2)
    # The three groups the cost target names: inside, beyond, cron.
    assert groups["spread_one_offs_and_crons"]["count"] == 3
    assert groups["spread_one_offs_and_crons"]["max"] < 10
    assert groups["all_with_burst"]["count"] == 7
    assert one["spread_due_during_whole_seconds_ms"]["count"] == 1  # /one/2, due at +3.5
    assert (one["lost"], one["early"]) == (0, 0)
    result = precision._aggregate("precision", [one], faults=False)
    assert result["arrival_lateness_ms"]["whole_seconds"]["count"]["median"] == 3
    assert result["arrival_lateness_ms_pooled"]["whole_seconds"]["count"] == 3
    assert result["arrival_lateness_ms_pooled"]["all_with_burst"]["count"] == 7
    assert result["spread_due_during_whole_seconds_ms"]["max"]["median"] == pytest.approx(4.0, abs=0.2)
    assert result["targets"]["max < 100 ms (spread jobs)"]  # the whole seconds' 900 ms is apart
    result["config"] = {
        "whole_seconds_span_s": 2,
        "whole_seconds_span_requested_s": 60,
        "whole_seconds_offsets_s": [3, 4],
        "whole_seconds_jobs": 3,
        "burst_offset_s": 9,
    }
    result["whole_seconds_span_s"] = 2
    text = precision.report(result)
    assert "whole_seconds" in text
    assert "cut from the 60s asked for" in text
    assert "jobs due 3 or 4 at each of 2 consecutive whole seconds" in run.summary_markdown(
        {"precision": result}, elapsed=60
    )


def test_the_recorded_precision_results_still_report() -> None:
    recorded = json.loads((RESULTS / "precision.json").read_text())
    assert "lateness at arrival" in precision.report(recorded)
    assert "lateness p99" in run.summary_markdown({"precision": recorded}, elapsed=60)


def test_the_lateness_plots_draw_the_whole_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from bench import common, plots

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    recorded = json.loads((RESULTS / "precision.json").read_text())
    run_ = recorded["runs"][0]
    due = run_["window_start"] + 20
    run_["samples"] += [
        [due, "whole_seconds", 4.2],
        [due, "whole_seconds", 6.1],
        [due + 1, "whole_seconds", 3.3],
    ]
    assert plots.write("precision", recorded) == ["precision_lateness.png", "precision_timeline.png"]
    assert (tmp_path / "precision_lateness.png").stat().st_size > 0

"""The cost benchmark's printed report: per scenario the requests, capacity units and dollars per
job (median of the repetitions, lowest-highest), who makes which request, and the worker's billed
duration beside the hold it waits out; then the idle sweep and the request count check."""

from __future__ import annotations

from typing import Any


def _range(figure: dict[str, Any], unit: str = "") -> str:
    if figure.get("runs", 0) < 2:
        return f"{unit}{figure.get('median')}"
    return f"{unit}{figure['median']} ({unit}{figure['min']}-{unit}{figure['max']})"


def report(result: dict[str, Any]) -> str:
    repetitions = result["config"]["repetitions"]
    lines = [
        f"== cost per executed job (us-east-1 list prices); median of {repetitions} repetitions"
        " (lowest-highest) =="
    ]
    for name, scenario in result["scenarios"].items():
        if "median" not in scenario:
            continue
        median, spread_ = scenario["median"], scenario["spread"]
        capacity = median["dynamodb_capacity_per_job"]
        lines.append(
            f"{name}: {scenario['executions']} executions in {scenario['repetitions']} runs;"
            f" AWS requests/job {_range(spread_['aws_requests_per_job'])},"
            f" DynamoDB {_range(spread_['dynamodb_requests_per_job'])} requests,"
            f" WCU {_range(spread_['wcu_per_job'])}, RCU {_range(spread_['rcu_per_job'])} (computed;"
            f" reported by the emulator: WCU {capacity['reported_wcu']}, RCU {capacity['reported_rcu']}),"
            f" SQS {_range(spread_['sqs_requests_per_job'])},"
            f" {_range(spread_['lambda_gb_seconds_per_job'])} GB-s"
            f" -> {_range(spread_['usd_per_million_jobs_total'], '$')} per million"
        )
        for who, ops in median["requests_per_job"].items():
            if ops:
                lines.append(f"    {who:<10} " + ", ".join(f"{op} {n:g}" for op, n in ops.items() if n))
        lines.append(
            "    DynamoDB per job: requests, computed RCU / WCU | reported by the emulator RCU / WCU"
        )
        answered = result["consumed_capacity_in_answers"]
        for op, units in median["dynamodb_capacity_per_job_by_operation"].items():
            if not units["requests"]:
                continue
            share = answered.get(op.split(" ", 1)[1], 0.0)
            reported = (
                "none reported"
                if share == 0
                else f"{units['reported_rcu']:g} / {units['reported_wcu']:g}"
                + ("" if share == 1 else f" ({share:.0%} of answers)")
            )
            lines.append(
                f"      {op:<38} {units['requests']:6g}   {units['rcu']:6g} / {units['wcu']:<6g} | {reported}"
            )
        lines.append(
            "    $/M (medians): "
            + ", ".join(f"{k} {v:g}" for k, v in median["cost"]["usd_per_million_jobs"].items())
        )
        lines.append("    " + hold_line(scenario))
    idle = result["idle_sweep"]
    lines.append(
        f"idle sweep: {idle['requests_per_tick']} per tick ({idle['shards']} shards),"
        f" {idle['rcu_per_tick']} RCU + {idle['wcu_per_tick']} WCU computed;"
        f" per month on AWS: {idle['per_month_on_aws']['usd']}"
    )
    check = result["request_count_check"]
    lines.append(
        f"requests counted by the emulator {check['emulator_requests']},"
        f" by the hooks {check['recorded_calls']}"
    )
    lines.append("capacity units: " + result["capacity_units"])
    lines.append(
        "EventBridge Scheduler for comparison:"
        f" ${result['eventbridge_scheduler_usd_per_million']:g} per million"
    )
    return "\n".join(lines)


def hold_line(scenario: dict[str, Any]) -> str:
    """The worker's billed duration (measured) and the hold it waits out, as one line of text."""
    median = scenario["median"]
    billed = (
        f"worker {median['worker_seconds_per_job']:g} s a job billed (measured invocations,"
        f" ${median['cost']['usd_per_million_jobs']['lambda_duration']:g}/M of Lambda duration with the"
        " dispatcher's and the api's)"
    )
    hold = median.get("hold_ms")
    if hold is None:
        return billed + "; hold: not measured (a result from before the worker logged it)"
    if not hold.get("count"):
        return billed + "; hold: no outcome line with a hold"
    spread_ = scenario["spread"]
    return (
        billed + f"; hold (due time - arrival at the worker, ms): median"
        f" {_range(spread_['hold_ms_median'])}, p99 {_range(spread_['hold_ms_p99'])},"
        f" min {hold['min']:g}, max {hold['max']:g} (medians of the runs; {hold['count']:g} lines a run)"
    )

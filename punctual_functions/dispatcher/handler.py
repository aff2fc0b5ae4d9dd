"""Dispatcher Lambda: on each EventBridge tick, sweep the shards, or fan the sweep out.

With ``sweep_invocations`` at 1 (the default) the tick sweeps every shard itself. With more, it
splits the shards into that many groups and invokes this same function asynchronously once per group
(``{"shards": [...], "start_at": ...}``); each of those sweeps only its group, from its moment: the
groups start spread over ten seconds (``FANOUT_SPREAD``), so that their reads do not all come at
once. A group whose invocation is refused is swept by the tick itself, so a refused fan-out costs
time, not triggers. Locally (an emulated AWS,
where no Lambda runs) the groups are swept on threads of this process instead.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from punctual_functions.core.clock import SYSTEM_CLOCK
from punctual_functions.core.factories import build_invoker, default_dispatcher
from punctual_functions.core.observability import logger
from punctual_functions.core.settings import get_settings
from punctual_functions.core.sweep import SweepReport, shard_groups, staggered_starts


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = get_settings()
    shards = event.get("shards")
    if shards is not None:  # one group of a fanned-out tick
        start_at = datetime.fromisoformat(event["start_at"]) if event.get("start_at") else None
        report = default_dispatcher().sweep(shards=[int(shard) for shard in shards], start_at=start_at)
        return _summary(report, shards)
    groups = shard_groups(settings.shard_count, settings.sweep_invocations)
    if len(groups) == 1:
        return _summary(default_dispatcher().sweep(), groups[0])
    if settings.aws_endpoint_url is None:
        starts = staggered_starts(len(groups), SYSTEM_CLOCK())
        refused = build_invoker(settings, context.invoked_function_arn).start_sweeps(groups, starts)
        logger.info("sweep fanned out", extra={"invocations": len(groups) - len(refused)})
    else:
        refused = groups
    return _sweep_here(refused)


def _sweep_here(groups: list[list[int]]) -> dict[str, Any]:
    """Sweep the groups in this process, one thread each (locally, or when invocations are refused)."""
    report = SweepReport()
    if groups:
        dispatcher = default_dispatcher()
        with ThreadPoolExecutor(max_workers=min(len(groups), 16), thread_name_prefix="group") as pool:
            for part in pool.map(lambda group: dispatcher.sweep(shards=group), groups):
                report.add(part)
    return _summary(report, [shard for group in groups for shard in group])


def _summary(report: SweepReport, shards: list[int]) -> dict[str, Any]:
    summary = {
        **{name: value for name, value in asdict(report.dispatch).items() if name != "waiting"},
        "buckets_swept": report.buckets_swept,
        "buckets_skipped": report.buckets_skipped,
        "triggers_checked": report.triggers_checked,
        "lag_seconds": report.lag_seconds,
        "shards_busy": report.shards_busy,
        "shards": len(shards),
    }
    if shards:
        logger.info("sweep finished", extra=summary)
    return summary

"""Dispatcher Lambda: one sweep per EventBridge tick."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.core.observability import logger
from functions.core.wiring import default_dispatcher


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = default_dispatcher().sweep()
    summary = {
        **asdict(report.dispatch),
        "buckets_swept": report.buckets_swept,
        "lag_seconds": report.lag_seconds,
    }
    logger.info("sweep finished", extra=summary)
    return summary

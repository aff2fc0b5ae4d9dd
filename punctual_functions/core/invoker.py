"""The dispatcher's fan-out on AWS: the ``Invoker`` port, by asynchronous invocations of the function."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING

from punctual_functions.core.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient


class LambdaInvoker:
    """Implements ``punctual_functions.core.ports.Invoker``: one ``Event`` invocation of ``function_arn`` per
    group of shards (``{"shards": [...], "start_at": "<ISO 8601>"}``), sent in parallel."""

    def __init__(self, client: LambdaClient, function_arn: str) -> None:
        self.client = client
        self.function_arn = function_arn

    def start_sweeps(self, groups: list[list[int]], starts: list[datetime]) -> list[list[int]]:
        if not groups:  # a pool of no thread is an error (ValueError), a fan-out to no group is not
            return []

        def invoke(group: list[int], start_at: datetime) -> list[int] | None:
            try:
                self.client.invoke(
                    FunctionName=self.function_arn,
                    InvocationType="Event",
                    Payload=json.dumps({"shards": group, "start_at": start_at.isoformat()}).encode(),
                )
            except Exception:
                logger.exception("sweep invocation refused; sweeping here", extra={"shards": group})
                return group
            return None

        with ThreadPoolExecutor(max_workers=min(len(groups), 16), thread_name_prefix="fanout") as pool:
            return [group for group in pool.map(invoke, groups, starts) if group is not None]

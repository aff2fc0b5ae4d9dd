"""Worker Lambda: SQS batches with partial batch responses; the records of a batch run concurrently."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.core.factories import build_queue, build_store, build_target_executor
from functions.core.observability import logger
from functions.core.queue import WorkMessage
from functions.core.settings import get_settings
from functions.worker.execute import ReturnLater, RunExecutor


@lru_cache(maxsize=1)
def run_executor() -> RunExecutor:
    settings = get_settings()
    return RunExecutor(
        build_store(settings), build_queue(settings), build_target_executor(settings), settings
    )


def record_handler(record: SQSRecord, lambda_context: LambdaContext | None = None) -> None:
    executor = run_executor()
    time_left = None if lambda_context is None else lambda_context.get_remaining_time_in_millis() / 1000
    try:
        executor.handle(
            WorkMessage.from_json(record.body),
            record.receipt_handle,
            record.body,
            # SQS always sends it; a hand-made event without it counts as a first delivery.
            receive_count=int(record.attributes.get("ApproximateReceiveCount") or 1),
            time_left_seconds=time_left,
        )
    except ReturnLater as later:
        if later.seconds is not None:
            executor.queue.change_visibility(record.receipt_handle, later.seconds)
        raise


def _handle(record: SQSRecord, context: LambdaContext) -> None:
    """``record_handler``, given the Lambda context when it takes one (as Powertools does)."""
    handle = record_handler  # looked up at call time: tests put their own in its place
    if "lambda_context" in inspect.signature(handle).parameters:
        handle(record, lambda_context=context)
    else:
        handle(record)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Powertools' async batch processor runs the records concurrently, each on a thread of its own
    (a record blocks: it waits for its second, then on its target), so none waits for another.

    A processor per invocation: it holds the batch's records and outcomes, and the local runtime runs
    several invocations at once in one process (Lambda runs one at a time). Every record handed back
    (retries, not due yet) is routine, not a failed invocation: no alarm.
    """
    records = event.get("Records") or []
    processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    with ThreadPoolExecutor(max_workers=max(1, len(records)), thread_name_prefix="record") as pool:

        async def on_thread(record: SQSRecord) -> None:
            await asyncio.get_running_loop().run_in_executor(pool, _handle, record, context)

        return async_process_partial_response(
            event=event, record_handler=on_thread, processor=processor, context=context
        )

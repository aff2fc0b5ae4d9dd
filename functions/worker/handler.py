"""Worker Lambda: SQS batches with partial batch responses; the records of a batch run concurrently."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.core.observability import logger
from functions.core.queue import WorkMessage
from functions.core.settings import get_settings
from functions.core.wiring import build_queue, build_store, build_target_executor
from functions.worker.execute import ReturnLater, RunExecutor


class ConcurrentBatchProcessor(BatchProcessor):
    """Powertools' SQS batch processor, with the records of a batch processed in parallel.

    Each record waits for its own second, so running them one after another would make every record
    but the first late.
    """

    def process(self) -> list[tuple[Any, ...]]:
        if len(self.records) <= 1:
            return super().process()
        with ThreadPoolExecutor(max_workers=len(self.records), thread_name_prefix="record") as pool:
            return list(pool.map(self._process_record, self.records))


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


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    # A processor per invocation: it holds the batch's records and outcomes, and the local runtime
    # runs several invocations at once in one process (Lambda runs one at a time). Every record
    # handed back (retries, not due yet) is routine, not a failed invocation: no alarm.
    processor = ConcurrentBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )

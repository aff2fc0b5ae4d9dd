"""Worker Lambda: SQS batches with partial batch responses; the records of a batch run concurrently."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import inspect
import os
import threading
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

from punctual_functions.core.factories import build_queue, build_run_executor
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.settings import get_settings
from punctual_functions.worker.batch import Settler, VisibilityLedger, retry_visibility
from punctual_functions.worker.context import ReturnLater
from punctual_functions.worker.execute import RunExecutor


@lru_cache(maxsize=1)
def run_executor() -> RunExecutor:
    return build_run_executor(get_settings())


def warm_up() -> None:
    """Build the executor now (its SDK clients and connection pools: a few hundred milliseconds)
    rather than in the first batch, whose messages arrive 250 ms before their second: a process's
    first run was late by what the build took beyond its hold. Lambda runs it in the init phase (the
    import, below); the local event source before its first receive."""
    try:
        run_executor()
    except Exception:  # not configured: the records report it, one by one
        logger.exception("the worker's executor could not be built before the first batch")


_frozen = threading.Event()


def _freeze_the_cold_start() -> None:
    """Once, as the first batch arrives (the handler's imports done and its executor built): keep the
    objects that exist from then on out of the garbage collector's full collections. Those scanned
    every object of the process (the SDK's models, Powertools, pydantic: hundreds of thousands), 40
    to 90 ms each, every 15 to 20 s under load, and every call due while one ran went out that much
    later; they now scan what the invocations left behind (about 5 ms)."""
    if _frozen.is_set():
        return
    _frozen.set()
    try:
        run_executor()
    except Exception:  # not configured: the records report it, one by one
        return
    gc.freeze()


def record_handler(record: SQSRecord, lambda_context: LambdaContext | None = None) -> None:
    """One record. Whatever it raises, its message is visible again within seconds (``ReturnLater``
    says when; any other error backs off by receive count), never after the queue's long timeout."""
    # SQS always sends it; a hand-made event without it counts as a first delivery.
    receive_count = int(record.attributes.get("ApproximateReceiveCount") or 1)
    executor: RunExecutor | None = None
    try:
        executor = run_executor()
        time_left = None if lambda_context is None else lambda_context.get_remaining_time_in_millis() / 1000
        executor.handle(
            WorkMessage.from_json(record.body),
            record.receipt_handle,
            record.body,
            receive_count=receive_count,
            time_left_seconds=time_left,
        )
    except ReturnLater as later:
        seconds = retry_visibility(receive_count) if later.seconds is None else later.seconds
        _give_back(executor, record, seconds)
        raise
    except Exception as error:
        seconds = retry_visibility(receive_count)
        logger.warning(
            "record failed: its message comes back soon",
            extra={
                "message_id": record.message_id,
                "receive_count": receive_count,
                "visible_in_seconds": seconds,
                "error": f"{type(error).__name__}: {error}",
            },
        )
        _give_back(executor, record, seconds)
        raise


def _give_back(executor: RunExecutor | None, record: SQSRecord, seconds: int) -> None:
    """Make the record's message visible again in ``seconds`` (best effort: if this fails too, the
    queue's own timeout brings it back)."""
    try:
        queue = executor.queue if executor is not None else build_queue(get_settings())
        queue.change_visibility(record.receipt_handle, seconds)
    except Exception:
        logger.exception("message visibility not shortened", extra={"message_id": record.message_id})


def _handle(record: SQSRecord, context: LambdaContext, settler: Settler | None = None) -> None:
    """``record_handler``, given the Lambda context when it takes one (as Powertools does); a record
    that ended is handed to the invocation's ``settler``. The ledger forgets every record's message
    once the record is done with it: the executor outlives the invocation."""
    handle = record_handler  # looked up at call time: tests put their own in its place
    try:
        if "lambda_context" in inspect.signature(handle).parameters:
            handle(record, lambda_context=context)
        else:
            handle(record)
    except BaseException:
        _forget(record.receipt_handle)
        raise
    if settler is not None:
        settler.ended(record.receipt_handle)  # it asks the ledger, which forgets it
    else:
        _forget(record.receipt_handle)


def _arrive(records: list[dict[str, Any]]) -> None:
    """The batch's holds and first reads, two requests for all its records (``Arrival.receive``).
    A record whose body does not parse is left to its own handling, which reports it."""
    arrived: list[tuple[WorkMessage, str]] = []
    for record in records:
        try:
            arrived.append((WorkMessage.from_json(record["body"]), record["receiptHandle"]))
        except Exception:
            continue
    try:
        run_executor().arrive(arrived)
    except Exception:  # the records fail one by one, each given back soon (record_handler)
        logger.exception("worker not configured")


def _queue() -> Queue | None:
    try:
        return run_executor().queue
    except Exception:  # the records fail one by one, each given back soon (record_handler)
        logger.exception("worker not configured")
        return None


def _forget(receipt_handle: str) -> None:
    queue = _queue()
    if isinstance(queue, VisibilityLedger):
        queue.visible_at(receipt_handle)


def _settler() -> Settler | None:
    queue = _queue()
    if queue is None:
        return None
    ledger = queue if isinstance(queue, VisibilityLedger) else None
    return Settler(queue, ledger.visible_at if ledger is not None else lambda _handle: None)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Powertools' async batch processor runs the records concurrently, each on a thread of its own
    (a record blocks: it waits for its second, then on its target), so none waits for another. A
    record that ends while others still run has its message deleted before it could reappear.

    A processor per invocation: it holds the batch's records and outcomes, and the local runtime runs
    several invocations at once in one process (Lambda runs one at a time). Every record handed back
    (retries, not due yet) is routine, not a failed invocation: no alarm.
    """
    records = event.get("Records") or []
    _freeze_the_cold_start()
    processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    settler = _settler() if len(records) > 1 else None  # a lone record ends with its invocation
    # Every batch, a lone record's too: its hold and its read are one request each either way, and
    # the read carries its owner's target limits (a job under no limit makes no request for them).
    _arrive(records)
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(records)), thread_name_prefix="record") as pool:

            async def on_thread(record: SQSRecord) -> None:
                # In the invocation's context, as the invocation's own thread would run it (the local
                # runtime keeps an invocation's trace header there: punctual/local/recursion.py).
                run = contextvars.copy_context().run
                await asyncio.get_running_loop().run_in_executor(pool, run, _handle, record, context, settler)

            return async_process_partial_response(
                event=event, record_handler=on_thread, processor=processor, context=context
            )
    finally:
        if settler is not None:
            settler.close()


# In Lambda (its runtime sets both), the import is the init phase: build the executor there.
if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") and os.environ.get("AWS_LAMBDA_RUNTIME_API"):
    warm_up()

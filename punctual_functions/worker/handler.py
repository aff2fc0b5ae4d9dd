"""Worker Lambda: SQS batches with partial batch responses; the records of a batch run concurrently.

The batch itself is ``invocation.run_batch``'s, which the simulator calls too: this module is what
only Lambda has (the init phase's warm-up, the cold start's freeze, the event and the answer)."""

from __future__ import annotations

import gc
import os
import threading
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from punctual_functions.core.factories import build_queue, build_run_executor
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue
from punctual_functions.core.settings import get_settings
from punctual_functions.worker.batch import retry_visibility
from punctual_functions.worker.execute import RunExecutor
from punctual_functions.worker.invocation import Record, give_back, handle_record, run_batch


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


def record_handler(executor: RunExecutor, record: Record, time_left: float | None) -> None:
    """One record (``invocation.handle_record``; looked up at call time: tests put their own here)."""
    handle_record(executor, record, time_left)


def _handle(executor: RunExecutor, record: Record, time_left: float | None) -> None:
    record_handler(executor, record, time_left)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """The batch, as ``invocation.run_batch`` runs it: each record on a thread of its own (a record
    blocks: it waits for its second, then on its target), so none waits for another; a record that
    ends while others still run has its message deleted before it could reappear. Answers SQS's
    partial batch response: the records that did not end come back.

    The local runtime runs several invocations at once in one process (Lambda runs one at a time):
    nothing of an invocation is kept between them but the executor. Every record handed back
    (retries, not due yet) is routine, not a failed invocation: no alarm.
    """
    records = [Record.from_event(record) for record in event.get("Records") or []]
    _freeze_the_cold_start()
    try:
        executor = run_executor()
    except Exception:  # not configured: each record comes back soon, and the log says why
        logger.exception("worker not configured")
        failed = [record.message_id for record in records]
        queue = _fallback_queue()
        for record in records:
            give_back(queue, record, retry_visibility(record.receive_count))
    else:
        failed = run_batch(
            executor, records, time_left=lambda: context.get_remaining_time_in_millis() / 1000, handle=_handle
        )
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


def _fallback_queue() -> Queue | None:
    try:
        return build_queue(get_settings())
    except Exception:
        return None


# In Lambda (its runtime sets both), the import is the init phase: build the executor there.
if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") and os.environ.get("AWS_LAMBDA_RUNTIME_API"):
    warm_up()

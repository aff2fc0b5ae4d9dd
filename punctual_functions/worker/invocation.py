"""What one worker invocation does with its batch: the one function the Lambda handler and the
simulator both call (``handler.py`` on threads and the system's clock; ``punctual/sim/`` on tasks in virtual
time, through the executor's ``Clock``).

In order: the batch's holds and first reads in two requests (``RunExecutor.arrive``), each record on
a task of its own (a record blocks: it waits for its second, then on its target), a record that
raises given back soon (``retry_visibility``, or the ``ReturnLater`` delay), and an ended record's
message deleted before it could reappear while its neighbours still run (``Settler``). The answer is
the partial batch response: the message ids of the records that did not end.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue
from punctual_functions.core.queue import WorkMessage
from punctual_functions.worker.batch import Settler, VisibilityLedger, retry_visibility
from punctual_functions.worker.context import ReturnLater

if TYPE_CHECKING:
    from punctual_functions.worker.execute import RunExecutor


@dataclass(frozen=True)
class Record:
    """One SQS record of a batch, as the event source hands it over."""

    message_id: str
    receipt_handle: str
    body: str
    receive_count: int  # ApproximateReceiveCount: 1 on the first delivery

    @classmethod
    def from_event(cls, record: dict[str, Any]) -> Record:
        """From a Lambda SQS event's record (a hand-made one without the count is a first delivery)."""
        attributes = record.get("attributes") or {}
        return cls(
            message_id=str(record.get("messageId", "")),
            receipt_handle=str(record.get("receiptHandle", "")),
            body=str(record.get("body", "")),
            receive_count=int(attributes.get("ApproximateReceiveCount") or 1),
        )


# One record, as the invocation hands it to the executor: (executor, record, time left) -> None.
# Raises what the executor raises. ``handler.py`` names the default, which tests replace.
RecordHandler = Callable[["RunExecutor", Record, "float | None"], None]


def handle_record(executor: RunExecutor, record: Record, time_left: float | None) -> None:
    executor.handle(
        WorkMessage.from_json(record.body),
        record.receipt_handle,
        record.body,
        receive_count=record.receive_count,
        time_left_seconds=time_left,
    )


def run_batch(
    executor: RunExecutor,
    records: Sequence[Record],
    *,
    time_left: Callable[[], float | None] = lambda: None,
    handle: RecordHandler = handle_record,
) -> list[str]:
    """Run one invocation's batch; the message ids of the records that failed (each given back to
    come again soon). ``time_left``: the invocation's remaining seconds (Lambda's context)."""
    clock = executor.clock
    queue = executor.queue
    ledger = queue if isinstance(queue, VisibilityLedger) else None
    # Every batch, a lone record's too: its hold and its read are one request each either way, and
    # the read carries its owner's target limits (a job under no limit makes no request for them).
    _arrive(executor, records)
    settler = (
        Settler(queue, ledger.visible_at if ledger is not None else lambda _handle: None, clock)
        if len(records) > 1
        else None  # a lone record ends with its invocation
    )

    # Each record in a copy of the invocation's context, taken here on the invocation's own thread
    # (the local runtime keeps an invocation's trace header there: punctual/local/recursion.py).
    contexts = [contextvars.copy_context() for _record in records]

    def one(index: int) -> bool:
        return contexts[index].run(_one, executor, records[index], settler, time_left, handle)

    try:
        ended = clock.parallel(one, list(range(len(records))), max(1, len(records)), "record")
    finally:
        if settler is not None:
            settler.close()
    return [record.message_id for record, done in zip(records, ended, strict=True) if not done]


def give_back(queue: Queue | None, record: Record, seconds: int) -> None:
    """Make the record's message visible again in ``seconds`` (best effort: if this fails too, the
    queue's own timeout brings it back)."""
    try:
        if queue is None:
            raise RuntimeError("no queue")
        queue.change_visibility(record.receipt_handle, seconds)
    except Exception:
        logger.exception("message visibility not shortened", extra={"message_id": record.message_id})


def _one(
    executor: RunExecutor,
    record: Record,
    settler: Settler | None,
    time_left: Callable[[], float | None],
    handle: RecordHandler,
) -> bool:
    """One record. Whatever it raises, its message is visible again within seconds (``ReturnLater``
    says when; any other error backs off by receive count), never after the queue's long timeout.
    Once done with, its message is forgotten by the ledger: the executor outlives the invocation."""
    try:
        handle(executor, record, time_left())
    except ReturnLater as later:
        seconds = retry_visibility(record.receive_count) if later.seconds is None else later.seconds
        give_back(executor.queue, record, seconds)
        _forget(executor.queue, record)
        return False
    except Exception as error:
        seconds = retry_visibility(record.receive_count)
        logger.warning(
            "record failed: its message comes back soon",
            extra={
                "message_id": record.message_id,
                "receive_count": record.receive_count,
                "visible_in_seconds": seconds,
                "error": f"{type(error).__name__}: {error}",
            },
        )
        give_back(executor.queue, record, seconds)
        _forget(executor.queue, record)
        return False
    if settler is not None:
        settler.ended(record.receipt_handle)  # it asks the ledger, which forgets it
    else:
        _forget(executor.queue, record)
    return True


def _arrive(executor: RunExecutor, records: Sequence[Record]) -> None:
    """The batch's holds and first reads, two requests for all its records (``Arrival.receive``).
    A record whose body does not parse is left to its own handling, which reports it."""
    arrived: list[tuple[WorkMessage, str]] = []
    for record in records:
        try:
            arrived.append((WorkMessage.from_json(record.body), record.receipt_handle))
        except Exception:
            continue
    try:
        executor.arrive(arrived)
    except Exception:  # each record makes its own requests
        logger.exception("the batch's arrival failed: each record reads for itself")


def _forget(queue: Queue, record: Record) -> None:
    if isinstance(queue, VisibilityLedger):
        queue.visible_at(record.receipt_handle)

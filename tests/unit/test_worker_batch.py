"""The worker's batch bookkeeping: deleting ended records, and only when it is needed."""

from __future__ import annotations

import time

from punctual_functions.core.queue import WorkMessage
from punctual_functions.worker.batch import SETTLE_MARGIN_SECONDS, Settler, VisibilityLedger
from tests.fakes.queue import MemoryQueue


class CountingQueue(MemoryQueue):
    def __init__(self) -> None:
        super().__init__()
        self.delete_calls: list[list[str]] = []

    def delete_messages(self, receipt_handles: list[str]) -> None:
        self.delete_calls.append(list(receipt_handles))
        super().delete_messages(receipt_handles)


def received(queue: MemoryQueue, count: int) -> list[str]:
    queue.send([(WorkMessage("j", f"r{n}"), 0) for n in range(count)])
    return [m["ReceiptHandle"] for m in queue.receive(count)]


def test_records_that_end_together_cost_no_delete_the_event_source_does_it() -> None:
    queue = CountingQueue()
    ledger = VisibilityLedger(queue)
    handles = received(queue, 10)
    settler = Settler(queue, ledger.visible_at)
    for handle in handles:
        ledger.change_visibility(handle, 4)  # a lease
        settler.ended(handle)
    settler.close()  # the invocation returns at once
    assert queue.delete_calls == []


def test_an_ended_record_is_deleted_just_before_its_visibility_runs_out() -> None:
    queue = CountingQueue()
    ledger = VisibilityLedger(queue)
    early, late, unknown = received(queue, 3)
    settler = Settler(queue, ledger.visible_at)
    ledger.change_visibility(early, 2)
    ledger.change_visibility(late, 30)
    started = time.monotonic()
    settler.ended(early)
    settler.ended(late)
    settler.ended(unknown)  # never hidden by the worker: deleted soon, with the others
    while not queue.delete_calls and time.monotonic() - started < 3:
        time.sleep(0.05)
    assert queue.delete_calls == [[early, late, unknown]], "one call for all that had ended"
    assert time.monotonic() - started < 2 - SETTLE_MARGIN_SECONDS + 0.3
    settler.close()
    assert queue.depth()["in_flight"] == 0


def test_a_record_ending_after_the_close_is_left_to_the_event_source() -> None:
    queue = CountingQueue()
    (handle,) = received(queue, 1)
    settler = Settler(queue)
    settler.close()
    settler.ended(handle)
    time.sleep(0.7)
    assert queue.delete_calls == []

"""``run_batch``: what a worker invocation does with its batch, on the system's clock."""

from __future__ import annotations

import contextvars
import threading
from types import SimpleNamespace
from typing import Any

from punctual_functions.core.clock import SYSTEM_CLOCK
from punctual_functions.worker.context import ReturnLater
from punctual_functions.worker.invocation import Record, run_batch

TRACE: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace", default=None)


class Queue:
    def __init__(self) -> None:
        self.given_back: dict[str, int] = {}
        self.deleted: list[str] = []

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self.given_back[receipt_handle] = seconds

    def delete_messages(self, receipt_handles: list[str]) -> None:
        self.deleted += receipt_handles


def executor(queue: Queue, arrived: list[int]) -> Any:
    return SimpleNamespace(
        queue=queue, clock=SYSTEM_CLOCK, arrive=lambda messages: arrived.append(len(messages))
    )


def records(count: int) -> list[Record]:
    return [Record(f"m{n}", f"r{n}", f'{{"job_id": "j", "run_id": "{n}"}}', 1) for n in range(count)]


def test_each_record_runs_on_its_own_thread_in_the_invocations_context() -> None:
    barrier = threading.Barrier(3, timeout=5)
    seen: list[str | None] = []

    def handle(_executor: Any, record: Record, _time_left: float | None) -> None:
        barrier.wait()  # would time out if the records ran one after another
        seen.append(TRACE.get())

    arrived: list[int] = []
    token = TRACE.set("Root=1-abc")
    try:
        failed = run_batch(executor(Queue(), arrived), records(3), handle=handle)
    finally:
        TRACE.reset(token)
    assert failed == [] and seen == ["Root=1-abc"] * 3
    assert arrived == [3], "the batch arrives as one"


def test_records_that_raise_are_given_back_and_answered_as_failures() -> None:
    def handle(_executor: Any, record: Record, _time_left: float | None) -> None:
        if record.message_id == "m1":
            raise ReturnLater("not due yet", 7)
        if record.message_id == "m2":
            raise RuntimeError("throttled")

    queue = Queue()
    failed = run_batch(executor(queue, []), [*records(3), Record("m3", "r3", "{}", 3)], handle=handle)
    assert failed == ["m1", "m2"]
    assert queue.given_back == {"r1": 7, "r2": 1}


def test_a_lone_record_arrives_as_a_batch_of_one_and_is_handed_the_time_left() -> None:
    arrived: list[int] = []
    lefts: list[float | None] = []
    run_batch(
        executor(Queue(), arrived),
        records(1),
        time_left=lambda: 42.0,
        handle=lambda _executor, _record, left: lefts.append(left),
    )
    assert arrived == [1] and lefts == [42.0]

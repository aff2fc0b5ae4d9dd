"""What a batch's messages owe to SQS: visible again soon after an error, gone once their record ends.

Two facts of Lambda's SQS event source make these necessary:

- A message is received with the queue's visibility timeout, which AWS wants at six times the
  function's timeout (5,400 s here). A record that raises before the worker shortened that (a table
  throttle, AccessDenied, a bug) would stay hidden for an hour and a half: ``retry_visibility``
  gives it back within seconds, later at each receive.
- The event source deletes a batch's messages only when the whole invocation returns. A record that
  ended while its neighbours still run (one webhook answers in 50 ms, another in 8 s) keeps the
  visibility its worker last set (its hold or lease: seconds), so it would come back and be handled
  again as a duplicate. ``Settler`` deletes such messages itself just before they would reappear,
  ten to a call; a batch whose records end together costs nothing extra.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from punctual_functions.core.clock import SYSTEM_CLOCK, Clock, Joinable
from punctual_functions.core.observability import logger

if TYPE_CHECKING:
    from punctual_functions.core.ports import Queue
    from punctual_functions.core.queue import WorkMessage

# A record that raised comes back after 1, 2, 4 ... seconds by receive count, at most this long.
MAX_RETRY_VISIBILITY_SECONDS: Final = 60
# An ended record's message is deleted this long before it would become visible again...
SETTLE_MARGIN_SECONDS: Final = 1.0
# ...and one whose visibility the worker never set (it ended before holding it) this soon after its
# end: a short gathering, so that records ending together are deleted in one call.
SETTLE_UNKNOWN_SECONDS: Final = 0.5
# The settler's longest wait with nothing pending (it is woken as soon as a record ends or the close).
_IDLE_SECONDS: Final = 60.0


def retry_visibility(receive_count: int) -> int:
    """Seconds until a record that raised is delivered again: doubling with each receive."""
    doublings: int = max(0, min(receive_count - 1, 6))
    return min(MAX_RETRY_VISIBILITY_SECONDS, 1 << doublings)


class VisibilityLedger:
    """The ``Queue`` port, noting when each message it hid becomes visible again (monotonic time)."""

    def __init__(self, queue: Queue, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.queue = queue
        self.monotonic = monotonic
        self._visible_at: dict[str, float] = {}

    def send(self, messages: list[tuple[WorkMessage, int]]) -> None:
        self.queue.send(messages)

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        asked = self.monotonic()  # the timeout runs from SQS's receipt of the call: after this
        self.queue.change_visibility(receipt_handle, seconds)
        self._visible_at[receipt_handle] = asked + seconds

    def change_visibilities(self, changes: list[tuple[str, int]]) -> list[str]:
        asked = self.monotonic()
        refused = self.queue.change_visibilities(changes)
        for handle, seconds in changes:
            if handle not in refused:
                self._visible_at[handle] = asked + seconds
        return refused

    def delete_messages(self, receipt_handles: list[str]) -> None:
        self.queue.delete_messages(receipt_handles)

    def send_to_dlq(self, body: str, reason: str) -> None:
        self.queue.send_to_dlq(body, reason)

    def depth(self) -> dict[str, int]:
        return self.queue.depth()

    def visible_at(self, receipt_handle: str) -> float | None:
        """When the message becomes visible again, if this worker set its visibility; forgets it."""
        return self._visible_at.pop(receipt_handle, None)


class Settler:
    """One invocation's ended records: each deleted just before its visibility would run out, unless
    the invocation returns first (then the event source deletes it, as it deletes every success).
    Its deletions run on a task of the ``clock`` (a thread, or the simulator's task)."""

    def __init__(
        self,
        queue: Queue,
        visible_at: Callable[[str], float | None] = lambda _handle: None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.queue = queue
        self.visible_at = visible_at
        self.clock = clock
        self.pending: dict[str, float] = {}  # receipt handle -> when to delete it at the latest
        self.deleted: list[str] = []
        self.closed = False
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._task: Joinable | None = None

    def ended(self, receipt_handle: str) -> None:
        """A record ended (its run recorded): its message has nothing left to do."""
        now = self.clock.monotonic()
        visible = self.visible_at(receipt_handle)
        due = now + SETTLE_UNKNOWN_SECONDS if visible is None else visible - SETTLE_MARGIN_SECONDS
        with self._lock:
            if self.closed:
                return
            self.pending[receipt_handle] = due
            if self._task is None:
                self._task = self.clock.start(self._run, name="settler")
            self._changed.set()

    def close(self) -> None:
        """The invocation returns: what is still pending is the event source's to delete."""
        with self._lock:
            self.closed = True
            self._changed.set()
            task = self._task
        if task is not None:
            task.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self.closed:
                    return
                self._changed.clear()
                now = self.clock.monotonic()
                wait = min(self.pending.values()) - now if self.pending else _IDLE_SECONDS
                handles = list(self.pending) if wait <= 0 else []  # all: one call deletes up to ten
                if handles:
                    self.pending.clear()
            if not handles:
                self.clock.wait(self._changed, min(wait, _IDLE_SECONDS))
                continue
            try:
                self.queue.delete_messages(handles)
                self.deleted.extend(handles)
            except Exception:  # they come back as duplicates, which the run's status absorbs
                logger.exception("ended records not deleted", extra={"count": len(handles)})

"""Virtual time and the tasks that wait on it: the engine's ``Clock`` port, run by a discrete-event loop.

Every piece of the engine that waits (a dispatcher invocation, a worker's record, the heartbeat of an
attempt, a thread of a parallel map) runs as a task: a greenlet that gives control back to the loop
whenever it sleeps, waits or joins, and is resumed when virtual time reaches its moment. Only one task
runs at a time, so the in-memory fakes need no more locking than they have, and a run is
deterministic for a given seed.

The engine's code does not know: it calls ``clock()``, ``clock.sleep``, ``clock.parallel`` and
``clock.start`` as it does on the system's clock (``punctual_functions/core/clock.py``).
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from greenlet import greenlet

T = TypeVar("T")
R = TypeVar("R")

# How often a task waiting on a ``threading.Event`` looks at it (virtual seconds): an event set by
# another task is seen within this (the engine's only such wait is the heartbeat's, for its stop).
EVENT_POLL_SECONDS = 0.02


class SimulationError(RuntimeError):
    """A task failed in a way nothing in the simulation handles: a bug to look at, not an outcome."""


@dataclass(eq=False)
class Task:
    """One greenlet's work; ``join`` waits for it in virtual time (the ``Joinable`` of the port)."""

    world: World
    name: str
    context: Any = None
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    observed: bool = False
    joiners: list[greenlet] = field(default_factory=list)

    def join(self, timeout: float | None = None) -> None:
        """Wait until the task ends, at most ``timeout`` virtual seconds (the port's join: it does
        not raise the task's error)."""
        self.observed = True
        if self.done:
            return
        me = greenlet.getcurrent()
        self.joiners.append(me)
        try:
            self.world._park(None if timeout is None else self.world.now + max(0.0, timeout))
        finally:
            if me in self.joiners:
                self.joiners.remove(me)

    def outcome(self) -> Any:
        """The result, once joined; the task's error raised here."""
        self.join()
        if self.error is not None:
            raise self.error
        return self.result


class World:
    """The loop, and the ``Clock`` the engine is given. ``now`` is virtual seconds since ``epoch``."""

    def __init__(self, epoch: datetime) -> None:
        self.epoch = epoch
        self.now = 0.0
        self._heap: list[tuple[float, int, int, greenlet]] = []
        self._seq = itertools.count()
        self._tokens: dict[greenlet, int] = {}  # a parked greenlet -> the token its wake must carry
        self._hub = greenlet.getcurrent()
        self._tasks: dict[greenlet, Task] = {}
        self.errors: list[tuple[Task, BaseException]] = []
        self.switches = 0

    # --------------------------------------------------------------------------- the Clock port

    def __call__(self) -> datetime:
        return self.epoch + timedelta(seconds=self.now)

    def at(self, seconds: float) -> datetime:
        return self.epoch + timedelta(seconds=seconds)

    def seconds(self, moment: datetime) -> float:
        return (moment - self.epoch).total_seconds()

    def sleep(self, seconds: float) -> None:
        self._park(self._after(seconds))

    def _after(self, seconds: float) -> float:
        """The moment ``seconds`` from now; for a wait too short to move a float this large, the next
        moment there is (or a loop that waits for a time to come would spin with the clock stopped)."""
        if seconds <= 0:
            return self.now
        return max(self.now + seconds, math.nextafter(self.now, math.inf))

    def monotonic(self) -> float:
        return self.now

    def wait(self, event: threading.Event, timeout: float) -> bool:
        until = self._after(timeout)
        while not event.is_set() and self.now < until:
            self.sleep(min(EVENT_POLL_SECONDS, until - self.now))
        return event.is_set()

    def parallel(self, function: Callable[[T], R], items: Sequence[T], workers: int, name: str) -> list[R]:
        if workers <= 1 or len(items) <= 1:
            return [function(item) for item in items]
        results: list[Any] = [None] * len(items)
        pending = iter(enumerate(items))

        def work() -> None:
            for index, item in pending:
                results[index] = function(item)

        tasks = [self.spawn(work, name=name, joined=True) for _ in range(min(workers, len(items)))]
        errors = []
        for task in tasks:
            task.join()
            if task.error is not None:
                errors.append(task.error)
        if errors:
            raise errors[0]
        return results

    def start(self, function: Callable[[], None], name: str) -> Task:
        return self.spawn(function, name=name)

    # ------------------------------------------------------------------------------ the kernel

    def spawn(
        self,
        function: Callable[[], Any],
        *,
        at: float | None = None,
        name: str = "",
        context: Any = None,
        joined: bool = False,
    ) -> Task:
        """A task running ``function`` from ``at`` (now by default). It inherits the context (the
        Lambda invocation it belongs to) of the task that spawns it unless given one. ``joined``: its
        error is the joiner's to handle (else an error no one joins stops the run)."""
        parent = self._tasks.get(greenlet.getcurrent())
        task = Task(self, name, context if context is not None else (parent.context if parent else None))
        task.observed = joined

        def body() -> None:
            try:
                task.result = function()
            except BaseException as error:  # handed to whoever joins, or reported by run()
                task.error = error
            finally:
                task.done = True
                for joiner in list(task.joiners):
                    self._wake(joiner)
                del self._tasks[greenlet.getcurrent()]
                if task.error is not None and not task.observed:
                    self.errors.append((task, task.error))

        child = greenlet(body, parent=self._hub)
        self._tasks[child] = task
        token = next(self._seq)
        self._tokens[child] = token
        heapq.heappush(
            self._heap, (self.now if at is None else max(self.now, at), next(self._seq), token, child)
        )
        return task

    def current(self) -> Task | None:
        return self._tasks.get(greenlet.getcurrent())

    def run(self, until: float | None = None) -> None:
        """Run the tasks in time order until none is left, or until virtual time ``until``."""
        if greenlet.getcurrent() is not self._hub:
            raise SimulationError("the loop runs on the greenlet that made the world")
        heap = self._heap
        while heap:
            at, _seq, token, task = heap[0]
            if until is not None and at > until:
                break
            heapq.heappop(heap)
            if self._tokens.get(task) != token:
                continue  # woken already (a join or a signal before its timeout)
            del self._tokens[task]
            self.now = max(self.now, at)
            self.switches += 1
            task.switch()
            if self.errors:
                failed, error = self.errors[0]
                raise SimulationError(f"task {failed.name!r} failed at t={self.now:.3f} s") from error
        if until is not None and until > self.now:
            self.now = until

    def _park(self, until: float | None) -> None:
        """Give control back to the loop until ``until`` (or until woken; never if neither)."""
        me = greenlet.getcurrent()
        if me is self._hub:
            raise SimulationError("only a task may wait: spawn the work, then run the world")
        token = next(self._seq)
        self._tokens[me] = token
        if until is not None:
            heapq.heappush(self._heap, (until, next(self._seq), token, me))
        self._hub.switch()

    def _wake(self, parked: greenlet) -> None:
        token = self._tokens.get(parked)
        if token is not None:
            heapq.heappush(self._heap, (self.now, next(self._seq), token, parked))


class Signal:
    """Tasks waiting for something another task announces (a message became visible)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.waiting: list[greenlet] = []

    def wait(self, timeout: float | None = None) -> None:
        me = greenlet.getcurrent()
        self.waiting.append(me)
        try:
            self.world._park(None if timeout is None else self.world.now + max(0.0, timeout))
        finally:
            if me in self.waiting:
                self.waiting.remove(me)

    def notify(self, count: int | None = None) -> None:
        woken = self.waiting if count is None else self.waiting[:count]
        self.waiting = [] if count is None else self.waiting[count:]
        for parked in woken:
            self.world._wake(parked)

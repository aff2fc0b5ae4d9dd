"""Lambda: account concurrency, execution environments (cold starts) within each function's scaling
rate, environments that expire (idle too long, or at the end of their lifetime), CPU in proportion
to memory, and what it bills (requests, GB-seconds).

An invocation is a task whose context is its ``Invocation``; the tasks it starts (the parallel maps
of a sweep, a record's heartbeat) share it. CPU is charged through ``charge``: an execution
environment runs Python on one thread at a time (the GIL), so the CPU of all its tasks is served one
after the other at the environment's share of a vCPU, and a task waits for its turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from punctual.scale.params import Parameters
from punctual.sim.world import Task, World


@dataclass
class Invocation:
    function: str
    vcpu: float
    started: float
    cpu_free_at: float = 0.0
    cpu_seconds: float = 0.0


@dataclass
class FunctionStats:
    invocations: int = 0
    cold_starts: int = 0
    throttled: int = 0
    throttled_scaling: int = 0  # of ``throttled``: no new environment within the scaling rate
    expired: int = 0  # environments gone: idle too long, or replaced at the end of their lifetime
    gb_seconds: float = 0.0
    cpu_seconds: float = 0.0
    environments: int = 0
    running: int = 0
    peak_running: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # invocations that raised, by error


@dataclass
class Lambdas:
    world: World
    params: Parameters
    # The account's concurrency this simulation has (a group of shards has its share:
    # ``punctual.sim.engine``).
    account_concurrency: int
    # The share of each function's scaling rate this simulation has (a group of shards: its share).
    scaling_share: float = 1.0
    running: int = 0
    peak_running: int = 0
    functions: dict[str, FunctionStats] = field(default_factory=dict)
    # Per function: (new environments it may still get, when that was last refilled).
    _scaling: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Per function: its idle execution environments, (idle since, born), the latest idle last.
    _idle: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def stats(self, function: str) -> FunctionStats:
        return self.functions.setdefault(function, FunctionStats())

    def invoke(self, function: str, body: Callable[[], None], *, name: str = "") -> Task | None:
        """Start ``body`` as an invocation of ``function`` now; None if the account has no
        concurrency left (Lambda throttles it: the caller retries or gives up as AWS's would)."""
        stats = self.stats(function)
        if self.running >= self.account_concurrency:
            stats.throttled += 1
            return None
        idle = self._warm(function)
        cold = not idle
        if cold and not self._new_environment(function):
            stats.throttled += 1
            stats.throttled_scaling += 1
            return None
        born = self.world.now if cold else idle.pop()[1]  # the environment used last: warmest
        self.running += 1
        self.peak_running = max(self.peak_running, self.running)
        stats.running += 1
        stats.peak_running = max(stats.peak_running, stats.running)
        stats.invocations += 1
        if cold:
            stats.environments += 1
            stats.cold_starts += 1
        invocation = Invocation(function, self.params.vcpu(function), self.world.now)

        def run() -> None:
            try:
                if cold:
                    # The import is CPU: a small function starts slower (the figure is one vCPU's).
                    self.world.sleep(self.params.cold_start_ms[function] / 1000 / invocation.vcpu)
                self.charge(self.params.cpu_per_invocation_ms / 1000)
                body()
            except Exception as error:  # the invocation fails, as Lambda reports it; it is counted
                name = f"{type(error).__name__}: {str(error)[:120]}"
                stats.errors[name] = stats.errors.get(name, 0) + 1
            finally:
                self.running -= 1
                stats.running -= 1
                self._idle.setdefault(function, []).append((self.world.now, born))
                seconds = self.world.now - invocation.started
                stats.gb_seconds += seconds * self.params.memory_mb[function] / 1024
                stats.cpu_seconds += invocation.cpu_seconds

        return self.world.spawn(run, name=name or function, context=invocation)

    def _warm(self, function: str) -> list[tuple[float, float]]:
        """``function``'s idle environments still alive (those idle too long or past their lifetime
        are gone, and counted)."""
        now, params = self.world.now, self.params
        idle = self._idle.setdefault(function, [])
        alive = [
            (since, born)
            for since, born in idle
            if now - since < params.lambda_idle_expiry_seconds
            and now - born < params.lambda_environment_lifetime_seconds
        ]
        if len(alive) != len(idle):
            stats = self.stats(function)
            stats.expired += len(idle) - len(alive)
            stats.environments -= len(idle) - len(alive)
            self._idle[function] = idle = alive
        return idle

    def _new_environment(self, function: str) -> bool:
        """Take one new execution environment of ``function``'s scaling rate, if there is one: the
        rate refills continuously, up to its 10 seconds' worth and no more."""
        capacity = max(1.0, self.params.lambda_scaling_environments * self.scaling_share)
        left, refilled = self._scaling.get(function, (capacity, self.world.now))
        left = min(capacity, left + (self.world.now - refilled) * capacity / 10)
        if left < 1:
            self._scaling[function] = (left, self.world.now)
            return False
        self._scaling[function] = (left - 1, self.world.now)
        return True

    def function(self) -> str:
        """The function the current task runs in ("-" outside an invocation)."""
        task = self.world.current()
        invocation = task.context if task is not None else None
        return invocation.function if isinstance(invocation, Invocation) else "-"

    def charge(self, cpu_seconds: float) -> None:
        """Spend ``cpu_seconds`` of one vCPU's work in the current invocation: served after the CPU
        its other tasks asked for, at its share of a vCPU. Outside an invocation (the scenario's own
        tasks), nothing."""
        task = self.world.current()
        invocation = task.context if task is not None else None
        if not isinstance(invocation, Invocation) or cpu_seconds <= 0:
            return
        invocation.cpu_seconds += cpu_seconds
        start = max(self.world.now, invocation.cpu_free_at)
        invocation.cpu_free_at = start + cpu_seconds / invocation.vcpu
        self.world.sleep(invocation.cpu_free_at - self.world.now)

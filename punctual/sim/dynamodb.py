"""DynamoDB in virtual time: the engine's ``Tables`` port as the in-memory fake answers it, with the
requests the real adapter would make (``sim.table_requests``), their latency, the CPU the SDK spends
on them, and the limits that throttle them.

Limits, per second: each partition key value 1,000 WCU and 3,000 RCU, reads and writes apart (an
index's partition key value alike); the table its on-demand quota, and no more than double its
previous peak; the owner index the same, on its own (a global secondary index has capacity of its
own, and a new one starts at a new table's warm throughput). A throttled
request is retried as botocore's standard mode retries it (backoff with jitter, the attempts of
``ddb_max_attempts`` for the function making it); the
last refusal reaches the engine as the SDK raises it.

One simplification: the fake applies a call's writes before its requests are admitted, so a request
throttled past its last retry has landed all the same. The engine sees the SDK's error, as it would
for a write whose answer was lost (a case it must handle anyway); it is counted
(``failed_after_retries``) and no scenario that meets its targets has any.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from punctual.scale.params import Parameters, quantile
from punctual.sim.table_requests import TableRequest, requests_for, snapshot
from punctual.sim.world import World
from punctual.testing.fakes.store import MemoryStore


@dataclass
class TableStats:
    requests: dict[str, int] = field(default_factory=dict)  # "<function> <operation>" -> requests
    units: dict[str, list[float]] = field(default_factory=dict)  # the same -> [rcu, wcu] (once a request)
    kb: dict[str, float] = field(default_factory=dict)  # the same -> KB its items carried (the SDK's work)
    rcu: float = 0.0
    wcu: float = 0.0
    throttled: dict[tuple[str, str], int] = field(default_factory=dict)  # (partition kind, operation)
    failed_after_retries: int = 0
    peak_rcu_per_second: float = 0.0
    peak_wcu_per_second: float = 0.0
    index_peak_wcu_per_second: float = 0.0  # the owner index's, apart from the table's
    per_second: dict[int, list[float]] = field(default_factory=dict)  # second -> [rcu, wcu]


def partition_kind(partition: str) -> str:
    """The kind of a partition key value, for the report: trigger shard, job, owner index, ..."""
    if partition.startswith("gsi1:"):
        return "owner index"
    head = partition.split("#", 1)[0]
    return {"T": "trigger shard", "JOB": "job and runs", "CURSOR": "cursor", "NAME": "name"}.get(
        head, head.lower()
    )


# The base table and the owner index: each its own on-demand capacity (its quota, its warm
# throughput, double its previous peak), as DynamoDB keeps a global secondary index's apart.
TABLE = "table"
INDEX = "owner index"


def capacity_of(partition: str) -> str:
    """Whose capacity a partition's units count against: the base table's or the owner index's."""
    return INDEX if partition.startswith("gsi1:") else TABLE


class Capacity:
    """Units consumed per second, per partition key value and for the table and its index; what is
    refused."""

    def __init__(
        self,
        params: Parameters,
        *,
        table_share: float,
        shared_partition: Callable[[str], bool],
        table_window: int = 1,
    ) -> None:
        self.params = params
        # A simulation of one group of shards stands for 1/share of the table (``punctual.sim.engine``): its
        # table figures are scaled up by that, and partitions every group writes (the owner index)
        # have their share of the limit.
        self.table_share = table_share
        self.shared_partition = shared_partition
        self.second = -1
        self.partitions: dict[str, list[float]] = {}
        # A partition every group writes (the owner index) is charged over a window of 1/share
        # seconds against a second's limit: the group's writes are its share of the partition's,
        # the other groups' spread over the same time. Per second against its share of the limit,
        # a batch of a hundred jobs of one owner (a hundred index writes at once) was throttled in a
        # group although the whole deployment wrote a third of the limit.
        self.shared_window = max(1, round(1 / table_share))
        self.shared_since = -1
        self.shared: dict[str, list[float]] = {}
        # The table's units are counted over windows of ``table_window`` seconds against that many
        # seconds of its limits: the other groups' sweeps start spread over the window
        # (``FANOUT_SPREAD``), so the simulated group's burst at its tick meets their steady load,
        # not their bursts. Per second, the group's burst times the number of groups read as if
        # every sweep read at the same moment.
        self.table_window = max(1, table_window)
        # [rcu, wcu] of the window so far, and the previous peak a second, of the table and the index.
        self.totals = {TABLE: [0.0, 0.0], INDEX: [0.0, 0.0]}
        self.peaks = {
            TABLE: [params.ddb_initial_peak_rcu, params.ddb_initial_peak_wcu],
            INDEX: [params.ddb_index_initial_peak_rcu, params.ddb_index_initial_peak_wcu],
        }
        self.stats = TableStats()

    def _roll(self, now: float) -> None:
        second = math.floor(now)
        if second != self.second:
            self.partitions = {}
            if self.second >= 0 and second // self.table_window != self.second // self.table_window:
                # The window ended: its units a second, as the whole deployment used them.
                start = self.second - self.second % self.table_window
                for name, units in self.totals.items():
                    rcu, wcu = (used / self.table_share / self.table_window for used in units)
                    peak = self.peaks[name]
                    self.peaks[name] = [max(peak[0], rcu), max(peak[1], wcu)]
                    if name == TABLE:
                        for each in range(start, start + self.table_window):
                            self.stats.per_second[each] = [rcu, wcu]
                        self.stats.peak_rcu_per_second = max(self.stats.peak_rcu_per_second, rcu)
                        self.stats.peak_wcu_per_second = max(self.stats.peak_wcu_per_second, wcu)
                    else:
                        self.stats.index_peak_wcu_per_second = max(self.stats.index_peak_wcu_per_second, wcu)
                    self.totals[name] = [0.0, 0.0]
            self.second = second

    def admit(self, request: TableRequest, now: float) -> str | None:
        """Charge the request's units if every limit allows them; else what refused them: the kind
        of the partition, "table", or "owner index (all partitions)"."""
        self._roll(now)
        params = self.params
        window = self.table_window * self.table_share
        asked = {TABLE: [0.0, 0.0], INDEX: [0.0, 0.0]}
        for unit in request.units:
            units = asked[capacity_of(unit.partition)]
            units[0] += unit.rcu
            units[1] += unit.wcu
        for name, (rcu, wcu) in asked.items():
            if not rcu and not wcu:
                continue
            # An index has the table's on-demand quota, and a warm throughput of its own.
            peak, used = self.peaks[name], self.totals[name]
            if (
                used[0] + rcu > min(params.ddb_table_rcu, 2 * peak[0]) * window
                or used[1] + wcu > min(params.ddb_table_wcu, 2 * peak[1]) * window
            ):
                return TABLE if name == TABLE else f"{INDEX} (all partitions)"
        slot = math.floor(now / self.shared_window)
        if slot != self.shared_since:
            self.shared_since, self.shared = slot, {}
        # Reads and writes of a partition are limited apart: DynamoDB throttles a partition's reads
        # and its writes independently (``AWS_DDB_THROTTLING`` in punctual/scale/params.py).
        for unit in request.units:
            books = self.shared if self.shared_partition(unit.partition) else self.partitions
            used = books.get(unit.partition, [0.0, 0.0])
            if used[0] + unit.rcu > params.ddb_partition_rcu or used[1] + unit.wcu > params.ddb_partition_wcu:
                return partition_kind(unit.partition)
        for unit in request.units:
            books = self.shared if self.shared_partition(unit.partition) else self.partitions
            used = books.setdefault(unit.partition, [0.0, 0.0])
            used[0] += unit.rcu
            used[1] += unit.wcu
        for name, (rcu, wcu) in asked.items():
            self.totals[name][0] += rcu
            self.totals[name][1] += wcu
            self.stats.rcu += rcu
            self.stats.wcu += wcu
        return None


class SimTables:
    """Implements ``punctual_functions.core.ports.Tables`` over a ``MemoryStore``, in virtual time."""

    def __init__(
        self,
        world: World,
        store: MemoryStore,
        capacity: Capacity,
        params: Parameters,
        rng: random.Random,
        charge: Callable[[float], None],
        function: Callable[[], str] = lambda: "-",
    ) -> None:
        self._function = function
        self._world = world
        self._store = store
        self._capacity = capacity
        self._params = params
        self._rng = rng
        self._charge = charge
        self.stats = capacity.stats

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name.startswith("_") or not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(name, method, args, kwargs)

        return call

    def _call(
        self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        before = snapshot(self._store, name, args, kwargs)
        try:
            result: Any = method(*args, **kwargs)
            error: BaseException | None = None
        except Exception as raised:  # a refused conditional write: charged all the same
            result, error = raised, raised
        for request in requests_for(name, args, kwargs, result, before, self._store):
            self._send(request)
        if error is not None:
            raise error
        return result

    def _send(self, request: TableRequest) -> None:
        """One request: its CPU, its round trip, its admission, retried as the SDK retries it."""
        params, stats = self._params, self.stats
        key = f"{self._function()} {request.operation}"
        stats.requests[key] = stats.requests.get(key, 0) + 1
        units = stats.units.setdefault(key, [0.0, 0.0])
        units[0] += sum(unit.rcu for unit in request.units)
        units[1] += sum(unit.wcu for unit in request.units)
        stats.kb[key] = stats.kb.get(key, 0.0) + request.bytes / 1024
        self._charge((params.cpu_per_request_ms + params.cpu_per_kb_ms * request.bytes / 1024) / 1000)
        attempts = params.ddb_max_attempts.get(self._function(), params.ddb_max_attempts["dispatcher"])
        for attempt in range(1, attempts + 1):
            self._world.sleep(quantile(params.ddb_latency_ms, self._rng.random()) / 1000)
            refused = self._capacity.admit(request, self._world.now)
            if refused is None:
                return
            throttled = (refused, request.operation)
            stats.throttled[throttled] = stats.throttled.get(throttled, 0) + 1
            if attempt < attempts:
                backoff = self._rng.random() * min(params.ddb_max_backoff_seconds, 2 ** (attempt - 1))
                self._world.sleep(backoff)
        stats.failed_after_retries += 1
        code = "ThrottlingException" if refused == "table" else "ProvisionedThroughputExceededException"
        raise ClientError({"Error": {"Code": code, "Message": f"throttled ({refused})"}}, request.operation)

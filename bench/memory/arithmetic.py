"""The memory benchmark's arithmetic, without a stack or a cgroup: Lambda's CPU share at a memory
size and the CFS quota that emulates it, the batches' due seconds and the order of the sizes, a
batch's lateness figures, a size's summary over its batches (is it on time, which phases fit) and
which size is the answer."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# Lambda: one full vCPU at this memory, CPU in proportion below it (Lambda Developer Guide,
# "Configuring Lambda function memory").
FULL_VCPU_MB = 1769
DEFAULT_SIZES = (128, 256, 512, 768, 1024, 1769)
BATCH = 10
ON_TIME_MS = 10.0
DEFAULT_PERIOD_US = 20_000
MIN_QUOTA_US = 1_000  # the kernel refuses a smaller CFS quota

# ------------------------------------------------------------------------------------ arithmetic


def vcpu(memory_mb: int) -> float:
    """Lambda's CPU share at ``memory_mb``, in vCPUs."""
    return memory_mb / FULL_VCPU_MB


def quota_us(memory_mb: int, period_us: int = DEFAULT_PERIOD_US) -> int:
    """The CFS quota (µs per ``period_us``) that gives a process Lambda's CPU share at ``memory_mb``."""
    if memory_mb <= 0 or period_us <= 0:
        raise ValueError(f"memory and period must be positive, got {memory_mb} MB, {period_us} µs")
    quota = round(period_us * memory_mb / FULL_VCPU_MB)
    if quota < MIN_QUOTA_US:
        longest = math.ceil(MIN_QUOTA_US * FULL_VCPU_MB / memory_mb)
        raise ValueError(
            f"{memory_mb} MB with a {period_us} µs period is a {quota} µs quota, below the kernel's"
            f" {MIN_QUOTA_US} µs: use a period of at least {longest} µs"
        )
    return quota


def due_seconds(earliest: float, count: int, spacing: int) -> list[float]:
    """``count`` whole epoch seconds from ``earliest`` on, ``spacing`` apart, each halfway between two
    of the dispatcher's ticks (it ticks on the multiples of ``spacing``): a tick's sweep (queries,
    sends, the runs' QUEUED writes) never meets a batch in the emulator."""
    second = math.ceil(earliest)
    second += (spacing // 2 - second) % spacing
    return [float(second + k * spacing) for k in range(count)]


def slot_sizes(sizes: Sequence[int], batches: int) -> list[int]:
    """The size of each batch in turn: every size once a round, ascending, then descending, ..."""
    ordered = sorted(sizes)
    out: list[int] = []
    for round_ in range(batches):
        out += ordered if round_ % 2 == 0 else ordered[::-1]
    return out


def _quantile(values: Sequence[float], q: float) -> float | None:
    from bench.common import quantile

    ordered = sorted(values)
    return round(quantile(ordered, q), 1) if ordered else None


def batch_lateness(lateness_ms: Sequence[float]) -> dict[str, Any]:
    """One batch's arrival lateness: the first and the last of its calls, p50, p99 and max."""
    ordered = sorted(lateness_ms)
    if not ordered:
        return {"count": 0}
    return {
        "count": len(ordered),
        "first": round(ordered[0], 1),
        "p50": _quantile(ordered, 0.5),
        "p99": _quantile(ordered, 0.99),
        "last": round(ordered[-1], 1),
        "max": round(ordered[-1], 1),
    }


def _over(values: Sequence[float | None]) -> dict[str, Any]:
    """A figure over a size's batches: p50, p99 (nearest rank) and max, and how many."""
    present = sorted(v for v in values if v is not None)
    if not present:
        return {"count": 0}
    return {
        "count": len(present),
        "p50": _quantile(present, 0.5),
        "p99": _quantile(present, 0.99),
        "max": round(present[-1], 1),
    }


def summarize_size(
    memory_mb: int, batches: Sequence[Mapping[str, Any]], period_us: int = DEFAULT_PERIOD_US
) -> dict[str, Any]:
    """One size over its batches (each figure p50, p99 by nearest rank, and max over the batches).

    - ``on_time``: the batch's last call *starts* (the worker's clock as its wait for the second
      ends and it builds the request) within ``ON_TIME_MS`` of its second, p99 over the batches,
      with every run delivered and none early; ``on_time_at_arrival``: the same of the last call's
      arrival at the receiver.
    - The phases: ``holding_fits`` when the batch's last record was ready to call before its second
      (its reads, the message's visibility and the start write done; p99); ``starting_fits`` when the
      ten calls started within ``ON_TIME_MS`` of the later of the second and that moment (p99);
      ``executing_fits`` when the last call *arrived* within ``ON_TIME_MS`` of it (p99)."""
    from bench.common import summary

    last_start = _over([b["start_ms"].get("last") for b in batches])
    last_arrival = _over([b["arrival_ms"].get("last") for b in batches])
    ready = _over([b.get("ready_ms") for b in batches])
    starting = _over([b.get("starting_ms") for b in batches])
    executing = _over([b.get("executing_ms") for b in batches])
    expected = BATCH * len(batches)
    delivered = sum(b["delivered"] for b in batches)
    early = sum(b["early"] for b in batches)
    complete = bool(batches) and delivered == expected and early == 0

    def within(figure: Mapping[str, Any], limit: float) -> bool:
        return complete and figure.get("p99") is not None and figure["p99"] <= limit

    def per_batch(*keys: str) -> list[float]:
        out = []
        for b in batches:
            value: Any = b
            for key in keys:
                value = value.get(key) if isinstance(value, Mapping) else None
            if isinstance(value, int | float):
                out.append(float(value))
        return out

    return {
        "memory_mb": memory_mb,
        "vcpu": round(vcpu(memory_mb), 3),
        "quota_us": quota_us(memory_mb, period_us),
        "period_us": period_us,
        "batches": len(batches),
        "runs_expected": expected,
        "delivered": delivered,
        "early": early,
        "duplicates": sum(b.get("duplicates", 0) for b in batches),
        "last_start_ms": last_start,
        "first_start_ms": _over([b["start_ms"].get("first") for b in batches]),
        "last_call_ms": last_arrival,
        "first_call_ms": _over([b["arrival_ms"].get("first") for b in batches]),
        "all_starts_ms": summary(x for b in batches for x in b.get("starts_ms", [])),
        "all_calls_ms": summary(x for b in batches for x in b.get("arrivals_ms", [])),
        "recorded_lateness_ms": summary(x for b in batches for x in b.get("recorded_ms", [])),
        "hold_ms": summary(x for b in batches for x in b.get("holds_ms", [])),
        "ready_ms": ready,
        "starting_ms": starting,
        "executing_ms": executing,
        "invocations_per_batch": _middle(per_batch("invocations")),
        "cpu_per_run_ms": _middle(per_batch("cpu_ms", "per_run")),
        "cpu_until_ready_per_run_ms": _middle(per_batch("cpu_ms", "until_ready_per_run")),
        "throttled_ms_per_batch": _middle(per_batch("cgroup", "throttled_ms")),
        "on_time": within(last_start, ON_TIME_MS),
        "on_time_at_arrival": within(last_arrival, ON_TIME_MS),
        "holding_fits": within(ready, 0.0),
        "starting_fits": within(starting, ON_TIME_MS),
        "executing_fits": within(executing, ON_TIME_MS),
    }


def _middle(values: Sequence[float]) -> dict[str, Any]:
    """The median of a per-batch figure, with the lowest and highest."""
    if not values:
        return {"batches": 0}
    return {
        "median": round(statistics.median(values), 2),
        "min": round(min(values), 2),
        "max": round(max(values), 2),
        "batches": len(values),
    }


def smallest_passing(by_size: Mapping[int, Mapping[str, Any]], key: str = "on_time") -> dict[str, Any]:
    """The smallest size from which every larger size measured passes ``key`` too (the answer: a
    size that passes only by luck, below one that fails, is not it), and the smallest that passes at
    all (the same unless the figures are noisy)."""
    sizes = sorted(by_size)
    passing = [s for s in sizes if by_size[s].get(key)]
    steady: int | None = None
    for size in reversed(sizes):
        if not by_size[size].get(key):
            break
        steady = size
    return {"smallest_mb": steady, "smallest_passing_anywhere_mb": passing[0] if passing else None}


def holding_estimate_mb(precall_cpu_ms_per_batch: float, head_start_ms: float) -> int | None:
    """The memory whose CPU share does a batch's pre-call work (``precall_cpu_ms_per_batch`` of one
    core) within the head start: arithmetic, beside the measurement."""
    if head_start_ms <= 0 or precall_cpu_ms_per_batch <= 0:
        return None
    return math.ceil(precall_cpu_ms_per_batch / head_start_ms * FULL_VCPU_MB)

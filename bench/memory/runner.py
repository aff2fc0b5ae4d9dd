"""The memory benchmark's run: the groups made and checked, the stack up and warmed, the batches
created and each one's size switched in just before its second, the figures read back and
analysed into the result (its JSON keys); ``run_or_skip`` where the quota cannot be set."""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.memory.analysis import analyse_batch, outcome_lines
from bench.memory.arithmetic import (
    BATCH,
    DEFAULT_PERIOD_US,
    DEFAULT_SIZES,
    ON_TIME_MS,
    due_seconds,
    holding_estimate_mb,
    quota_us,
    slot_sizes,
    smallest_passing,
    summarize_size,
)
from bench.memory.cgroups import (
    CPU_ROOT,
    CPUACCT_ROOT,
    GROUP_PREFIX,
    Group,
    cgroups_unavailable,
    check_quota,
    remove_stale_groups,
)
from bench.memory.stack import DEFAULT_SPACING, LOOKAHEAD_SECONDS, SHARDS, WORKER_POLLERS, memory_stack

# The worker moves into the next batch's group this long before its second (its messages arrive
# head_start_ms before it); it waits for the previous batch to end until this close to it.
SWITCH_LEAD_SECONDS = 2.0
SWITCH_DEADLINE_SECONDS = 0.8
WARM_UP = 0  # the size of the warm-up batch: no quota
EMULATION_NOTE = (
    "The cgroup quota emulates Lambda's CPU share (memory / 1769 MB of a vCPU) on this machine's x86"
    " cores, not on the Graviton (arm64) cores the deployment runs on; the emulator serving DynamoDB"
    " and SQS shares the machine's cores. The sizes are an estimate, to be checked on AWS."
)


# ------------------------------------------------------------------------------------ the run


@dataclass
class Slot:
    index: int
    size: int
    due: float
    paths: list[str] = field(default_factory=list)
    job_ids: list[str] = field(default_factory=list)
    created_at: float = 0.0
    worker_pid: int = 0
    previous_done: bool = True
    in_group: bool = False
    moved_at: float = 0.0
    usage_start: int = 0
    usage_end: int = 0
    stat_start: dict[str, int] = field(default_factory=dict)
    stat_end: dict[str, int] = field(default_factory=dict)
    window: tuple[float, float] = (0.0, 0.0)


def _sleep_until(moment: float) -> None:
    while (left := moment - time.time()) > 0:
        time.sleep(min(left, 0.5))


def _ended(slot: Slot, invocations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every run of the batch went through an invocation that has ended."""
    seen = {job for i in invocations for job in i.get("jobs", [])}
    return set(slot.job_ids) <= seen


def _create(api: Any, receiver_url: str, slots: list[Slot]) -> None:
    bodies: list[tuple[Slot, str, dict[str, Any]]] = []
    from punctual_functions.core.model import iso

    for slot in slots:
        for n in range(BATCH):
            path = f"/memory/{slot.index}/{n}"
            slot.paths.append(path)
            body = {
                "schedule": {"at": iso(datetime.fromtimestamp(slot.due, UTC))},
                "target": {"type": "http", "url": receiver_url + path},
                "name": f"memory-{slot.size}-{slot.index}-{n}",
            }
            bodies.append((slot, path, body))
    for start in range(0, len(bodies), 100):
        chunk = bodies[start : start + 100]
        status, answer = api.call("POST", "/v1/jobs/batch", {"jobs": [b for _, _, b in chunk]}, timeout=120)
        items = answer.get("items", []) if isinstance(answer, dict) else []
        refused = [item for item in items if item.get("status") != 201]
        if status != 200 or refused or len(items) != len(chunk):
            raise RuntimeError(f"batch create answered {status}: {refused[:1] or answer}")
        now = time.time()
        for (slot, _, _), item in zip(chunk, items, strict=True):
            slot.job_ids.append(item["job"]["job_id"])
            slot.created_at = max(slot.created_at, now)


def _warm_up(api: Any, receiver: Any) -> None:
    """Ten jobs due in a few seconds (the api sends them), outside any quota: the worker's first
    invocation builds its clients and connections, which no measured batch should pay for."""
    from punctual_functions.core.model import iso

    due = float(math.ceil(time.time()) + 4)
    paths = [f"/warm/{n}" for n in range(BATCH)]
    status, answer = api.call(
        "POST",
        "/v1/jobs/batch",
        {
            "jobs": [
                {
                    "schedule": {"at": iso(datetime.fromtimestamp(due, UTC))},
                    "target": {"type": "http", "url": receiver.url + p},
                }
                for p in paths
            ]
        },
    )
    if status != 200:
        raise RuntimeError(f"warm-up create answered {status}: {answer}")
    deadline = time.time() + 30
    while time.time() < deadline and not set(paths) <= set(receiver.by_path()):
        time.sleep(0.2)
    time.sleep(1.5)


def run(
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    batches: int = 8,
    head_start_ms: int = 250,
    period_us: int = DEFAULT_PERIOD_US,
    spacing: int = DEFAULT_SPACING,
) -> dict[str, Any]:
    """Every size measured over ``batches`` batches of ten on one stack; the figures and the answer."""
    from bench.common import log, machine
    from punctual.testing.receiver import Receiver

    began = time.monotonic()
    reason = cgroups_unavailable()
    if reason is not None:
        raise RuntimeError(f"memory bench: {reason}")
    sizes = sorted(set(sizes))
    quotas = {size: quota_us(size, period_us) for size in sizes}  # refuses a quota too small
    remove_stale_groups()
    tag = f"{GROUP_PREFIX}{os.getpid()}-{int(time.time())}"
    groups: dict[int, Group] = {}
    acct: Group | None = None
    workdir = Path(tempfile.mkdtemp(prefix="punctual-bench-memory-"))
    # The first batch warms the dispatcher's path up (the first dispatches and the worker's first
    # reads of runs the dispatcher wrote cost more), with no quota (``WARM_UP``); it is not counted.
    slots = [Slot(k, size, 0.0) for k, size in enumerate([WARM_UP, *slot_sizes(sizes, batches)])]
    restarts: list[dict[str, Any]] = []
    try:
        for size in sizes:
            groups[size] = Group(CPU_ROOT, f"{tag}-{size}")
            groups[size].set_quota(period_us, quotas[size])
        groups[WARM_UP] = Group(CPU_ROOT, f"{tag}-unlimited")
        groups[WARM_UP].set_quota(period_us, -1)
        if (CPUACCT_ROOT / "cpuacct.usage").exists():
            acct = Group(CPUACCT_ROOT, tag)
        # The quota does what it says: a busy loop in each group gets about its share of a core.
        check = {}
        for size in sizes:
            share = check_quota(groups[size])
            check[str(size)] = {"expected": round(quotas[size] / period_us, 3), "measured": share}
            if share > 1.3 * quotas[size] / period_us + 0.02:
                raise RuntimeError(f"the cgroup quota does not hold here: {check[str(size)]}")
        log(f"memory: cgroup check (share of a core, expected / measured): {check}")
        with memory_stack(workdir, head_start_ms, spacing) as stack, Receiver() as receiver:
            pid = stack.worker_pid()
            if acct is not None:
                acct.add(pid)
            log(f"memory: stack up in {workdir} (worker pid {pid}); warm-up batch")
            _warm_up(stack.api, receiver)
            jobs = len(slots) * BATCH
            earliest = time.time() + LOOKAHEAD_SECONDS + 4 + 0.03 * jobs
            for slot, due in zip(slots, due_seconds(earliest, len(slots), spacing), strict=True):
                slot.due = due
            log(
                f"memory: creating {jobs} one-off jobs, {len(slots)} batches of ten"
                f" (a warm-up, then {batches} per size) due {spacing}s apart from"
                f" {datetime.fromtimestamp(slots[0].due, UTC):%H:%M:%S}"
                f" to {datetime.fromtimestamp(slots[-1].due, UTC):%H:%M:%S} UTC"
            )
            _create(stack.api, receiver.url, slots)
            sent_by_api = sum(BATCH for s in slots if s.due - s.created_at <= LOOKAHEAD_SECONDS)
            if sent_by_api:
                log(f"memory: {sent_by_api} jobs were created within the look-ahead (the api sent them)")
            for k, slot in enumerate(slots):
                _sleep_until(slot.due - SWITCH_LEAD_SECONDS)
                if k > 0:
                    previous = slots[k - 1]
                    while not _ended(previous, stack.invocations()) and time.time() < (
                        slot.due - SWITCH_DEADLINE_SECONDS
                    ):
                        time.sleep(0.05)
                    slot.previous_done = _ended(previous, stack.invocations())
                    previous.usage_end = acct.usage_ns() if acct is not None else 0
                    previous.stat_end = groups[previous.size].throttling()
                    previous.window = (previous.window[0], time.time())
                current = stack.worker_pid()
                if current != pid:
                    restarts.append({"before_slot": k, "old_pid": pid, "new_pid": current})
                    pid = current
                    if acct is not None:
                        acct.add(pid)
                groups[slot.size].add(pid)
                slot.worker_pid = pid
                slot.in_group = groups[slot.size].holds(pid)
                slot.moved_at = time.time()
                slot.usage_start = acct.usage_ns() if acct is not None else 0
                slot.stat_start = groups[slot.size].throttling()
                slot.window = (slot.moved_at, 0.0)
                if k % len(sizes) == 1:
                    log(f"memory: batch {k} of {len(slots) - 1} ({slot.size} MB)")
            last = slots[-1]
            deadline = last.due + 30
            while time.time() < deadline and not _ended(last, stack.invocations()):
                time.sleep(0.1)
            time.sleep(1.0)
            last.usage_end = acct.usage_ns() if acct is not None else 0
            last.stat_end = groups[last.size].throttling()
            last.window = (last.window[0], time.time())
            # Back to no quota: the clean-up and the reads below are not measured.
            with contextlib.suppress(OSError):
                (CPU_ROOT / "cgroup.procs").write_text(f"{pid}\n")
            paths = {p for s in slots for p in s.paths}
            deadline = time.time() + 30
            while time.time() < deadline and not paths <= set(receiver.by_path()):
                time.sleep(0.5)
            time.sleep(2)  # duplicates, if any, arrive now
            arrivals = receiver.by_path()
            log("memory: reading the recorded runs")
            with ThreadPoolExecutor(max_workers=4) as pool:
                ids = [j for s in slots for j in s.job_ids]
                runs = dict(zip(ids, pool.map(stack.api.runs, ids), strict=True))
            invocations = stack.invocations()
            outcomes = outcome_lines(stack.log_path.read_text(errors="replace").splitlines())
            restarts_logged = stack.log_path.read_text(errors="replace").count("restarting (restart #")
    finally:
        for group in groups.values():
            group.remove()
        if acct is not None:
            acct.remove()
    warm_up, *batch_results = [analyse_batch(slot, arrivals, runs, outcomes, invocations) for slot in slots]
    by_size = {
        size: summarize_size(size, [b for b in batch_results if b["size_mb"] == size], period_us)
        for size in sizes
    }
    return _result(
        by_size=by_size,
        batch_results=batch_results,
        warm_up=warm_up,
        sizes=sizes,
        batches=batches,
        head_start_ms=head_start_ms,
        period_us=period_us,
        spacing=spacing,
        check=check,
        sent_by_api=sent_by_api,
        restarts=restarts,
        restarts_logged=restarts_logged,
        workdir=workdir,
        machine=machine(),
        elapsed=time.monotonic() - began,
    )


def run_or_skip(**options: Any) -> dict[str, Any]:
    """``run``, or where the quota cannot be set (no root, no cgroup v1 cpu controller) a result that
    says why (``make bench`` goes on with the others)."""
    from bench.common import log, machine

    reason = cgroups_unavailable()
    if reason is None:
        return run(**options)
    log(f"memory: skipped: {reason}")
    return {"name": "memory", "skipped": reason, "note": EMULATION_NOTE, "machine": machine()}


def _result(
    *,
    by_size: dict[int, dict[str, Any]],
    batch_results: list[dict[str, Any]],
    warm_up: dict[str, Any],
    sizes: Sequence[int],
    batches: int,
    head_start_ms: int,
    period_us: int,
    spacing: int,
    check: dict[str, Any],
    sent_by_api: int,
    restarts: list[dict[str, Any]],
    restarts_logged: int,
    workdir: Path,
    machine: dict[str, Any],
    elapsed: float,
) -> dict[str, Any]:
    on_time = smallest_passing(by_size, "on_time")
    at_arrival = smallest_passing(by_size, "on_time_at_arrival")
    largest = by_size[max(sizes)]
    precall = largest["cpu_until_ready_per_run_ms"].get("median")
    answer = on_time["smallest_mb"]
    arrival = at_arrival["smallest_mb"]
    holds = sorted(x for b in batch_results for x in b.get("holds_ms", []))
    return {
        "name": "memory",
        "what": "the smallest worker memory at which a batch of ten runs due at the same second starts"
        f" on time: the batch's last call starts within {ON_TIME_MS:g} ms of its second (p99 over the"
        " batches), the worker's CPU limited to Lambda's share at each size by a cgroup quota",
        "note": EMULATION_NOTE,
        "repetitions": batches,
        "answer": {
            "smallest_on_time_mb": answer,
            "last_start_p99_ms": by_size[answer]["last_start_ms"].get("p99") if answer else None,
            "last_call_arrival_p99_ms": by_size[answer]["last_call_ms"].get("p99") if answer else None,
            "smallest_on_time_anywhere_mb": on_time["smallest_passing_anywhere_mb"],
            "smallest_on_time_at_arrival_mb": arrival,
            "holding_fits_from_mb": smallest_passing(by_size, "holding_fits")["smallest_mb"],
            "starting_fits_from_mb": smallest_passing(by_size, "starting_fits")["smallest_mb"],
            "executing_fits_from_mb": smallest_passing(by_size, "executing_fits")["smallest_mb"],
            "holding_estimate_mb": holding_estimate_mb(precall * BATCH, head_start_ms) if precall else None,
            "holding_estimate_from": f"the CPU until the last record is ready at {max(sizes)} MB"
            f" ({precall} ms a run, x{BATCH}) done within the {head_start_ms} ms head start",
            "hold_ms_p50": round(statistics.median(holds), 1) if holds else None,
        },
        "sizes": {str(size): figures for size, figures in by_size.items()},
        "batches": batch_results,
        "warm_up_batch": warm_up,
        "config": {
            "sizes_mb": list(sizes),
            "batches_per_size": batches,
            "runs_per_batch": BATCH,
            "spacing_seconds": spacing,
            "head_start_ms": head_start_ms,
            "cfs_period_us": period_us,
            "quota_us": {str(size): quota_us(size, period_us) for size in sizes},
            "tick_seconds": spacing,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "shards": SHARDS,
            "worker_pollers": WORKER_POLLERS,
            "order": "a warm-up batch with no quota (not counted: warm_up_batch), then the sizes take"
            " turns batch by batch, ascending then descending",
            "sent_by": "the dispatcher's tick (every job created more than the look-ahead before its"
            " second), paced to arrive head_start_ms early, as in production",
            "jobs_sent_by_the_api": sent_by_api,
            "on_time": f"the batch's last call starts within {ON_TIME_MS:g} ms of its second, p99"
            " (nearest rank) over the size's batches, every run delivered, none early; a call starts"
            " when the worker's wait for the second returns (the engine's called_at)",
        },
        "cgroup_check_share_of_a_core": check,
        "worker_restarts": restarts,
        "restarts_logged": restarts_logged,
        "workdir": str(workdir),
        "machine": machine,
        "elapsed_seconds": round(elapsed, 1),
    }

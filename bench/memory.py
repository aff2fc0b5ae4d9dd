"""The worker's memory by measurement: the smallest Lambda size at which a batch of ten runs due at
the same second still starts on time.

Lambda gives a function CPU in proportion to its memory, one full vCPU at 1,769 MB. Here the worker
role of the local stack runs in a cgroup v1 ``cpu`` group whose CFS quota is that share of one of
this machine's cores (``quota = period x memory / 1769``, ``quota_us``), one size at a time; the
emulator, the api, the dispatcher and the webhook receiver (in this process) run outside it. **An
estimate**: the quota emulates Lambda's CPU share on this machine's x86 cores, not on the Graviton
(arm64) cores the deployment runs on, and the emulator serves DynamoDB and SQS from the same two
cores (one request at a time, where DynamoDB serves a batch's requests side by side).

How a run goes (one stack for all sizes):

- ``punctual local``'s own supervisor (``LocalStack``) runs the stack (emulator, api, dispatcher,
  one worker process with the stack's four SQS pollers), with the shortest look-ahead (60 s), one
  shard and ``--head-start-ms`` as ``head_start_ms``. The worker role is ``python -m bench.memory
  _worker``: the real role, which also records each handler invocation (its records, span and
  process CPU clock) and, for each record, when it was ready to call (its wait for the second
  began: the reads, the message's visibility and the conditional start write are done) and when it
  started the call (that wait ended: the engine's ``called_at``).
- Every job is a one-off calling the receiver, ten due at the same millisecond on a whole second (a
  batch), the batches ``--spacing`` seconds apart, so that the worker holds one batch at a time.
  All are created (100 a request) more than the look-ahead before their second: **the dispatcher's
  tick sends them**, paced so that each message becomes visible ``head_start_ms`` before its
  second, which is how production's messages arrive. (Jobs due within the look-ahead would be sent
  by the api at once with whole-second delays, arriving 0.25-1.25 s early: an easier hold.) The
  dispatcher ticks every ``--spacing`` seconds, not every minute, with the batches due halfway
  between two ticks: each tick sends one batch in one SendMessageBatch, and no sweep meets a batch
  in the emulator (``DEFAULT_SPACING`` says why not the one-minute tick). A batch that reaches the
  worker as two invocations (two polls woken together split it) runs them side by side in the one
  process and cgroup: its ten records share one size's CPU as in one invocation of ten.
- The sizes take turns batch by batch (round 1 in ascending order, round 2 descending, ...), so that
  a busy moment of the shared machine falls on all of them. Two seconds before each batch's second,
  once the previous batch has ended, the worker process (every thread: ``cgroup.procs``) moves into
  the group of the batch's size. A warm-up batch, outside any quota, comes first; before the stack
  starts, a busy loop in each group checks that it gets its share of a core.

Measured per batch (``phases``, ``analyse_batch``): when each call started after the second, and
when it arrived at the receiver (arrival minus ``Punctual-Scheduled-For``, as ``bench.precision``
measures it): the first and last of the ten, p50, p99, max; the runs' recorded ``lateness_ms``; the
hold (``hold_ms`` of the worker's "run succeeded" lines: the second minus the message's arrival);
the phases: *holding*, when the last record was ready to call (negative: before its second),
*starting*, how long after the later of the second and that moment the last call started (ten
threads taking turns for the CPU), *executing*, the same to the last arrival; the worker's CPU per
run (its process clock over the batch's invocation, as the cost bench counts it, and the part
until the last record was ready) and the cgroup's throttled time.

A size is **on time** when the batch's last call starts within 10 ms of its second, p99 over its
batches (nearest rank: with fewer than 100 batches, the worst), with every run delivered and none
early; the answer is the smallest size from which every larger size measured is on time too (and
the smallest on-time size, if that differs). The same is reported at arrival, which adds the ten
requests' trip to the receiver.

Needs root and the cgroup v1 ``cpu`` (and ``cpuacct``) controllers; the groups are removed at the
end. Run it on a quiet machine: anything else on the cores shows up as lateness.

    python -m bench.memory [--sizes 128,256,512,768,1024,1769] [--batches 8] [--head-start-ms 250]
                           [--spacing 8] [--period-us 20000]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Lambda: one full vCPU at this memory, CPU in proportion below it (Lambda Developer Guide,
# "Configuring Lambda function memory").
FULL_VCPU_MB = 1769
DEFAULT_SIZES = (128, 256, 512, 768, 1024, 1769)
BATCH = 10
ON_TIME_MS = 10.0
DEFAULT_PERIOD_US = 20_000
MIN_QUOTA_US = 1_000  # the kernel refuses a smaller CFS quota
# The shortest look-ahead the settings allow, so that the jobs' wait beyond it is short.
LOOKAHEAD_SECONDS = 60
# The dispatcher ticks every ``--spacing`` seconds, the batches due halfway between two ticks, so that
# each tick sweeps one batch and sends its ten messages in one SendMessageBatch, paced to arrive
# head_start_ms before the second. With production's one-minute tick, one sweep sent a minute's
# batches as one paced group in chunks of ten, and every chunk sent more than the sweep's 20 ms lead
# after its moment (the third on) arrived a second early: holds of 1.24 s instead of 0.25 s.
DEFAULT_SPACING = 8
# One shard: a batch's ten triggers are swept and sent together (with four, each shard's sweep sends
# its share, milliseconds apart).
SHARDS = 1
# The local stack's four pollers. A batch that comes in two sends (or that two polls woken together
# split) is two invocations, side by side in the one process and so in the one cgroup: the ten records
# share one size's CPU as in a single invocation (records_per_invocation says how each batch came).
# With one poller, the second part waited for the first invocation to end (the second plus the call):
# messages visible 250 ms early were taken 30-60 ms after their second, whatever the CPU.
WORKER_POLLERS = 4
# The worker moves into the next batch's group this long before its second (its messages arrive
# head_start_ms before it); it waits for the previous batch to end until this close to it.
SWITCH_LEAD_SECONDS = 2.0
SWITCH_DEADLINE_SECONDS = 0.8
CPU_ROOT = Path("/sys/fs/cgroup/cpu")
CPUACCT_ROOT = Path("/sys/fs/cgroup/cpuacct")
GROUP_PREFIX = "punctual-bench-memory-"
WARM_UP = 0  # the size of the warm-up batch: no quota
EMULATION_NOTE = (
    "The cgroup quota emulates Lambda's CPU share (memory / 1769 MB of a vCPU) on this machine's x86"
    " cores, not on the Graviton (arm64) cores the deployment runs on; the emulator serving DynamoDB"
    " and SQS shares the machine's cores. The sizes are an estimate, to be checked on AWS."
)


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
    claims, the runs' QUEUED writes) never meets a batch in the emulator."""
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


# ------------------------------------------------------------------------------------- cgroups


def cgroups_unavailable() -> str | None:
    """Why the CPU quota cannot be set here, or None."""
    if not (CPU_ROOT / "cpu.cfs_quota_us").exists():
        return f"no cgroup v1 cpu controller at {CPU_ROOT}"
    if not os.access(CPU_ROOT, os.W_OK):
        return f"{CPU_ROOT} is not writable (run as root)"
    return None


def _owner_alive(name: str) -> bool:
    """Whether the bench that made a group (its pid follows the prefix) still runs."""
    try:
        pid = int(name[len(GROUP_PREFIX) :].split("-", 1)[0])
    except ValueError:
        return True
    return Path(f"/proc/{pid}").exists()


def remove_stale_groups() -> None:
    """Empty groups left by a bench that was killed (SIGKILL skips the clean-up)."""
    for root in (CPU_ROOT, CPUACCT_ROOT):
        if not root.exists():
            continue
        for path in root.glob(GROUP_PREFIX + "*"):
            if not _owner_alive(path.name):
                with contextlib.suppress(OSError):
                    path.rmdir()


class Group:
    """A cgroup v1 group of one controller (``cpu`` with a CFS quota, or ``cpuacct``)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.path = root / name
        self.path.mkdir()

    def set_quota(self, period_us: int, quota: int) -> None:
        (self.path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
        (self.path / "cpu.cfs_quota_us").write_text(f"{quota}\n")

    def add(self, pid: int) -> None:
        """Move the process, every thread of it (``cgroup.procs``), and its children."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")
        for child in _children(pid):
            with contextlib.suppress(OSError):
                (self.path / "cgroup.procs").write_text(f"{child}\n")

    def holds(self, pid: int) -> bool:
        """Whether every thread of ``pid`` is in this group."""
        controller = self.root.name
        relative = "/" + self.path.name
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return False
        for tid in tids:
            try:
                lines = Path(f"/proc/{pid}/task/{tid}/cgroup").read_text().splitlines()
            except OSError:
                continue  # the thread ended
            for line in lines:
                _, controllers, path = line.split(":", 2)
                if controller in controllers.split(",") and path != relative:
                    return False
        return True

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def throttling(self) -> dict[str, int]:
        """``cpu.stat``: periods, throttled periods, throttled time (ns)."""
        stat: dict[str, int] = {}
        for line in self.read("cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                stat[key] = int(value)
        return stat

    def usage_ns(self) -> int:
        return int(self.read("cpuacct.usage"))

    def remove(self) -> None:
        """Move what is left to the root group, then remove the group."""
        with contextlib.suppress(OSError):
            for tid in self.read("tasks").split():
                with contextlib.suppress(OSError):
                    (self.root / "tasks").write_text(f"{tid}\n")
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    return out


_BUSY = (
    "import os, sys, time\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "t, c = time.monotonic(), time.process_time()\n"
    "while time.monotonic() - t < float(sys.argv[2]): pass\n"
    "print((time.process_time() - c) / (time.monotonic() - t))\n"
)


def check_quota(group: Group, seconds: float = 0.6) -> float:
    """The share of a core a busy loop gets in ``group`` (it should be about quota / period)."""
    answer = subprocess.run(
        [sys.executable, "-c", _BUSY, str(group.path / "cgroup.procs"), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(answer.stdout.strip()), 3)


# --------------------------------------------------------------------- the worker, instrumented


def worker_role(events_path: str, role_args: list[str]) -> None:
    """``punctual.local.role worker`` with a record of each handler invocation (one JSON line: its
    span, its records' job ids, the process CPU clock at both ends) and of each ``sleep_until`` of
    the worker's arrival (the moment waited for, when the wait began and ended, the process CPU clock
    when it began): the last wait of a record, for its second, begins once the record is ready to
    call. The waits are kept in memory and written when an invocation ends, so that nothing but an
    append stands between a wait's end and the call."""
    import functions.worker.handler as worker_handler
    from functions.worker.arrival import Arrival

    out = open(events_path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process
    lock = threading.Lock()
    waits: collections.deque[list[float]] = collections.deque()
    sleep_until = Arrival.sleep_until

    def timed_sleep(self: Arrival, moment: datetime) -> None:
        entered, cpu = time.time(), time.process_time()
        sleep_until(self, moment)
        waits.append([moment.timestamp(), entered, time.time(), cpu])

    setattr(Arrival, "sleep_until", timed_sleep)  # noqa: B010 - a method, replaced for the record
    handler = worker_handler.handler

    def timed(event: dict[str, Any], context: Any) -> Any:
        started, cpu = time.time(), time.process_time()
        try:
            return handler(event, context)
        finally:
            ended, cpu_end = time.time(), time.process_time()
            done = []
            while True:
                try:
                    done.append(waits.popleft())
                except IndexError:
                    break
            records = event.get("Records") or []
            line = json.dumps(
                {
                    "t": started,
                    "t_end": ended,
                    "cpu": [cpu, cpu_end],
                    "jobs": [_job_of(r.get("body", "")) for r in records],
                    "waits": done,
                },
                separators=(",", ":"),
            )
            with lock:
                out.write(line + "\n")

    worker_handler.handler = timed
    from punctual.local.role import main as role_main

    role_main(role_args)


def _job_of(body: str) -> str | None:
    try:
        job = json.loads(body).get("job_id")
    except (ValueError, AttributeError):
        return None
    return str(job) if job is not None else None


# ------------------------------------------------------------------------------------ the stack


def serve_stack(config_path: str) -> None:
    """The local stack as ``punctual local`` runs it (``LocalStack``: emulator, api, dispatcher, a
    worker, restarted if they die), its worker being ``worker_role``; stopped with SIGINT/SIGTERM."""
    from punctual.local.supervisor import LocalStack, Role

    config = json.loads(Path(config_path).read_text())
    events = str(config["events"])

    class Stack(LocalStack):
        def _spawn(self, role: Role, env: dict[str, str]) -> None:
            if role.name.startswith("worker") and role.argv[1:3] == ["-m", "punctual.local.role"]:
                role.argv = [role.argv[0], "-m", "bench.memory", "_worker", events, *role.argv[3:]]
            super()._spawn(role, env)

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    stack = Stack(
        port=int(config["port"]),
        workers=1,
        tick_seconds=float(config["tick_seconds"]),
        worker_concurrency=int(config["pollers"]),
        settings_overrides=dict(config["settings"]),
        state_dir=str(config["state_dir"]),
    )
    try:
        stack.start()
        print("punctual: the stack is up", flush=True)
        stack.supervise()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


@dataclass
class MemoryStack:
    api: Any  # bench.common.Api
    workdir: Path
    process: subprocess.Popen[bytes]

    @property
    def events_path(self) -> Path:
        return self.workdir / "worker-events.jsonl"

    @property
    def log_path(self) -> Path:
        return self.workdir / "stack.log"

    def worker_pid(self) -> int:
        roles = json.loads((self.workdir / ".punctual" / "roles.json").read_text())
        return int(roles["worker-1"])

    def invocations(self) -> list[dict[str, Any]]:
        if not self.events_path.exists():
            return []
        out = []
        for line in self.events_path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


@contextmanager
def memory_stack(workdir: Path, head_start_ms: int, spacing: int) -> Iterator[MemoryStack]:
    from bench.common import ROOT, Api
    from punctual.local.supervisor import free_port

    port = free_port()
    config = {
        "port": port,
        "tick_seconds": spacing,
        "pollers": WORKER_POLLERS,
        "settings": {
            "shard_count": SHARDS,
            "lookahead_seconds": LOOKAHEAD_SECONDS,
            "head_start_ms": head_start_ms,
        },
        "state_dir": str(workdir / ".punctual"),
        "events": str(workdir / "worker-events.jsonl"),
    }
    (workdir / "stack.json").write_text(json.dumps(config))
    with (workdir / "stack.log").open("ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.memory", "_stack", str(workdir / "stack.json")],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            # JSON log lines, as on AWS: their formatting is part of the worker's CPU.
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PUNCTUAL_LOG_FORMAT": "json"},
        )
        stack = MemoryStack(Api(f"http://127.0.0.1:{port}"), workdir, process)
        try:
            stack.api.wait_healthy(timeout=90, process=process)
            deadline = time.monotonic() + 30
            while True:
                try:
                    stack.worker_pid()
                    break
                except (OSError, ValueError, KeyError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            yield stack
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


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
    from functions.core.model import iso

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
    from functions.core.model import iso

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
    from tests.support.receiver import Receiver

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
    # The first batch warms the dispatcher's path up (the first claims, sends and the worker's first
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


# What the worker logs when a delivery finds its run started or ended by another one.
REDELIVERY_LINES = (
    "attempt started by another delivery",
    "duplicate delivery ignored",
    "nothing to do for message",
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


def outcome_lines(lines: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The worker's outcome lines (JSON) by job id: ``hold_ms`` and ``lateness_ms`` of "run
    succeeded" / "run failed" / "retry scheduled", and how often a delivery of the job's run found
    it started or done elsewhere (re-deliveries)."""
    out: dict[str, dict[str, Any]] = {}
    for raw in lines:
        if not raw.startswith("{"):
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        job = line.get("job_id")
        if not isinstance(job, str):
            continue
        entry = out.setdefault(job, {"redeliveries": 0})
        message = line.get("message")
        if message in ("run succeeded", "run failed", "retry scheduled"):
            entry["outcome"] = message
            entry["hold_ms"] = line.get("hold_ms")
            entry["lateness_ms"] = line.get("lateness_ms")
        elif message in REDELIVERY_LINES:
            entry["redeliveries"] += 1
    return out


def _ts(text: str) -> float:
    from functions.core.model import parse_iso

    return parse_iso(text).timestamp()


def phases(
    due: float, waits: Sequence[tuple[float, float]], arrived: Sequence[float], runs: int = BATCH
) -> dict[str, Any]:
    """A batch's time line around its second ``due`` (epoch seconds), from its records' waits for
    the second (``(began, ended)``: ready to call, call started) and its calls' arrivals (ms):

    - ``starts_ms``: each call's start after the second;
    - ``ready_ms``: when the last record was ready, from the second (negative: that much to spare);
    - ``starting_ms``: the last start after the later of the second and that moment (the ten
      threads taking their turns for the CPU once they may call);
    - ``executing_ms``: the last arrival after the same moment (starting, then sending).

    The phases need every run's wait (``runs`` of them); the starts are those there are."""
    starts = sorted(round((ended - due) * 1000, 1) for _, ended in waits)
    out: dict[str, Any] = {"starts_ms": starts, "ready_ms": None, "starting_ms": None, "executing_ms": None}
    if len(waits) < runs:
        return out
    ready = max(began for began, _ in waits)
    free = max(due, ready)
    out["ready_ms"] = round((ready - due) * 1000, 1)
    out["starting_ms"] = round((max(ended for _, ended in waits) - free) * 1000, 1)
    if arrived:
        out["executing_ms"] = round((max(arrived) - free) * 1000, 1)
    return out


def analyse_batch(
    slot: Slot,
    arrivals: Mapping[str, Sequence[Any]],
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    outcomes: Mapping[str, Mapping[str, Any]],
    invocations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One batch's figures (see the module's docstring)."""
    lateness: list[float] = []
    arrived: list[float] = []
    early = duplicates = 0
    for path in slot.paths:
        got = arrivals.get(path, [])
        if not got:
            continue
        duplicates += len(got) - 1
        first = min(got, key=lambda d: d.received_at)
        late = (first.received_at - _ts(first.scheduled_for)) * 1000
        early += late < 0
        lateness.append(late)
        arrived.append(first.received_at)
    recorded = [
        float(r["lateness_ms"])
        for job in slot.job_ids
        for r in runs.get(job, [])[:1]
        if r.get("lateness_ms") is not None
    ]
    statuses = collections.Counter(r["status"] for job in slot.job_ids for r in runs.get(job, []))
    holds = [
        float(outcomes[job]["hold_ms"])
        for job in slot.job_ids
        if job in outcomes and outcomes[job].get("hold_ms") is not None
    ]
    redeliveries = sum(int(outcomes.get(job, {}).get("redeliveries", 0)) for job in slot.job_ids)
    mine = set(slot.job_ids)
    batch_invocations = [i for i in invocations if mine & set(i.get("jobs", []))]
    # Each record's wait for its second (its moment is the batch's second; the batches' seconds differ).
    waits = [w for i in invocations for w in i.get("waits", []) if abs(w[0] - slot.due) < 0.0005]
    split = phases(slot.due, [(w[1], w[2]) for w in waits], arrived)
    cpu: dict[str, Any] = {}
    if batch_invocations:
        cpu_start = min(i["cpu"][0] for i in batch_invocations)
        cpu_end = max(i["cpu"][1] for i in batch_invocations)
        cpu["batch"] = round((cpu_end - cpu_start) * 1000, 1)
        cpu["per_run"] = round(cpu["batch"] / BATCH, 2)
        if len(waits) >= BATCH:
            cpu["until_ready_per_run"] = round((max(w[3] for w in waits) - cpu_start) * 1000 / BATCH, 2)
    throttled_ns = slot.stat_end.get("throttled_time", 0) - slot.stat_start.get("throttled_time", 0)
    result: dict[str, Any] = {
        "slot": slot.index,
        "size_mb": slot.size,
        "due": datetime.fromtimestamp(slot.due, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "delivered": len(lateness),
        "early": early,
        "duplicates": duplicates,
        "redeliveries_logged": redeliveries,
        "statuses": dict(statuses),
        "start_ms": batch_lateness(split["starts_ms"]),
        "arrival_ms": batch_lateness(lateness),
        "recorded_lateness_ms": batch_lateness(recorded),
        "hold_ms": {
            "min": min(holds) if holds else None,
            "p50": _quantile(holds, 0.5),
            "max": max(holds) if holds else None,
        },
        "ready_ms": split["ready_ms"],
        "starting_ms": split["starting_ms"],
        "executing_ms": split["executing_ms"],
        "invocations": len(batch_invocations),
        "records_per_invocation": [len(i.get("jobs", [])) for i in batch_invocations],
        "cpu_ms": cpu,
        "cgroup": {
            "in_group": slot.in_group,
            "window_s": round(slot.window[1] - slot.window[0], 2) if slot.window[1] else None,
            "cpu_ms": round((slot.usage_end - slot.usage_start) / 1e6, 1) if slot.usage_end else None,
            "throttled_periods": slot.stat_end.get("nr_throttled", 0)
            - slot.stat_start.get("nr_throttled", 0),
            "throttled_ms": round(throttled_ns / 1e6, 1),
        },
        "previous_batch_ended_before_switch": slot.previous_done,
        "sent_by_dispatcher": slot.due - slot.created_at > LOOKAHEAD_SECONDS,
        "starts_ms": split["starts_ms"],
        "arrivals_ms": [round(x, 1) for x in sorted(lateness)],
        "recorded_ms": recorded,
        "holds_ms": holds,
    }
    return result


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


# ------------------------------------------------------------------------------------- report


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def report(result: dict[str, Any]) -> str:
    """The figures as text: a table of batches per size, then the sizes side by side."""
    if "skipped" in result:
        return f"== memory: skipped ({result['skipped']}) =="
    config = result["config"]
    answer = result["answer"]
    lines = [
        f"== memory: {config['batches_per_size']} batches of {config['runs_per_batch']} per size,"
        f" head start {config['head_start_ms']} ms" + f", CFS period {config['cfs_period_us']} µs ==",
        f"note: {result['note']}",
        "cgroup check, share of a core a busy loop got (expected/measured): "
        + ", ".join(
            f"{size} MB {c['expected']:.3f}/{c['measured']:.3f}"
            for size, c in result["cgroup_check_share_of_a_core"].items()
        ),
        f"messages reached the worker {answer['hold_ms_p50']} ms before their second (median hold;"
        f" head start {config['head_start_ms']} ms)",
    ]
    if config.get("jobs_sent_by_the_api"):
        lines.append(
            f"{config['jobs_sent_by_the_api']} jobs were sent by the api (created within the look-ahead)"
        )
    if result.get("worker_restarts"):
        lines.append(f"worker restarts: {result['worker_restarts']}")
    for size, figures in result["sizes"].items():
        lines.append("")
        lines.append(
            f"-- {size} MB ({figures['vcpu']:.3f} vCPU, quota {figures['quota_us']} µs /"
            f" {figures['period_us']} µs): per batch, ms after the second --"
        )
        lines.append(
            f"  {'due (UTC)':<9} {'start':>13} {'arrival first/p50/last':>22} {'rec.max':>7} {'hold':>9}"
            f" {'ready':>7} {'start.':>6} {'exec':>6} {'cpu/run':>7} {'pre/run':>7} {'thr':>5} inv"
        )
        for batch in result["batches"]:
            if str(batch["size_mb"]) != size:
                continue
            a, st, hold = batch["arrival_ms"], batch["start_ms"], batch["hold_ms"]
            lines.append(
                f"  {batch['due'][11:19]:<9} {_fmt(st.get('first')) + '/' + _fmt(st.get('last')):>13}"
                f" {_fmt(a.get('first')) + '/' + _fmt(a.get('p50')) + '/' + _fmt(a.get('last')):>22}"
                f" {_fmt(batch['recorded_lateness_ms'].get('max')):>7}"
                f" {_fmt(hold.get('min'), 0) + '-' + _fmt(hold.get('max'), 0):>9}"
                f" {_fmt(batch['ready_ms']):>7} {_fmt(batch['starting_ms']):>6}"
                f" {_fmt(batch['executing_ms']):>6}"
                f" {_fmt(batch['cpu_ms'].get('per_run')):>7}"
                f" {_fmt(batch['cpu_ms'].get('until_ready_per_run')):>7}"
                f" {_fmt(batch['cgroup']['throttled_ms'], 0):>5} {batch['records_per_invocation']}"
                + ("" if batch["delivered"] == BATCH else f"  delivered {batch['delivered']}")
                + ("" if batch["previous_batch_ended_before_switch"] else "  (previous batch still running)")
            )
    lines.append("")
    lines.append(
        "sizes side by side (ms after the second; the batch's last call, p99 over batches by nearest"
        " rank, p50 in brackets):"
    )
    lines.append(
        f"  {'MB':>5} {'vCPU':>5} {'last start':>14} {'last arrival':>14} {'all arr. p99':>12}"
        f" {'rec p99':>7} {'hold p50':>8} {'ready':>7} {'starting':>8} {'exec':>6}"
        f" {'cpu/run':>7} {'pre/run':>7} {'on time':>7}"
    )
    for size, f in result["sizes"].items():

        def both(figure: Mapping[str, Any]) -> str:
            return f"{_fmt(figure.get('p99'))} [{_fmt(figure.get('p50'))}]"

        lines.append(
            f"  {size:>5} {f['vcpu']:>5.3f} {both(f['last_start_ms']):>14} {both(f['last_call_ms']):>14}"
            f" {_fmt(f['all_calls_ms'].get('p99')):>12} {_fmt(f['recorded_lateness_ms'].get('p99')):>7}"
            f" {_fmt(f['hold_ms'].get('p50')):>8} {_fmt(f['ready_ms'].get('p99')):>7}"
            f" {_fmt(f['starting_ms'].get('p99')):>8} {_fmt(f['executing_ms'].get('p99')):>6}"
            f" {_fmt(f['cpu_per_run_ms'].get('median'), 2):>7}"
            f" {_fmt(f['cpu_until_ready_per_run_ms'].get('median'), 2):>7}"
            f" {('yes' if f['on_time'] else 'NO') + ('/yes' if f['on_time_at_arrival'] else '/NO'):>7}"
        )
    if answer["smallest_on_time_mb"] is None:
        lines.append(f"no size measured starts the batch's last call within {ON_TIME_MS:g} ms of its second")
    else:
        lines.append(
            f"smallest size on time: {answer['smallest_on_time_mb']} MB (the batch's last call starts"
            f" {answer['last_start_p99_ms']} ms after its second, p99; arrives"
            f" {answer['last_call_arrival_p99_ms']} ms after it)"
            + (
                f"; {answer['smallest_on_time_anywhere_mb']} MB was on time too, below a size that was not"
                if answer["smallest_on_time_anywhere_mb"] != answer["smallest_on_time_mb"]
                else ""
            )
        )
    lines.append(
        f"on time at arrival (the last call reaching the receiver within {ON_TIME_MS:g} ms) from"
        f" {answer['smallest_on_time_at_arrival_mb'] or 'no size measured'}"
        + (" MB" if answer["smallest_on_time_at_arrival_mb"] else "")
    )
    lines.append(
        "phases: holding (the ten ready before their second) fits from"
        f" {answer['holding_fits_from_mb'] or '-'} MB, starting (the ten started within"
        f" {ON_TIME_MS:g} ms once free to) from"
        f" {answer['starting_fits_from_mb'] or '-'} MB, executing (arrived within {ON_TIME_MS:g} ms) from"
        f" {answer['executing_fits_from_mb'] or '-'} MB; arithmetic for holding:"
        f" {answer['holding_estimate_mb'] or '-'} MB ({answer['holding_estimate_from']})"
    )
    lines.append(
        "columns: start = first/last call start; hold = second - message arrival (min-max); ready = last"
        " record ready to call (negative: before the second); start. = last start after the later of"
        " the second and ready; exec = last arrival after the same; cpu/run = worker process CPU over"
        " the batch's invocations / 10; pre/run = the part until the last record was ready; thr = ms"
        " the cgroup was throttled; inv = records per invocation; on time = by start / at arrival"
    )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["_worker"]:
        worker_role(args[1], args[2:])
        return
    if args[:1] == ["_stack"]:
        serve_stack(args[1])
        return
    parser = argparse.ArgumentParser(
        prog="python -m bench.memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="memory sizes, MB")
    parser.add_argument("--batches", type=int, default=8, help="batches of ten per size")
    parser.add_argument("--head-start-ms", type=int, default=250)
    parser.add_argument(
        "--spacing",
        type=int,
        default=DEFAULT_SPACING,
        help="seconds between batches, and the dispatcher's tick (each tick sends one batch)",
    )
    parser.add_argument("--period-us", type=int, default=DEFAULT_PERIOD_US, help="the CFS period")
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write memory.json (default bench/results/)"
    )
    options = parser.parse_args(args)
    from bench import common

    if options.out is not None:
        common.RESULTS = options.out
    sizes = [int(s) for s in options.sizes.split(",") if s.strip()]
    try:
        for size in sizes:
            quota_us(size, options.period_us)
    except ValueError as error:
        parser.error(str(error))
    result = run(
        sizes=sizes,
        batches=options.batches,
        head_start_ms=options.head_start_ms,
        period_us=options.period_us,
        spacing=options.spacing,
    )
    common.write_json("memory", result)
    print(json.dumps(result, indent=2) if options.json else report(result))


if __name__ == "__main__":
    main()

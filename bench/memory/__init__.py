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

from bench.memory.analysis import analyse_batch, outcome_lines, phases
from bench.memory.arithmetic import (
    BATCH,
    DEFAULT_PERIOD_US,
    DEFAULT_SIZES,
    FULL_VCPU_MB,
    MIN_QUOTA_US,
    ON_TIME_MS,
    batch_lateness,
    due_seconds,
    holding_estimate_mb,
    quota_us,
    slot_sizes,
    smallest_passing,
    summarize_size,
    vcpu,
)
from bench.memory.report import report
from bench.memory.runner import run, run_or_skip

__all__ = [
    "BATCH",
    "DEFAULT_PERIOD_US",
    "DEFAULT_SIZES",
    "FULL_VCPU_MB",
    "MIN_QUOTA_US",
    "ON_TIME_MS",
    "analyse_batch",
    "batch_lateness",
    "due_seconds",
    "holding_estimate_mb",
    "outcome_lines",
    "phases",
    "quota_us",
    "report",
    "run",
    "run_or_skip",
    "slot_sizes",
    "smallest_passing",
    "summarize_size",
    "vcpu",
]

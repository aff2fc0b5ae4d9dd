"""The cost benchmark's workload: the scenarios (one-off jobs created ahead or due within seconds,
created one or a hundred a request, crons with and without issue 14's controls), how each repetition
is created and timed on the stack, and the intervals of the dispatcher's and the worker's calls that
are charged to it (``Scenario``)."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.common import log
from bench.cost.stack import LOOKAHEAD_SECONDS, TICK_SECONDS, TimedStack
from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso

# ------------------------------------------------------------------------------------ scenarios

Interval = tuple[float, float]

# The ahead batches: created right after a tick, due 64-67 s after it, so the next tick dispatches them
# all (its horizon is 70 s after that tick) and none is within the api's look-ahead when created.
AHEAD_DUE_AFTER_TICK = (64.0, 67.0)
# A worker starts on a message 2-3 s before its due time; its share of a batch begins this early.
EXECUTION_LEAD = 6.0
# How long after its last arrival a batch's records, outcomes and deletes are still being made.
TAIL = 2.5
# A batch of soon jobs: due 3-6 s after it is created, over in ~12 s.
SOON_DUE_AFTER = (3.0, 6.0)
SOON_BUDGET = 14.0


@dataclass
class Scenario:
    """One repetition of one scenario, and what it is charged with: the api's calls for the jobs it
    created (by their target path), the dispatcher's calls in its intervals (whole ticks), and the
    worker's and its event source mapping's calls in its worker intervals."""

    name: str
    repetition: int
    tag: str | None  # target path prefix of the jobs it created
    dispatcher: list[Interval] = field(default_factory=list)
    worker: list[Interval] = field(default_factory=list)
    api: list[Interval] = field(default_factory=list)  # the creates (for the api's log lines)
    creates: int = 0
    executions: int = 0
    paths: set[str] = field(default_factory=set)
    due: Interval = (0.0, 0.0)
    extra: dict[str, Any] = field(default_factory=dict)
    # The ids of the jobs it created (its worker outcome lines, for the hold), and whether its
    # repetitions share them (the crons), so that a line is also the repetition's by its time.
    jobs: set[str] = field(default_factory=set)
    jobs_shared: bool = False


def _inside(t: float, intervals: list[Interval]) -> bool:
    return any(since <= t < until for since, until in intervals)


def _ticks(stack: TimedStack, since: float) -> list[dict[str, Any]]:
    return [
        e for e in stack.events(since, time.time() + 1) if e["role"] == "dispatcher" and e.get("invocation")
    ]


def _next_tick(stack: TimedStack, after: float, timeout: float = 60) -> tuple[float, float]:
    """Wait for the first dispatcher invocation that starts at or after ``after`` to finish: the
    aligned time of its tick (the local dispatcher ticks on multiples of the tick period) and its end."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for tick in _ticks(stack, after):
            aligned = math.floor(tick["t"] / TICK_SECONDS) * TICK_SECONDS
            return float(aligned), float(tick["t_end"])
        time.sleep(0.1)
    raise TimeoutError("the dispatcher did not tick")


def _wait_delivered(receiver: Receiver, paths: set[str], timeout: float) -> float:
    """Wait until every path has been called (or the timeout); the last arrival's time."""
    deadline = time.time() + timeout
    while time.time() < deadline and not paths <= set(receiver.by_path()):
        time.sleep(0.2)
    arrivals = [a.received_at for a in receiver.snapshot() if a.path in paths]
    return max(arrivals, default=time.time())


BATCH = 100  # jobs a POST /v1/jobs/batch request creates in the one_off_batch scenario


def _create(stack: TimedStack, receiver: Receiver, scenario: Scenario, dues: list[float]) -> None:
    """One-off jobs at the given due times; a due time that would fall within the look-ahead when the
    job is created is moved just beyond it for the ahead batches."""
    began = time.time()
    bodies = []
    for n, planned in enumerate(dues):
        due = planned
        if scenario.name in ("one_off_ahead", "one_off_batch"):
            due = max(planned, time.time() + LOOKAHEAD_SECONDS + 1.0)
        path = f"{scenario.tag}{n}"
        body = {
            "schedule": {"at": iso(datetime.fromtimestamp(round(due, 3), UTC))},
            "target": {"type": "http", "url": receiver.url + path},
        }
        if scenario.name == "one_off_batch":
            bodies.append(body)
        else:
            scenario.jobs.add(stack.api.create(body)["job_id"])
        scenario.paths.add(path)
        scenario.due = (min(scenario.due[0] or due, due), max(scenario.due[1], due))
    for start in range(0, len(bodies), BATCH):
        status, answer = stack.api.call("POST", "/v1/jobs/batch", {"jobs": bodies[start : start + BATCH]})
        refused = [item for item in answer.get("items", []) if item.get("status") != 201]
        if status != 200 or refused:
            raise RuntimeError(f"batch create answered {status}: {refused[:1] or answer}")
        scenario.jobs.update(item["job"]["job_id"] for item in answer["items"])
    scenario.creates = len(dues)
    scenario.api.append((began, time.time()))


def _soon(stack: TimedStack, receiver: Receiver, repetition: int, count: int, rng: random.Random) -> Scenario:
    """One-off jobs due within seconds: the api dispatches each one as it creates it."""
    scenario = Scenario("one_off_soon", repetition, f"/soon{repetition}/")
    began = time.time()
    _create(stack, receiver, scenario, [time.time() + rng.uniform(*SOON_DUE_AFTER) for _ in range(count)])
    last = _wait_delivered(receiver, scenario.paths, timeout=SOON_DUE_AFTER[1] + 60)
    # The batch's records, outcomes and deletes end a moment after the last arrival.
    time.sleep(max(0.0, last + TAIL - time.time()))
    scenario.worker.append((began, last + TAIL))
    return scenario


def _one_offs(
    stack: TimedStack,
    receiver: Receiver,
    repetitions: int,
    ahead: int,
    soon: int,
    rng: random.Random,
    warmup: tuple[float, float],
    name: str = "one_off_ahead",
) -> list[Scenario]:
    """The ahead and soon batches of every repetition, interleaved.

    Each ahead batch is created right after a tick and dispatched by the next one; the tick after that
    is idle, so the dispatcher's calls of those two ticks are the batch's. A soon batch runs while
    the dispatcher dispatches (its jobs never reach the dispatcher). About a minute later each ahead
    batch runs, 20 s after the one before, so the worker's calls are the batch's by time. Three
    repetitions of both take ~110 s instead of ~4 minutes one after the other."""
    aheads: list[Scenario] = []
    soons: list[Scenario] = []
    deferred: list[int] = []
    # The first batch follows the warm-up tick at once, unless that tick ended too late for it.
    after = time.time() if warmup[1] > warmup[0] + 3 else warmup[0]
    for k in range(repetitions):
        tick, _end = _next_tick(stack, after)
        batch = Scenario(name, k, f"/{name.rsplit('_', 1)[-1]}{k}/")
        log(f"cost: repetition {k + 1}: {ahead} jobs due in a minute, then {soon} due within seconds")
        _create(stack, receiver, batch, [tick + rng.uniform(*AHEAD_DUE_AFTER_TICK) for _ in range(ahead)])
        # The dispatcher's share: from the creation on, the first tick that starts after the batch
        # exists (it dispatches the batch) and the one after it (idle). Counted from the tick found
        # before creating, a creation that outlasted the next tick's start left the dispatching tick
        # outside the interval (one repetition once read 5.0 WCU a job, the dispatcher's unit missing).
        created_from, created_until = batch.api[-1]
        dispatching = math.ceil(created_until / TICK_SECONDS) * TICK_SECONDS
        batch.dispatcher.append((created_from, dispatching + 2 * TICK_SECONDS))
        aheads.append(batch)
        # A soon batch must be over before the first ahead batch's messages arrive.
        if not soon:
            pass
        elif time.time() + SOON_BUDGET < aheads[0].due[0] - EXECUTION_LEAD:
            soons.append(_soon(stack, receiver, k, soon, rng))
        else:
            deferred.append(k)
        after = dispatching + 2 * TICK_SECONDS - 0.5
    for k, batch in enumerate(aheads):
        last = _wait_delivered(receiver, batch.paths, timeout=batch.due[1] - time.time() + 60)
        end = last + TAIL
        if k + 1 < len(aheads):
            end = min(end, aheads[k + 1].due[0] - EXECUTION_LEAD)
        batch.worker.append((batch.due[0] - EXECUTION_LEAD, end))
    time.sleep(max(0.0, aheads[-1].worker[-1][1] - time.time()))
    for k in deferred:
        soons.append(_soon(stack, receiver, k, soon, rng))
    for scenario in aheads + soons:
        delivered = receiver.by_path()
        scenario.executions = sum(1 for p in scenario.paths if p in delivered)
    return aheads + sorted(soons, key=lambda s: s.repetition)


# Issue 14's controls, as the recurring_controls scenario's crons declare them (none of them fires).
CONTROLS: dict[str, Any] = {
    "max_runs": 1000,
    "jitter_seconds": 2,
    "on_complete": "delete",
    "alerts": {"failed": True, "late_seconds": 60},
}


def _recurring(
    stack: TimedStack,
    receiver: Receiver,
    repetitions: int,
    count: int,
    ticks: int,
    name: str = "recurring",
    controls: bool = False,
) -> list[Scenario]:
    """``count`` crons every 10 s; each repetition is ``ticks`` whole dispatcher ticks in steady state.
    ``controls``: with issue 14's controls on (``CONTROLS``, overlap ``skip``)."""
    jobs = []
    prefix = f"/{name}/"
    for k in range(count):
        body: dict[str, Any] = {
            "schedule": {"cron": f"{k % 10}/10 * * * * *"},
            "target": {"type": "http", "url": receiver.url + f"{prefix}{k}"},
        }
        if controls:
            body["schedule"]["overlap"] = "skip"
            alerts = {**CONTROLS["alerts"], "target": {"type": "http", "url": receiver.url + "/alerts"}}
            body.update({**CONTROLS, "alerts": alerts})
        job = stack.api.create(body)
        jobs.append(job["job_id"])
    # The create sends the occurrences within the look-ahead at once (the API does not wait for a
    # send moment: they arrive up to a second and a quarter early); from then on each tick sends
    # one occurrence per cron, paced. Steady state starts once the API's have run. Each repetition
    # is a fixed window of whole tick periods from half a second after the 5th second of a period,
    # so it holds its ticks whole (each lasts well under 5 s) and exactly one occurrence of each
    # cron (they fire on whole seconds).
    tick, end = _next_tick(stack, time.time() + LOOKAHEAD_SECONDS, timeout=LOOKAHEAD_SECONDS + 60)
    since = tick + 5.5 if end < tick + 5.5 else tick + TICK_SECONDS + 5.5
    scenarios = []
    for r in range(repetitions):
        until = since + ticks * TICK_SECONDS
        time.sleep(max(0.0, until + 0.5 - time.time()))
        executions = sum(
            1 for a in receiver.snapshot() if since <= a.received_at < until and a.path.startswith(prefix)
        )
        scenarios.append(
            Scenario(
                name,
                r,
                None,
                dispatcher=[(since, until)],
                worker=[(since, until)],
                executions=executions,
                extra={"crons": count, "every_seconds": 10, "ticks": ticks},
                jobs=set(jobs),
                jobs_shared=True,
            )
        )
        since = until
    for job_id in jobs:
        stack.api.call("DELETE", f"/v1/jobs/{job_id}")
    # The occurrences dispatched ahead (the look-ahead's worth) still reach the worker, which ends
    # them cancelled: let them pass before another scenario counts the worker's calls.
    time.sleep(LOOKAHEAD_SECONDS + 5)
    return scenarios

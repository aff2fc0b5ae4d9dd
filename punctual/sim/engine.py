"""The engine's own code wired to the simulated AWS: the real ``JobService`` (the API's logic),
``Dispatcher`` (each tick's sweep) and ``RunExecutor`` (each worker record), on ``MemoryStore``
behind ``SimTables``, ``SimQueue`` and ``SimTargets``, all on the virtual clock of one ``World``.

Around them, what AWS runs and the engine does not: EventBridge's tick each minute (with its
fan-out to ``sweep_invocations`` dispatcher invocations), the event source mapping that polls the
queue and invokes the worker with batches, Lambda's concurrency and API Gateway's invocations of the
API. A worker invocation's batch is the Lambda handler's own ``run_batch``
(``punctual_functions/worker/invocation.py``): the batch's holds and reads in two requests, each
record on a task of its own, a record that raises given back, ended records settled.

A deployment of ``sweep_invocations`` groups of shards is simulated by one group (``Deployment``,
``groups``): the groups share nothing but the table's quotas, the account's concurrency, the queue's
in-flight limit and the owner index's partitions, which the group gets its share of
(docs/scale.md, "One group stands for all").
"""

from __future__ import annotations

import functools
import itertools
import random
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from punctual.scale.deployment import Deployment
from punctual.scale.params import Parameters, quantile
from punctual.sim.dynamodb import Capacity, SimTables
from punctual.sim.lambdas import Lambdas
from punctual.sim.sqs import EventSourceMapping, Message, SimQueue
from punctual.sim.world import World
from punctual.testing.fakes.store import MemoryStore
from punctual_functions.api.bulk import bulk_action
from punctual_functions.api.requests import BulkIn, CreateJobIn
from punctual_functions.api.views import BulkView
from punctual_functions.core.aws_errors import throttling
from punctual_functions.core.dispatching import Dispatcher
from punctual_functions.core.factories import build_dispatcher, build_job_service, build_run_executor
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.resources import (
    WORKER_TIMEOUT_SECONDS,
    deployed_visibility_seconds,
)
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.sweep import FANOUT_SPREAD, shard_groups, staggered_starts
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome
from punctual_functions.worker.batch import VisibilityLedger
from punctual_functions.worker.execute import RunExecutor
from punctual_functions.worker.invocation import Record, handle_record, run_batch

HOOK_HOST = "example.com"
# A client's attempts of one request, waiting between them as the AWS SDKs do (jittered exponential
# backoff up to 20 s) and never less than a 429's Retry-After.
API_ATTEMPTS = 8
API_MAX_BACKOFF_SECONDS = 20.0
# API Gateway answers 504 to a request its integration has not answered in this long (the REST and
# HTTP APIs' integration timeout); the function runs on, the client sees a failure and retries.
API_GATEWAY_TIMEOUT_SECONDS = 29.0


@dataclass
class Call:
    """One call of a target, as the receiver saw it."""

    job_id: str
    run_id: str
    attempt: int
    scheduled_for: datetime
    called_at: float
    arrived_at: float | None = None  # when its message reached the worker (the hold starts there)


class SimTargets:
    """Implements ``punctual_functions.core.ports.Targets``: every call recorded at the virtual moment its
    first bytes reach the target (``send_delay_ms`` after the worker's wait ends); the receiver answers
    after ``latency_seconds``."""

    def __init__(
        self,
        world: World,
        lambdas: Lambdas,
        params: Parameters,
        latency_seconds: float,
        rng: random.Random | None = None,
    ) -> None:
        self.world = world
        self.lambdas = lambdas
        self.params = params
        self.latency_seconds = latency_seconds
        self.rng = rng or random.Random(0)
        self.calls: list[Call] = []
        self.arrivals: dict[str, float] = {}  # run id -> when its message first reached a worker

    def prepare(self, spec: Mapping[str, Any], timeout_seconds: float) -> None:
        return None

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
        *,
        wait: Callable[[], None] | None = None,
    ) -> TargetOutcome:
        self.lambdas.charge(self.params.cpu_per_request_ms / 1000)  # composing the request
        if wait is not None:
            wait()
        # The thread's wake-up and the held bytes' way to the target: what the receiver stamps.
        self.world.sleep(quantile(self.params.send_delay_ms, self.rng.random()) / 1000)
        self.calls.append(
            Call(
                delivery.job_id,
                delivery.run_id,
                delivery.attempt,
                delivery.scheduled_for,
                self.world.now,
                self.arrivals.get(delivery.run_id),
            )
        )
        self.world.sleep(self.latency_seconds)
        return TargetOutcome(True, False, 200, None, '{"ok": true}', round(self.latency_seconds * 1000))


@dataclass
class ApiStats:
    requests: int = 0
    throttled: int = 0
    retried: int = 0
    failed: int = 0  # after every attempt
    gateway_timeouts: int = 0  # answered 504 by API Gateway: the function took longer than 29 s
    answered_429: int = 0  # the table throttled the request past the SDK's retries (Retry-After: 1)


@dataclass
class BulkStep:
    """One request of a bulk action's client: when it was sent, how long it took, what it did."""

    action: str
    sent: float
    seconds: float
    acted_on: int
    refused: int
    more: bool


class Simulation:
    """One simulated deployment. ``create``/``create_batch`` schedule API requests at virtual
    moments; ``run`` runs the world; ``report`` (``sim.report``) reads what happened."""

    def __init__(
        self,
        params: Parameters,
        deployment: Deployment,
        *,
        epoch: datetime,
        seed: int = 1,
        target_latency_seconds: float = 0.05,
        dispatcher_down: tuple[float, float] | None = None,
        unsplit: bool = False,
    ) -> None:
        self.params = deployment.parameters(params)
        self.deployment = deployment
        self.world = World(epoch)
        self.rng = random.Random(seed)
        # Split (the default): one group of shards, standing for ``deployment.groups``. Unsplit: the
        # whole deployment in one world, every group's sweep fanned out from each tick (to show that
        # one group stands for all: punctual/sim/groups.py).
        self.groups = 1 if unsplit else deployment.groups
        self.fanout = deployment.groups if unsplit else 1
        share = 1 / self.groups
        self.settings = deployment.settings(whole=unsplit)
        self.store = MemoryStore()
        self.lambdas = Lambdas(
            self.world,
            self.params,
            max(1, int(self.params.lambda_account_concurrency * share)),
            scaling_share=share,  # each function's scaling rate is the deployment's, shared by groups
        )
        self.capacity = Capacity(
            self.params,
            table_share=share,
            shared_partition=lambda partition: partition.startswith("gsi1:"),
            table_window=round(FANOUT_SPREAD.total_seconds()) if self.groups > 1 else 1,
        )
        self.tables = SimTables(
            self.world,
            self.store,
            self.capacity,
            self.params,
            self.rng,
            self.lambdas.charge,
            self.lambdas.function,
        )
        self.queue = SimQueue(
            self.world,
            self.params,
            self.rng,
            visibility_seconds=deployed_visibility_seconds(deployment.worker_batching_window_seconds),
            in_flight_limit=max(10, int(self.params.sqs_in_flight_limit * share)),
            charge=self.lambdas.charge,
            function=self.lambdas.function,
        )
        self.targets = SimTargets(
            self.world, self.lambdas, self.params, target_latency_seconds, random.Random(f"targets {seed}")
        )
        tables: Any = self.tables
        never = self._no_crash
        self.sweeper = self._dispatcher()
        self.service = build_job_service(
            self.settings,
            store=tables,
            dispatcher=self._dispatcher(),
            policy=NetworkPolicy(allow_loopback=False, allow_list=(HOOK_HOST,)),
            clock=self.world,
        )
        self.executor = build_run_executor(
            self.settings,
            store=tables,
            queue=VisibilityLedger(self.queue, self.world.monotonic),  # as the handler's executor
            targets=self.targets,
            clock=self.world,
            crash_point=never,
        )
        self.executor.rng = random.Random(seed)
        self.esm = EventSourceMapping(
            self.world,
            self.queue,
            self.lambdas,
            self.params,
            self.rng,
            handle_batch=self._worker_batch,
            batch_size=deployment.worker_batch_size,
            window_seconds=deployment.worker_batching_window_seconds,
            maximum_concurrency=deployment.invocation_ceiling(self.params),
            provisioned=deployment.provisioned_pollers,
            minimum_pollers=deployment.minimum_pollers,
            scale_share=share,
        )
        self.api = ApiStats()
        self.api_seconds: list[float] = []  # each API invocation's duration
        self.api_span: list[float] = []  # [first request sent, last request answered with success]
        self.bulk_steps: list[BulkStep] = []
        self.bulk_done: float | None = None
        self._keys = itertools.count(1)
        self.ticks: list[tuple[float, float | None]] = []  # (start, end) of each tick's sweep
        self.dispatcher_down = dispatcher_down
        self.world.spawn(self._tick_loop, name="eventbridge")

    @staticmethod
    def _no_crash(_point: str) -> None:
        return None

    def _dispatcher(self) -> Dispatcher:
        """A dispatcher of this deployment, wired as the handlers wire theirs, on the simulated ports."""
        tables: Any = self.tables
        return build_dispatcher(
            self.settings, store=tables, queue=self.queue, clock=self.world, crash_point=self._no_crash
        )

    # ------------------------------------------------------------------------------- the API

    def create(self, at: float, owner: str, body: Mapping[str, Any], *, idempotent: bool = False) -> None:
        """``POST /v1/jobs`` at virtual second ``at``; ``idempotent``: with an ``Idempotency-Key`` (a
        write and a read more per job: the API stores the key)."""
        key = f"sim-{next(self._keys)}" if idempotent else None
        request = CreateJobIn.model_validate(body)
        self.world.spawn(
            lambda: self._api(lambda: self.service.create_job(owner, request, key)), at=at, name="create"
        )

    def create_batch(
        self, at: float, owner: str, bodies: Sequence[Mapping[str, Any]], *, idempotent: bool = False
    ) -> None:
        """``POST /v1/jobs/batch`` (up to 100 jobs) at virtual second ``at``, as ``create``."""
        key = f"sim-{next(self._keys)}" if idempotent else None
        self.world.spawn(
            lambda: self._api(lambda: self.service.create_jobs(owner, list(bodies), key)),
            at=at,
            name="create",
        )

    def bulk(self, at: float, owner: str, bodies: Sequence[Mapping[str, Any]]) -> None:
        """A client of ``POST /v1/jobs/bulk`` from virtual second ``at``: for each body in turn, it
        calls again, passing the answer's ``next_cursor`` back, while the answer says ``more``; each
        call is a ``BulkStep``. ``bulk_done`` is set when it has finished."""

        def client() -> None:
            for body in bodies:
                if not act(body):
                    break
            self.bulk_done = self.world.now

        def act(body: Mapping[str, Any]) -> bool:
            cursor = None
            while True:
                sent = self.world.now
                answers: list[BulkView] = []
                request = BulkIn.model_validate({**body, **({"cursor": cursor} if cursor else {})})

                def call(answers: list[BulkView] = answers, request: BulkIn = request) -> None:
                    answers.append(bulk_action(self.service, owner, request))

                if not self._api(call):
                    return False
                answer = answers[-1]
                refused = sum(item["status"] >= 400 for item in answer["items"])
                self.bulk_steps.append(
                    BulkStep(
                        body["action"],
                        sent,
                        self.world.now - sent,
                        len(answer["items"]) - refused,
                        refused,
                        answer["more"],
                    )
                )
                if not answer["more"]:
                    return True
                cursor = answer.get("next_cursor")

        self.world.spawn(client, at=at, name="bulk client")

    def _api(self, call: Callable[[], object]) -> bool:
        """One API request: an invocation of the api function, retried as a client retries (after a
        second while Lambda throttles it; with backoff after a 429, a 5xx or API Gateway's 504, at most
        ``API_ATTEMPTS`` times). Whether it succeeded in the end."""
        if not self.api_span:
            self.api_span = [self.world.now, self.world.now]
        for attempt in range(API_ATTEMPTS):
            self.api.requests += 1
            failed: list[BaseException] = []

            def body(failed: list[BaseException] = failed) -> None:
                try:
                    call()
                except Exception as error:  # a 429 if the table throttled it, else a 500
                    failed.append(error)

            while (task := self.lambdas.invoke("api", body, name="api")) is None:
                self.api.throttled += 1
                self.world.sleep(1.0)
            began = self.world.now
            task.join()
            took = self.world.now - began
            self.api_seconds.append(took)
            if took > API_GATEWAY_TIMEOUT_SECONDS:
                self.api.gateway_timeouts += 1  # the client saw a 504 at 29 s, whatever the function did
            elif not failed:
                self.api_span[1] = max(self.api_span[1], self.world.now)
                return True
            self.api.retried += 1
            if failed and throttling(failed[0]):
                self.api.answered_429 += 1
            backoff = self.rng.random() * min(API_MAX_BACKOFF_SECONDS, 2.0**attempt)
            self.world.sleep(max(1.0, backoff))  # a 429's Retry-After is a second
        self.api.failed += 1
        return False

    # ------------------------------------------------------------------------- the dispatcher

    def _tick_loop(self) -> None:
        """EventBridge's rule: a tick at each minute (``tick_seconds``), a little after it; the tick
        invokes one dispatcher per group (``sweep_invocations``), this simulation's group among them."""
        minute, tick = 0, self.deployment.tick_seconds
        while True:
            start = minute * tick + quantile(self.params.tick_delay_ms, self.rng.random()) / 1000
            self.world.sleep(max(0.0, start - self.world.now))
            minute += 1
            down = self.dispatcher_down
            if down is not None and down[0] <= self.world.now < down[1]:
                continue
            if self.lambdas.invoke("dispatcher", self._tick, name="tick") is None:
                self.ticks.append((self.world.now, None))

    def _tick(self) -> None:
        if self.fanout > 1:
            self._fan_out()
            return
        if self.groups == 1:
            self._sweep()
            return
        # The fan-out: an asynchronous Invoke per group, from the tick's invocation.
        self.lambdas.charge(self.params.cpu_per_request_ms / 1000 * self.deployment.groups)
        self.world.sleep(self.params.lambda_invoke_ms / 1000)
        # This group is one of many, its start spread with theirs (``staggered_starts``): which one
        # varies from tick to tick.
        start_at = staggered_starts(self.deployment.groups, self.world())[
            self.rng.randrange(self.deployment.groups)
        ]
        while self.lambdas.invoke("dispatcher", lambda: self._sweep(start_at), name="sweep") is None:
            self.world.sleep(1.0)  # Lambda retries a throttled asynchronous invocation

    def _fan_out(self) -> None:
        """The whole deployment's tick (unsplit): an asynchronous Invoke per group of shards, as the
        dispatcher's handler makes them, each group's sweep from its staggered start."""
        self.lambdas.charge(self.params.cpu_per_request_ms / 1000 * self.fanout)
        self.world.sleep(self.params.lambda_invoke_ms / 1000)
        groups = shard_groups(self.settings.shard_count, self.fanout)
        for shards, start_at in zip(groups, staggered_starts(len(groups), self.world()), strict=True):
            self.world.spawn(functools.partial(self._invoke_sweep, shards, start_at), name="fan-out")

    def _invoke_sweep(self, shards: list[int], start_at: datetime) -> None:
        while self.lambdas.invoke("dispatcher", lambda: self._sweep(start_at, shards), name="sweep") is None:
            self.world.sleep(1.0)  # Lambda retries a throttled asynchronous invocation

    def _sweep(self, start_at: datetime | None = None, shards: list[int] | None = None) -> None:
        began = self.world.now
        sweeper = self.sweeper
        if self.groups > 1 or self.fanout > 1:
            # A fanned-out tick's invocations land on whichever warm containers Lambda picks, so the
            # one sweeping this group rarely swept it the tick before: it starts without the memory
            # of occurrences already dispatched (``Dispatcher._dispatched``) and reads their runs.
            sweeper = self._dispatcher()
        sweeper.sweep(shards=shards, start_at=start_at)
        self.ticks.append((began, self.world.now))

    # ---------------------------------------------------------------------------- the worker

    def _worker_batch(self, batch: list[Message]) -> list[str]:
        """A worker invocation's batch, run by the worker's own ``run_batch`` (the Lambda handler's);
        the receipt handles of the records that ended (the event source deletes them)."""
        started = self.world.now
        records = []
        for message in batch:
            assert message.receipt is not None
            records.append(Record(str(message.number), message.receipt, message.body, message.receives))
            self.targets.arrivals.setdefault(WorkMessage.from_json(message.body).run_id, started)
        failed = set(
            run_batch(
                self.executor,
                records,
                time_left=lambda: WORKER_TIMEOUT_SECONDS - (self.world.now - started),
                handle=self._record,
            )
        )
        return [record.receipt_handle for record in records if record.message_id not in failed]

    def _record(self, executor: RunExecutor, record: Record, time_left: float | None) -> None:
        """One record, as the handler runs it, after the CPU its own code takes (``cpu_per_record_ms``)."""
        self.lambdas.charge(self.params.cpu_per_record_ms / 1000)
        handle_record(executor, record, time_left)

    # ------------------------------------------------------------------------------- running

    def run(self, until_seconds: float) -> None:
        """Run the world until ``until_seconds``; the ids and tokens the engine draws (``uuid4``)
        come from the simulation's seed meanwhile, so that a run can be repeated exactly."""
        ids = random.Random(self.rng.random())
        real = uuid.uuid4
        uuid.uuid4 = lambda: uuid.UUID(int=ids.getrandbits(128), version=4)
        try:
            self.world.run(until=until_seconds)
        finally:
            uuid.uuid4 = real

    def at(self, seconds: float) -> datetime:
        return self.world.at(seconds)

    def seconds(self, moment: datetime) -> float:
        return self.world.seconds(moment)

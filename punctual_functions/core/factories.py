"""Builds the store, queue and services from settings, once per process (cached factories).

The one wiring of each service: the handlers call these with the settings alone, and the tests
(``tests/harness.py``) with the ports, clock and crash point they run the services on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from punctual_functions.core import aws
from punctual_functions.core.clock import SYSTEM_CLOCK, Clock
from punctual_functions.core.queue import WorkQueue
from punctual_functions.core.resources import API_TABLE_ATTEMPTS, TABLE_ATTEMPTS
from punctual_functions.core.settings import Settings, get_settings
from punctual_functions.core.store import Store

if TYPE_CHECKING:  # imported where used: only the worker executes targets, and it dispatches nothing
    from punctual_functions.api.service import JobService
    from punctual_functions.core.dispatching import Dispatcher
    from punctual_functions.core.invoker import LambdaInvoker
    from punctual_functions.core.ports import Queue, Tables, Targets
    from punctual_functions.core.ssrf_guard import NetworkPolicy
    from punctual_functions.core.targets.executor import TargetExecutor
    from punctual_functions.worker.execute import RunExecutor

CrashPoint = Callable[[str], None]


def build_store(settings: Settings, attempts: int = TABLE_ATTEMPTS) -> Store:
    """The table's store; ``attempts``: of each request, by the SDK
    (``punctual_functions/core/resources.py``)."""
    store = Store(
        aws.client("dynamodb", settings, attempts=attempts),
        settings.table_name,
        run_retention=timedelta(days=settings.run_retention_days),
    )
    store.audit_retention = timedelta(days=settings.audit_retention_days)
    return store


def build_queue(settings: Settings) -> WorkQueue:
    return WorkQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url)


def build_network_policy(settings: Settings) -> NetworkPolicy:
    from punctual_functions.core.ssrf_guard import NetworkPolicy

    return NetworkPolicy(allow_loopback=settings.http_allow_loopback, allow_list=settings.http_allow_list)


def build_dispatcher(
    settings: Settings,
    *,
    store: Tables | None = None,
    queue: Queue | None = None,
    clock: Clock = SYSTEM_CLOCK,
    crash_point: CrashPoint | None = None,
    deletes: bool = True,
) -> Dispatcher:
    """The dispatcher, on the deployment's table and queue unless given others."""
    from punctual_functions.core.dispatching import Dispatcher

    return Dispatcher(
        store if store is not None else build_store(settings),
        queue if queue is not None else build_queue(settings),
        settings,
        clock=clock,
        crash_point=crash_point,
        deletes=deletes,
    )


def build_target_executor(settings: Settings) -> TargetExecutor:
    from punctual_functions.core.targets.executor import TargetExecutor

    return TargetExecutor(
        lambda service: aws.client(service, settings, for_target=True), build_network_policy(settings)
    )


def build_run_executor(
    settings: Settings,
    *,
    store: Tables | None = None,
    queue: Queue | None = None,
    targets: Targets | None = None,
    clock: Clock = SYSTEM_CLOCK,
    crash_point: CrashPoint | None = None,
) -> RunExecutor:
    """The worker's executor: by default on the deployment's table, its queue behind the batch's
    visibility ledger, and the targets' executor."""
    from punctual_functions.worker.execute import RunExecutor

    if queue is None:
        from punctual_functions.worker.batch import VisibilityLedger

        queue = VisibilityLedger(build_queue(settings))
    return RunExecutor(
        store if store is not None else build_store(settings),
        queue,
        targets if targets is not None else build_target_executor(settings),
        settings,
        clock=clock,
        crash_point=crash_point,
    )


def build_job_service(
    settings: Settings,
    *,
    store: Tables | None = None,
    dispatcher: Dispatcher | None = None,
    policy: NetworkPolicy | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> JobService:
    """The API's service: by default on the table with the API's attempts (a caller waits on it),
    the process's dispatcher and the deployment's network policy."""
    from punctual_functions.api.service import JobService

    return JobService(
        store if store is not None else build_store(settings, API_TABLE_ATTEMPTS),
        dispatcher if dispatcher is not None else default_dispatcher(),
        settings,
        policy if policy is not None else build_network_policy(settings),
        clock=clock,
    )


@lru_cache(maxsize=1)
def default_dispatcher() -> Dispatcher:
    return build_dispatcher(get_settings())


def build_invoker(settings: Settings, function_arn: str) -> LambdaInvoker:
    from punctual_functions.core.invoker import LambdaInvoker

    return LambdaInvoker(aws.client("lambda", settings), function_arn)

"""Builds the store, queue and executors from settings, once per process (cached factories)."""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from functions.core import aws
from functions.core.queue import WorkQueue
from functions.core.resources import TABLE_ATTEMPTS
from functions.core.settings import Settings, get_settings
from functions.core.store import Store

if TYPE_CHECKING:  # imported where used: only the worker executes targets, and it dispatches nothing
    from functions.core.dispatching import Dispatcher
    from functions.core.invoker import LambdaInvoker
    from functions.core.ssrf_guard import NetworkPolicy
    from functions.core.targets.executor import TargetExecutor


def build_store(settings: Settings, attempts: int = TABLE_ATTEMPTS) -> Store:
    """The table's store; ``attempts``: of each request, by the SDK (``functions/core/resources.py``)."""
    return Store(
        aws.client("dynamodb", settings, attempts=attempts),
        settings.table_name,
        run_retention=timedelta(days=settings.run_retention_days),
    )


def build_queue(settings: Settings) -> WorkQueue:
    return WorkQueue(aws.client("sqs", settings), settings.queue_url, settings.dlq_url)


def build_network_policy(settings: Settings) -> NetworkPolicy:
    from functions.core.ssrf_guard import NetworkPolicy

    return NetworkPolicy(allow_loopback=settings.http_allow_loopback, allow_list=settings.http_allow_list)


def build_dispatcher(settings: Settings) -> Dispatcher:
    from functions.core.dispatching import Dispatcher

    return Dispatcher(build_store(settings), build_queue(settings), settings)


def build_target_executor(settings: Settings) -> TargetExecutor:
    from functions.core.targets.executor import TargetExecutor

    return TargetExecutor(
        lambda service: aws.client(service, settings, for_target=True), build_network_policy(settings)
    )


@lru_cache(maxsize=1)
def default_dispatcher() -> Dispatcher:
    return build_dispatcher(get_settings())


def build_invoker(settings: Settings, function_arn: str) -> LambdaInvoker:
    from functions.core.invoker import LambdaInvoker

    return LambdaInvoker(aws.client("lambda", settings), function_arn)

"""How often the SDK tries a table request, per function (punctual_functions/core/resources.py): the api gives
up sooner than the dispatcher and the worker, so that a throttled request is answered 429 in about a
second rather than after half a minute of backoff (docs/scale.md, "One owner creating 5,000 jobs a
second")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from punctual_functions.core import aws
from punctual_functions.core.factories import build_store
from punctual_functions.core.resources import API_TABLE_ATTEMPTS, TABLE_ATTEMPTS
from punctual_functions.core.settings import Settings


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    aws.reset_clients()
    yield Settings(table_name="t", queue_url="q", region="eu-west-1")
    aws.reset_clients()


def attempts(client: object) -> int:
    return int(client.meta.config.retries["total_max_attempts"])  # type: ignore[attr-defined]


def test_the_api_tries_a_table_request_fewer_times_than_the_dispatcher_and_the_worker(
    settings: Settings,
) -> None:
    assert API_TABLE_ATTEMPTS < TABLE_ATTEMPTS
    assert attempts(build_store(settings).client) == TABLE_ATTEMPTS
    assert attempts(build_store(settings, API_TABLE_ATTEMPTS).client) == API_TABLE_ATTEMPTS


def test_the_api_services_store_is_the_one_that_gives_up_sooner(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from punctual_functions.api import handler

    monkeypatch.setattr(handler, "get_settings", lambda: settings)
    handler.deps.cache_clear()
    try:
        assert attempts(handler.deps().store.client) == API_TABLE_ATTEMPTS  # type: ignore[attr-defined]
    finally:
        handler.deps.cache_clear()


def test_a_client_per_number_of_attempts_is_kept_for_the_process(settings: Settings) -> None:
    assert aws.client("dynamodb", settings) is aws.client("dynamodb", settings)
    fewer = aws.client("dynamodb", settings, attempts=API_TABLE_ATTEMPTS)
    assert aws.client("dynamodb", settings) is not fewer


def test_the_dispatchers_fan_out_invokes_with_the_engines_retries_not_a_targets_one_try(
    settings: Settings,
) -> None:
    """The client config was picked by service name alone, so the fan-out's asynchronous invocations
    got a target call's single attempt and 905 s read timeout: one throttled invoke lost a group's
    sweep for that tick."""
    from punctual_functions.core.factories import build_invoker, build_target_executor

    invoker = build_invoker(settings, "arn:aws:lambda:eu-west-1:123456789012:function:dispatcher")
    own: Any = invoker.client
    assert attempts(own) == TABLE_ATTEMPTS
    assert own.meta.config.read_timeout == 30
    target: Any = build_target_executor(settings)._client("lambda")
    assert attempts(target) == 1, "a target function's invocation is the attempt itself"
    assert target.meta.config.read_timeout == 905
    assert aws.client_in_region(target, "us-east-1").meta.config.read_timeout == 905
    assert aws.client_in_region(own, "us-east-1").meta.config.read_timeout == 30

"""boto3 clients, created once per process and shared by every role.

Clients are built lazily (a handler's cold start pays only for the clients it uses), one per service
and region, and pointed at ``aws_endpoint_url`` when one is set (the local moto server, or LocalStack).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config

from punctual_functions.core.resources import TABLE_ATTEMPTS
from punctual_functions.core.settings import Settings

if TYPE_CHECKING:  # the stubs are a development dependency: no import at run time
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

_lock = threading.Lock()
# (service, endpoint, region, attempts, for a target's call)
_clients: dict[tuple[str, str | None, str, int, bool], Any] = {}


def _config(attempts: int, *, validate: bool = True) -> Config:
    """Standard retry mode retries throttling and transient errors with backoff; timeouts stay short
    so a stuck call cannot eat a Lambda invocation. ``validate``: botocore checks each request's
    parameters against the service model before sending it."""
    return Config(
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=50,
        parameter_validation=validate,
    )


# DynamoDB's requests are built by the store adapter alone (no target writes to a table), from typed
# objects, and the contract suite runs each of them against moto; botocore's own check of every
# parameter was an eighth of the dispatcher's CPU per dispatch (CHANGELOG.md, issue 27). DynamoDB still
# refuses a malformed request, with a ValidationException.
_UNVALIDATED = frozenset({"dynamodb"})


# Invoking a target function is the attempt itself: it may run up to a job's longest timeout, and the
# SDK must never re-send it (that would run the target twice); our own retry policy decides.
_TARGET_LAMBDA_CONFIG = Config(
    retries={"total_max_attempts": 1, "mode": "standard"},
    connect_timeout=5,
    read_timeout=905,
    max_pool_connections=50,
)


@overload
def client(
    service: Literal["dynamodb"],
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> DynamoDBClient: ...
@overload
def client(
    service: Literal["sqs"],
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> SQSClient: ...
@overload
def client(
    service: Literal["lambda"],
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> LambdaClient: ...
@overload
def client(
    service: Literal["sns"],
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> SNSClient: ...
@overload
def client(
    service: Literal["events"],
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> EventBridgeClient: ...
@overload
def client(
    service: str,
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> Any: ...
def client(
    service: str,
    settings: Settings,
    region: str | None = None,
    *,
    attempts: int = TABLE_ATTEMPTS,
    for_target: bool = False,
) -> Any:
    """The process's client of ``service`` in ``region`` (by default the deployment's), making
    ``attempts`` of each request (``punctual_functions/core/resources.py``). ``for_target``: the client calls
    jobs' targets (a target function's invocation is the attempt itself: one try, as long as the
    longest job timeout), not the engine's own resources (the dispatcher's fan-out invokes with the
    standard timeouts and retries).

    A client reaches one region only, so a target in another region has a client of its own. With
    ``aws_endpoint_url`` set, every region's client goes to that endpoint: an emulator serves all
    regions and keeps them apart by the region a request is signed for, as AWS's endpoints do.
    """
    return _cached(service, settings.aws_endpoint_url, region or settings.region, attempts, for_target)


def client_in_region(home: Any, region: str) -> Any:
    """The client of ``home``'s service and endpoint in ``region``, shared as :func:`client`'s are.

    For callers that hold a client rather than the settings (the target executor is given the
    deployment region's clients). A client this module did not make (a test's) is taken to use the
    service's standard endpoints.
    """
    with _lock:
        origin = next(((s, e, a, t) for (s, e, _, a, t), made in _clients.items() if made is home), None)
    service, endpoint, attempts, for_target = origin or (
        home.meta.service_model.service_name,
        None,
        TABLE_ATTEMPTS,
        True,
    )
    return _cached(service, endpoint, region, attempts, for_target)


def _cached(service: str, endpoint: str | None, region: str, attempts: int, for_target: bool) -> Any:
    key = (service, endpoint, region, attempts, for_target)
    with _lock:
        existing = _clients.get(key)
        if existing is None:
            existing = boto3.session.Session().client(
                service,  # type: ignore[call-overload]
                region_name=region,
                endpoint_url=endpoint,
                config=_TARGET_LAMBDA_CONFIG
                if for_target and service == "lambda"
                else _config(attempts, validate=service not in _UNVALIDATED),
            )
            _clients[key] = existing
        return existing


def reset_clients() -> None:
    """Forget cached clients (tests that switch emulators)."""
    with _lock:
        _clients.clear()

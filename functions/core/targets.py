"""How a run is delivered to its target: spec validation, delivery headers and execution.

Target kinds: ``http`` (webhook), ``lambda`` (synchronous invoke), ``sqs``, ``sns`` and ``eventbridge``.
Every delivery carries the same identifying headers (see :func:`delivery_headers`): for HTTP as request
headers, for SQS and SNS as message attributes, for Lambda and EventBridge as fields of the event.

The executor never raises for a target failure; it returns a :class:`TargetOutcome` whose ``retriable``
flag tells the worker whether another attempt can help. The rule of thumb: throttling, server-side and
network failures are retriable, anything that will fail the same way again (a 404, a missing function, a
denied permission, a refused address) is not.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlsplit

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectTimeoutError as BotoConnectTimeoutError
from botocore.exceptions import ReadTimeoutError as BotoReadTimeoutError
from urllib3 import BaseHTTPResponse, HTTPConnectionPool, HTTPSConnectionPool, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)

from functions.core.definitions import MAX_JOB_TIMEOUT_SECONDS
from functions.core.netguard import (
    ForbiddenAddressError,
    NetworkPolicy,
    TargetError,
    TargetURL,
    parse_target_url,
    resolve_and_check,
)
from functions.core.signing import SIGNATURE_HEADER, sign

__all__ = [
    "EXCERPT_BYTES",
    "HTTP_METHODS",
    "TARGET_TYPES",
    "Delivery",
    "NetworkPolicy",
    "TargetError",
    "TargetExecutor",
    "TargetOutcome",
    "delivery_headers",
    "format_timestamp",
    "validate_target",
]

TARGET_TYPES: Final = ("http", "lambda", "sqs", "sns", "eventbridge")
HTTP_METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
DEFAULT_HTTP_METHOD: Final = "POST"
MAX_TIMEOUT_SECONDS: Final = MAX_JOB_TIMEOUT_SECONDS  # an HTTP call cannot outlast its attempt
DEFAULT_EVENT_BUS: Final = "default"
DEFAULT_EVENT_SOURCE: Final = "punctual"
DEFAULT_EVENT_DETAIL_TYPE: Final = "Punctual Job Run"
EXCERPT_BYTES: Final = 4096

IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
_RESERVED_PREFIX: Final = "punctual-"
# Headers that describe the connection or the framing rather than the request: letting a user set them
# would allow request smuggling or a Host that differs from the vetted destination.
_FORBIDDEN_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
_MAX_HEADERS: Final = 50
_MAX_HEADER_NAME: Final = 256
_MAX_HEADER_VALUE: Final = 8192
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_FORBIDDEN: Final = re.compile(r"[\x00\r\n]")

_FUNCTION_NAME: Final = re.compile(
    r"(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}((-gov)|(-iso[a-z]?))?-[a-z]+-\d:)?(\d{12}:)?"
    r"(function:)?[a-zA-Z0-9_.-]+(:(\$LATEST|[a-zA-Z0-9_-]+))?"
)
_QUEUE_PATH: Final = re.compile(r"/\d{12}/([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)")
_TOPIC_ARN: Final = re.compile(r"arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?")
_BUS_NAME: Final = re.compile(r"[/.\-_A-Za-z0-9]{1,256}")
_BUS_ARN: Final = re.compile(r"arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus/[/.\-_A-Za-z0-9]{1,256}")
_DEDUP_ID: Final = re.compile(r"[!-~]{1,128}")

_CANCEL_POLL_SECONDS: Final = 0.02
_MAX_ERROR_CHARS: Final = 500

# botocore error code -> retriable. Throttling and service-side failures clear up on their own; validation,
# permission and not-found errors do not. Codes not listed fall back on the HTTP status (see _aws_failure).
_AWS_RETRIABLE: Final[Mapping[str, bool]] = {
    # throttling
    "ThrottlingException": True,
    "Throttling": True,
    "ThrottledException": True,
    "TooManyRequestsException": True,
    "RequestLimitExceeded": True,
    "RequestThrottled": True,
    "RequestThrottledException": True,
    "ProvisionedThroughputExceededException": True,
    "KmsThrottled": True,
    "KMSThrottlingException": True,
    "EC2ThrottledException": True,
    # service side, or a transient state of the target
    "InternalError": True,
    "InternalFailure": True,
    "InternalException": True,
    "InternalServerError": True,
    "ServiceException": True,
    "ServiceUnavailable": True,
    "ServiceUnavailableException": True,
    "ResourceNotReadyException": True,
    "ResourceConflictException": True,
    "EC2UnexpectedException": True,
    "ENILimitReachedException": True,
    "SubnetIPAddressLimitReachedException": True,
    "SnapStartNotReadyException": True,
    "SnapStartTimeoutException": True,
    "EFSMountTimeoutException": True,
    "EFSMountConnectivityException": True,
    "EFSIOException": True,
    "ExpiredToken": True,
    "ExpiredTokenException": True,
    "RequestExpired": True,
    # the target is missing or misconfigured, or we may not call it
    "AccessDenied": False,
    "AccessDeniedException": False,
    "AuthorizationError": False,
    "UnrecognizedClientException": False,
    "InvalidClientTokenId": False,
    "KMSAccessDeniedException": False,
    "KMSDisabledException": False,
    "KMSNotFoundException": False,
    "KMSInvalidStateException": False,
    "ResourceNotFoundException": False,
    "NotFound": False,
    "NotFoundException": False,
    "AWS.SimpleQueueService.NonExistentQueue": False,
    "QueueDoesNotExist": False,
    "ValidationException": False,
    "ValidationError": False,
    "InvalidParameter": False,
    "InvalidParameterValue": False,
    "InvalidParameterException": False,
    "InvalidParameterValueException": False,
    "InvalidRequestContentException": False,
    "RequestTooLargeException": False,
    "InvalidRuntimeException": False,
    "RecursiveInvocationException": False,
}


@dataclass(frozen=True)
class Delivery:
    """One attempt at delivering one run."""

    job_id: str
    run_id: str
    attempt: int  # 1-based
    scheduled_for: datetime  # aware
    payload: Any  # JSON value or None
    secret: str | None = None

    def __post_init__(self) -> None:
        for name in ("job_id", "run_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or not value.isprintable():
                raise ValueError(f"{name} must be a non-empty printable string")
        if self.attempt < 1:
            raise ValueError("attempt is 1-based")
        if self.scheduled_for.tzinfo is None:
            raise ValueError("scheduled_for must be timezone-aware")


@dataclass(frozen=True)
class TargetOutcome:
    succeeded: bool
    retriable: bool  # meaningful when not succeeded
    status_code: int | None  # HTTP status, or None
    error: str | None  # short reason
    response_excerpt: str  # first 4 KiB of the response body or error payload
    duration_ms: int
    # From an HTTP Retry-After header on a retriable response; the worker may back off at least this long.
    retry_after_seconds: float | None = None


def format_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds, e.g. ``2026-11-22T12:00:05.000Z``."""
    utc = moment.astimezone(UTC)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z"


def delivery_headers(delivery: Delivery, body: bytes, now: datetime) -> dict[str, str]:
    """The headers every delivery carries; ``body`` is signed at ``now`` when the job has a secret."""
    headers = {
        IDEMPOTENCY_HEADER: delivery.run_id,
        "Punctual-Job-Id": delivery.job_id,
        "Punctual-Run-Id": delivery.run_id,
        "Punctual-Attempt": str(delivery.attempt),
        "Punctual-Scheduled-For": format_timestamp(delivery.scheduled_for),
    }
    if delivery.secret:
        headers[SIGNATURE_HEADER] = sign(delivery.secret, body, now)
    return headers


def _is_reserved_header(name: str) -> bool:
    lowered = name.lower()
    return lowered == IDEMPOTENCY_HEADER.lower() or lowered.startswith(_RESERVED_PREFIX)


# --------------------------------------------------------------------------------------------- validation


def validate_target(spec: Mapping[str, Any], policy: NetworkPolicy) -> dict[str, Any]:
    """The normalised target (defaults filled in), or TargetError naming the field. No network access."""
    return _normalize(spec, policy, strict=True)


def _normalize(spec: Mapping[str, Any], policy: NetworkPolicy, *, strict: bool) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise TargetError("target", "must be an object")
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in TARGET_TYPES:
        raise TargetError("target.type", f"must be one of {', '.join(TARGET_TYPES)}")
    if kind == "http":
        return _normalize_http(spec, policy, strict=strict)
    if kind == "lambda":
        _check_keys(spec, kind, {"function"})
        function = _required_str(spec, "function", 170)
        if not _FUNCTION_NAME.fullmatch(function):
            raise TargetError("target.function", "must be a Lambda function name or ARN")
        return {"type": kind, "function": function}
    if kind == "sqs":
        _check_keys(spec, kind, {"queue_url"})
        queue_url = _required_str(spec, "queue_url", 1024)
        parts = urlsplit(queue_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or not _QUEUE_PATH.fullmatch(parts.path):
            raise TargetError(
                "target.queue_url", "must be an SQS queue URL (https://sqs.<region>.../<account>/<name>)"
            )
        return {"type": kind, "queue_url": queue_url}
    if kind == "sns":
        _check_keys(spec, kind, {"topic_arn"})
        topic_arn = _required_str(spec, "topic_arn", 1024)
        if not _TOPIC_ARN.fullmatch(topic_arn):
            raise TargetError("target.topic_arn", "must be an SNS topic ARN")
        return {"type": kind, "topic_arn": topic_arn}
    _check_keys(spec, kind, {"bus", "source", "detail_type"})
    bus = _optional_str(spec, "bus", DEFAULT_EVENT_BUS, 1600)
    if not (_BUS_NAME.fullmatch(bus) or _BUS_ARN.fullmatch(bus)):
        raise TargetError("target.bus", "must be an event bus name or ARN")
    source = _optional_str(spec, "source", DEFAULT_EVENT_SOURCE, 256)
    if source.startswith("aws."):
        raise TargetError("target.source", "sources starting with 'aws.' are reserved for AWS services")
    detail_type = _optional_str(spec, "detail_type", DEFAULT_EVENT_DETAIL_TYPE, 128)
    return {"type": kind, "bus": bus, "source": source, "detail_type": detail_type}


def _check_keys(spec: Mapping[str, Any], kind: str, allowed: set[str]) -> None:
    for key in spec:
        if key != "type" and key not in allowed:
            raise TargetError(f"target.{key}", f"unknown field for a {kind} target")


def _required_str(spec: Mapping[str, Any], key: str, max_length: int) -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value:
        raise TargetError(f"target.{key}", "required, a non-empty string")
    if len(value) > max_length:
        raise TargetError(f"target.{key}", f"must be at most {max_length} characters")
    return value


def _optional_str(spec: Mapping[str, Any], key: str, default: str, max_length: int) -> str:
    if spec.get(key) is None:
        return default
    return _required_str(spec, key, max_length)


def _normalize_http(spec: Mapping[str, Any], policy: NetworkPolicy, *, strict: bool) -> dict[str, Any]:
    _check_keys(spec, "http", {"url", "method", "headers", "timeout_seconds"})
    url = spec.get("url")
    if not isinstance(url, str):
        raise TargetError("target.url", "required, a string")
    parse_target_url(url, policy)

    method = spec.get("method")
    if method is None:
        method = DEFAULT_HTTP_METHOD
    if not isinstance(method, str) or method.upper() not in HTTP_METHODS:
        raise TargetError("target.method", f"must be one of {', '.join(HTTP_METHODS)}")

    # Without its own timeout, an HTTP call may take the whole attempt (the job's timeout_seconds).
    timeout = spec.get("timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT_SECONDS
    ):
        raise TargetError("target.timeout_seconds", f"must be a number in (0, {MAX_TIMEOUT_SECONDS}]")

    return {
        "type": "http",
        "url": url,
        "method": method.upper(),
        "headers": _normalize_headers(spec.get("headers"), strict=strict),
        **({"timeout_seconds": timeout} if timeout is not None else {}),
    }


def _normalize_headers(raw: Any, *, strict: bool) -> dict[str, str]:
    """Validated user headers. Reserved names are refused when validating (so the user learns about it),
    and silently dropped when executing a spec stored before the rule existed: either way they never
    override what Punctual sends."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TargetError("target.headers", "must be an object of header names to string values")
    if len(raw) > _MAX_HEADERS:
        raise TargetError("target.headers", f"at most {_MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in raw.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name) or len(name) > _MAX_HEADER_NAME:
            raise TargetError("target.headers", f"{name!r} is not a valid header name")
        if not isinstance(value, str):
            raise TargetError("target.headers", f"the value of {name} must be a string")
        if _HEADER_VALUE_FORBIDDEN.search(value) or len(value) > _MAX_HEADER_VALUE:
            raise TargetError(
                "target.headers",
                f"the value of {name} must be at most {_MAX_HEADER_VALUE} characters without CR, LF or NUL",
            )
        lowered = name.lower()
        if lowered in seen:
            raise TargetError("target.headers", f"{name} is given twice")
        seen.add(lowered)
        if _is_reserved_header(name) or lowered in _FORBIDDEN_HEADERS:
            if strict:
                raise TargetError("target.headers", f"{name} is set by Punctual and cannot be overridden")
            continue
        headers[name] = value
    return headers


# --------------------------------------------------------------------------------------------- execution


def _success(excerpt: str, status_code: int | None = None) -> TargetOutcome:
    """A successful outcome without its duration, which the executor fills in once the attempt is over."""
    return TargetOutcome(True, False, status_code, None, excerpt, 0)


def _failure(
    error: str,
    *,
    retriable: bool,
    excerpt: str = "",
    status_code: int | None = None,
    retry_after_seconds: float | None = None,
) -> TargetOutcome:
    """A failed outcome without its duration."""
    if len(error) > _MAX_ERROR_CHARS:
        error = error[: _MAX_ERROR_CHARS - 1] + "…"
    return TargetOutcome(False, retriable, status_code, error, excerpt, 0, retry_after_seconds)


def _excerpt(data: bytes) -> str:
    return data[:EXCERPT_BYTES].decode("utf-8", errors="replace")


def _json_text(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in a JSON "\ud800" escape) cannot be UTF-8 encoded; escaping keeps it.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            return None
        seconds = moment.timestamp() - time.time()
    return min(max(seconds, 0.0), 86400.0)


def _http_status_outcome(
    status: int, location: str | None, retry_after: str | None, excerpt: bytes
) -> TargetOutcome:
    text = _excerpt(excerpt)
    if 200 <= status < 300:
        return _success(text, status)
    if status in (408, 429) or 500 <= status < 600:
        return _failure(
            f"HTTP {status}",
            retriable=True,
            excerpt=text,
            status_code=status,
            retry_after_seconds=_retry_after(retry_after),
        )
    if 300 <= status < 400:
        where = f" to {location[:200]}" if location else ""
        return _failure(
            f"HTTP {status}: redirect{where} not followed", retriable=False, excerpt=text, status_code=status
        )
    return _failure(f"HTTP {status}", retriable=False, excerpt=text, status_code=status)


class _Exchange:
    """State of one HTTP attempt shared between the thread doing it and the thread waiting for it.

    Aborting works by shutting the connection's socket down, which at once wakes a thread blocked reading
    from it. A duplicate of the socket's descriptor is kept for that: the TLS wrapper detaches the original
    socket object, and the duplicate keeps the descriptor number from being reused by an unrelated socket
    before we are done with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.aborted = False
        self.status: int | None = None
        self.location: str | None = None
        self.retry_after: str | None = None
        self.excerpt = bytearray()

    def track(self, sock: socket.socket) -> None:
        duplicate = sock.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.aborted:
                self._shutdown(duplicate)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            for sock in self._sockets:
                self._shutdown(sock)

    def release(self) -> None:
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def record_response(self, response: BaseHTTPResponse) -> None:
        with self._lock:
            self.status = response.status
            self.location = response.headers.get("Location")
            self.retry_after = response.headers.get("Retry-After")

    def add_body(self, chunk: bytes) -> None:
        with self._lock:
            self.excerpt += chunk

    def outcome_so_far(self) -> TargetOutcome | None:
        """Once the status line is in, the target has answered; later trouble only shortens the excerpt."""
        with self._lock:
            if self.status is None:
                return None
            return _http_status_outcome(self.status, self.location, self.retry_after, bytes(self.excerpt))

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _TrackedHTTPConnection(HTTPConnection):
    def __init__(self, *args: Any, exchange: _Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


class _TrackedHTTPSConnection(HTTPSConnection):
    def __init__(self, *args: Any, exchange: _Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exchange = exchange

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self._exchange.track(sock)
        return sock


class _ConnectFailed(Exception):
    """The TCP/TLS connection to one address could not be set up; another address may still work."""

    def __init__(self, outcome: TargetOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


class TargetExecutor:
    """Executes one delivery against its target.

    Thread-safe: a worker runs the records of a batch concurrently through one executor, sharing the
    lazily created boto3 clients (which are thread-safe).
    """

    def __init__(
        self,
        client_factory: Callable[[str], Any],
        policy: NetworkPolicy,
        user_agent: str = "Punctual/0.1",
        *,
        ca_certs: str | None = None,
    ) -> None:
        """``ca_certs``: a PEM bundle for HTTPS targets (tests, private CAs); default: system trust store."""
        self._client_factory = client_factory
        self._policy = policy
        self._user_agent = user_agent
        self._ca_certs = ca_certs
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()

    def _client(self, service: str) -> Any:
        with self._clients_lock:
            client = self._clients.get(service)
            if client is None:
                client = self._clients[service] = self._client_factory(service)
            return client

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
    ) -> TargetOutcome:
        """Deliver once and report how it went; never raises for a failure of the target.

        The attempt is bounded by ``timeout_seconds`` (the job's timeout) and, for HTTP, by the target's
        own timeout, whichever is smaller. Setting ``cancel`` ends the wait at once with a non-retriable
        "cancelled" outcome (an HTTP request in flight is aborted; an AWS call already sent may still
        complete on the AWS side).
        """
        started = time.monotonic()
        try:
            target = _normalize(spec, self._policy, strict=False)
        except ForbiddenAddressError as exc:
            return self._finish(_failure(f"blocked: {exc.reason}", retriable=False), started)
        except TargetError as exc:
            return self._finish(_failure(f"invalid target: {exc}", retriable=False), started)
        try:
            body_text = _json_text(delivery.payload)
        except (TypeError, ValueError) as exc:
            return self._finish(_failure(f"payload is not valid JSON: {exc}", retriable=False), started)

        budget = float(timeout_seconds)
        if target["type"] == "http" and target.get("timeout_seconds") is not None:
            budget = min(budget, float(target["timeout_seconds"]))
        if cancel is not None and cancel.is_set():
            return self._finish(_failure("cancelled", retriable=False), started)
        if not budget > 0:
            return self._finish(_failure(f"timeout after {_seconds(budget)}", retriable=True), started)

        exchange: _Exchange | None = None
        work: Callable[[], TargetOutcome]
        kind = target["type"]
        if kind == "http":
            exchange = _Exchange()
            work = self._http_work(
                target=target,
                delivery=delivery,
                body_text=body_text,
                budget=budget,
                started=started,
                exchange=exchange,
            )
        elif kind == "lambda":
            work = self._lambda_work(target, delivery)
        elif kind == "sqs":
            work = self._sqs_work(target, delivery, body_text)
        elif kind == "sns":
            work = self._sns_work(target, delivery, body_text)
        else:
            work = self._eventbridge_work(target, delivery)
        return self._run_bounded(work, budget, started, cancel, exchange)

    @staticmethod
    def _finish(outcome: TargetOutcome, started: float) -> TargetOutcome:
        return replace(outcome, duration_ms=round((time.monotonic() - started) * 1000))

    def _run_bounded(
        self,
        work: Callable[[], TargetOutcome],
        budget: float,
        started: float,
        cancel: threading.Event | None,
        exchange: _Exchange | None,
    ) -> TargetOutcome:
        """Run ``work`` in its own thread so that a deadline or a cancel can end the wait at any point.

        Socket timeouts alone would not do: they bound each read, not the whole exchange, so a target
        trickling one byte at a time could hold a worker forever.
        """
        results: list[TargetOutcome] = []
        done = threading.Event()

        def run() -> None:
            try:
                results.append(work())
            except Exception as exc:
                results.append(_failure(f"internal error: {type(exc).__name__}: {exc}", retriable=True))
            finally:
                if exchange is not None:
                    exchange.release()
                done.set()

        threading.Thread(target=run, name="punctual-target", daemon=True).start()
        deadline = started + budget
        stop: str | None = None
        while not done.is_set():
            if cancel is not None and cancel.is_set():
                stop = "cancelled"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stop = "timeout"
                break
            done.wait(remaining if cancel is None else min(remaining, _CANCEL_POLL_SECONDS))
        if done.is_set():
            return self._finish(results[0], started)

        answered: TargetOutcome | None = None
        if exchange is not None:
            exchange.abort()
            answered = exchange.outcome_so_far()
        if answered is not None:
            return self._finish(answered, started)
        if stop == "cancelled":
            return self._finish(_failure("cancelled", retriable=False), started)
        return self._finish(_failure(f"timeout after {_seconds(budget)}", retriable=True), started)

    # ------------------------------------------------------------------------------------------ HTTP

    def _http_work(
        self,
        *,
        target: Mapping[str, Any],
        delivery: Delivery,
        body_text: str,
        budget: float,
        started: float,
        exchange: _Exchange,
    ) -> Callable[[], TargetOutcome]:
        url = parse_target_url(target["url"], self._policy)
        method: str = target["method"]
        body = b"" if method == "GET" else body_text.encode("utf-8")

        headers: dict[str, str] = {"User-Agent": self._user_agent}
        if method != "GET":
            headers["Content-Type"] = "application/json"
        for name, value in target["headers"].items():
            for existing in [key for key in headers if key.lower() == name.lower()]:
                del headers[existing]
            headers[name] = value
        headers.update(delivery_headers(delivery, body, datetime.now(UTC)))
        headers["Host"] = url.host_header

        def work() -> TargetOutcome:
            try:
                addresses = resolve_and_check(url.host, url.port, self._policy)
            except ForbiddenAddressError as exc:
                return _failure(f"blocked: {exc.reason}", retriable=False)
            except TargetError as exc:
                return _failure(f"invalid target: {exc}", retriable=False)
            except OSError as exc:
                return _failure(f"DNS lookup failed for {url.host}: {exc}", retriable=True)
            failure = _failure(f"timeout after {_seconds(budget)}", retriable=True)
            for address in addresses:
                remaining = started + budget - time.monotonic()
                if remaining <= 0 or exchange.aborted:
                    break
                try:
                    return self._http_exchange(
                        url=url,
                        address=address,
                        method=method,
                        body=body,
                        headers=headers,
                        budget=budget,
                        remaining=remaining,
                        exchange=exchange,
                    )
                except _ConnectFailed as exc:
                    # Dual-stack names often list an address family the host cannot reach; try the next.
                    failure = exc.outcome
            return failure

        return work

    def _http_exchange(
        self,
        *,
        url: TargetURL,
        address: str,
        method: str,
        body: bytes,
        headers: Mapping[str, str],
        budget: float,
        remaining: float,
        exchange: _Exchange,
    ) -> TargetOutcome:
        # The pool is addressed by the vetted IP, so urllib3 does not resolve the name again; Host, SNI
        # and certificate verification still use the name from the URL.
        timeout = Timeout(connect=min(remaining, budget), read=budget)
        pool: HTTPConnectionPool
        if url.scheme == "https":
            pool = HTTPSConnectionPool(
                address,
                url.port,
                timeout=timeout,
                maxsize=1,
                retries=False,
                cert_reqs="CERT_REQUIRED",
                ca_certs=self._ca_certs,
                assert_hostname=url.host,
                server_hostname=url.host,
                exchange=exchange,
            )
            pool.ConnectionCls = _TrackedHTTPSConnection
        else:
            pool = HTTPConnectionPool(
                address, url.port, timeout=timeout, maxsize=1, retries=False, exchange=exchange
            )
            pool.ConnectionCls = _TrackedHTTPConnection

        response: BaseHTTPResponse | None = None
        try:
            try:
                response = pool.urlopen(
                    method,
                    url.request_target,
                    body=None if method == "GET" else body,
                    headers=dict(headers),
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=False,
                    decode_content=True,
                    release_conn=False,
                )
            except NewConnectionError as exc:
                raise _ConnectFailed(_failure(f"connection failed: {_reason(exc)}", retriable=True)) from exc
            except ConnectTimeoutError as exc:
                raise _ConnectFailed(
                    _failure(f"connect timeout after {_seconds(min(remaining, budget))}", retriable=True)
                ) from exc
            except ReadTimeoutError:
                return _failure(f"timeout after {_seconds(budget)}", retriable=True)
            except SSLError as exc:
                return _failure(f"TLS error: {_reason(exc)}", retriable=True)
            except (HTTPError, OSError) as exc:
                return _failure(f"connection error: {_reason(exc)}", retriable=True)

            exchange.record_response(response)
            try:
                while len(exchange.excerpt) < EXCERPT_BYTES and not exchange.aborted:
                    chunk = response.read1(EXCERPT_BYTES - len(exchange.excerpt))
                    if not chunk:
                        break
                    exchange.add_body(chunk)
            except (HTTPError, OSError):
                pass  # the status decides the outcome; a broken body only shortens the excerpt
            with_body = exchange.outcome_so_far()
            return with_body if with_body is not None else _failure("response lost", retriable=True)
        finally:
            if response is not None:
                response.close()
            pool.close()

    # ------------------------------------------------------------------------------------------ AWS

    def _lambda_work(self, target: Mapping[str, Any], delivery: Delivery) -> Callable[[], TargetOutcome]:
        event = {
            "job_id": delivery.job_id,
            "run_id": delivery.run_id,
            "attempt": delivery.attempt,
            "scheduled_for": format_timestamp(delivery.scheduled_for),
            "idempotency_key": delivery.run_id,
            "payload": delivery.payload,
        }
        event_bytes = _json_text(event).encode("utf-8")

        def work() -> TargetOutcome:
            try:
                response = self._client("lambda").invoke(
                    FunctionName=target["function"], InvocationType="RequestResponse", Payload=event_bytes
                )
                stream = response.get("Payload")
                data = b""
                if stream is not None:
                    try:
                        data = stream.read(EXCERPT_BYTES)
                    finally:
                        stream.close()
            except Exception as exc:
                return _aws_failure(exc)
            function_error = response.get("FunctionError")
            if function_error:
                return _failure(f"FunctionError: {function_error}", retriable=True, excerpt=_excerpt(data))
            return _success(_excerpt(data))

        return work

    def _sqs_work(
        self, target: Mapping[str, Any], delivery: Delivery, body_text: str
    ) -> Callable[[], TargetOutcome]:
        queue_url: str = target["queue_url"]
        params: dict[str, Any] = {
            "QueueUrl": queue_url,
            "MessageBody": body_text,
            "MessageAttributes": _message_attributes(delivery, body_text),
        }
        if queue_url.endswith(".fifo"):
            params.update(_fifo_params(delivery))
        return self._message_work("sqs", "send_message", params)

    def _sns_work(
        self, target: Mapping[str, Any], delivery: Delivery, body_text: str
    ) -> Callable[[], TargetOutcome]:
        topic_arn: str = target["topic_arn"]
        params: dict[str, Any] = {
            "TopicArn": topic_arn,
            "Message": body_text,
            "MessageAttributes": _message_attributes(delivery, body_text),
        }
        if topic_arn.endswith(".fifo"):
            params.update(_fifo_params(delivery))
        return self._message_work("sns", "publish", params)

    def _message_work(
        self, service: str, operation: str, params: dict[str, Any]
    ) -> Callable[[], TargetOutcome]:
        """SQS SendMessage and SNS Publish: one call, success carries the MessageId."""

        def work() -> TargetOutcome:
            try:
                response = getattr(self._client(service), operation)(**params)
            except Exception as exc:
                return _aws_failure(exc)
            return _success(json.dumps({"MessageId": response.get("MessageId")}))

        return work

    def _eventbridge_work(self, target: Mapping[str, Any], delivery: Delivery) -> Callable[[], TargetOutcome]:
        detail = {
            "payload": delivery.payload,
            "punctual": {
                "job_id": delivery.job_id,
                "run_id": delivery.run_id,
                "attempt": delivery.attempt,
                "scheduled_for": format_timestamp(delivery.scheduled_for),
                "idempotency_key": delivery.run_id,
            },
        }
        entry = {
            "EventBusName": target["bus"],
            "Source": target["source"],
            "DetailType": target["detail_type"],
            "Detail": _json_text(detail),
        }

        def work() -> TargetOutcome:
            try:
                response = self._client("events").put_events(Entries=[entry])
            except Exception as exc:
                return _aws_failure(exc)
            entries = response.get("Entries") or [{}]
            if response.get("FailedEntryCount", 0) > 0:
                code = entries[0].get("ErrorCode") or "FailedEntry"
                message = entries[0].get("ErrorMessage") or ""
                # A failed entry is retried unless its code is known to be permanent.
                retriable = _AWS_RETRIABLE.get(code, True)
                return _failure(code, retriable=retriable, excerpt=_excerpt(f"{code}: {message}".encode()))
            return _success(json.dumps({"EventId": entries[0].get("EventId")}))

        return work


def _reason(exc: BaseException) -> str:
    """The innermost message of a wrapped network error, which is the part that explains it."""
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__


def _message_attributes(delivery: Delivery, body_text: str) -> dict[str, dict[str, str]]:
    headers = delivery_headers(delivery, body_text.encode("utf-8"), datetime.now(UTC))
    return {name: {"DataType": "String", "StringValue": value} for name, value in headers.items()}


def _fifo_params(delivery: Delivery) -> dict[str, str]:
    # The deduplication id is the idempotency key, so a re-execution of the same run (after a worker crash)
    # is dropped by SQS/SNS within their 5-minute deduplication window instead of delivered twice.
    dedup = delivery.run_id if _DEDUP_ID.fullmatch(delivery.run_id) else None
    if dedup is None:
        dedup = hashlib.sha256(delivery.run_id.encode("utf-8")).hexdigest()
    group = delivery.job_id if _DEDUP_ID.fullmatch(delivery.job_id) else dedup
    return {"MessageGroupId": group, "MessageDeduplicationId": dedup}


def _aws_failure(exc: Exception) -> TargetOutcome:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "ClientError")
        message = str(error.get("Message") or "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        retriable = _AWS_RETRIABLE.get(code)
        if retriable is None:
            retriable = isinstance(status, int) and (status in (408, 429) or status >= 500)
        return _failure(code, retriable=retriable, excerpt=_excerpt(f"{code}: {message}".encode()))
    if isinstance(exc, BotoConnectTimeoutError | BotoReadTimeoutError):
        return _failure(f"timeout: {exc}", retriable=True)
    if isinstance(exc, ParamValidationError | NoCredentialsError | PartialCredentialsError):
        return _failure(f"{type(exc).__name__}: {exc}", retriable=False)
    if isinstance(exc, BotoCoreError | OSError):
        return _failure(f"{type(exc).__name__}: {exc}", retriable=True)
    return _failure(f"internal error: {type(exc).__name__}: {exc}", retriable=True)

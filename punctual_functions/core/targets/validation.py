"""Target validation: what a job's ``target`` may say, checked without network access or AWS.

The API needs only this module (the delivery code, urllib3 and botocore stay out of its cold start);
the executor uses :func:`normalize_target` too, leniently, for specs stored before a rule existed.
Every refusal is a :class:`TargetError` naming the field (``target.url``, ``target.headers``, ...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from punctual_functions.core.resources import MAX_JOB_TIMEOUT_SECONDS
from punctual_functions.core.ssrf_guard import NetworkPolicy, TargetError, parse_target_url
from punctual_functions.core.targets.outcome import IDEMPOTENCY_HEADER

__all__ = [
    "BUS_ARN",
    "BUS_NAME",
    "DEFAULT_EVENT_BUS",
    "DEFAULT_EVENT_DETAIL_TYPE",
    "DEFAULT_EVENT_SOURCE",
    "DEFAULT_HTTP_METHOD",
    "FUNCTION_NAME",
    "HEADER_NAME",
    "HTTP_METHODS",
    "MAX_HEADERS",
    "MAX_HEADER_NAME",
    "MAX_HEADER_VALUE",
    "MAX_LENGTHS",
    "MAX_TIMEOUT_SECONDS",
    "TARGET_TYPES",
    "TOPIC_ARN",
    "NetworkPolicy",
    "TargetError",
    "normalize_target",
    "target_region",
    "validate_target",
]

TARGET_TYPES: Final = ("http", "lambda", "sqs", "sns", "eventbridge")
HTTP_METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
DEFAULT_HTTP_METHOD: Final = "POST"
MAX_TIMEOUT_SECONDS: Final = MAX_JOB_TIMEOUT_SECONDS  # an HTTP call cannot outlast its attempt
DEFAULT_EVENT_BUS: Final = "default"
DEFAULT_EVENT_SOURCE: Final = "punctual"
DEFAULT_EVENT_DETAIL_TYPE: Final = "Punctual Job Run"
# The longest value each string field of an AWS target may have (the HTTP URL's is ssrf_guard's).
MAX_LENGTHS: Final = {
    "function": 170,
    "queue_url": 1024,
    "topic_arn": 1024,
    "bus": 1600,
    "source": 256,
    "detail_type": 128,
}

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
MAX_HEADERS: Final = 50
MAX_HEADER_NAME: Final = 256
MAX_HEADER_VALUE: Final = 8192
HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_FORBIDDEN: Final = re.compile(r"[\x00\r\n]")

# An AWS region as ARNs and endpoints spell it: us-east-1, us-gov-west-1, cn-north-1, eusc-de-east-1.
# A target's client is made for its region, so a malformed one is refused here rather than failing
# (or reaching the wrong region) at every delivery.
_REGION: Final = r"[a-z]{2,}(?:-[a-z]+)+-\d+"
FUNCTION_NAME: Final = re.compile(
    r"(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}((-gov)|(-iso[a-z]?))?-[a-z]+-\d:)?(\d{12}:)?"
    r"(function:)?[a-zA-Z0-9_.-]+(:(\$LATEST|[a-zA-Z0-9_-]+))?"
)
_QUEUE_PATH: Final = re.compile(r"/\d{12}/([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)")
TOPIC_ARN: Final = re.compile(rf"arn:aws[a-z-]*:sns:{_REGION}:\d{{12}}:[A-Za-z0-9_-]{{1,256}}(\.fifo)?")
BUS_NAME: Final = re.compile(r"[/.\-_A-Za-z0-9]{1,256}")
BUS_ARN: Final = re.compile(rf"arn:aws[a-z-]*:events:{_REGION}:\d{{12}}:event-bus/[/.\-_A-Za-z0-9]{{1,256}}")
_ARN_REGION: Final = re.compile(rf"arn:[^:]*:(?:sns|events):({_REGION}):")
# A function's region is named by its ARN, or by a partial ARN that goes on with the account or
# "function:" ("eu-west-1:123456789012:function:f"); "my-fn-1:live" is a name and an alias.
_FUNCTION_REGION: Final = re.compile(rf"arn:[^:]*:lambda:({_REGION}):|({_REGION}):(?:\d{{12}}:|function:)")
# The hosts an SQS queue URL may have: sqs.<region>.amazonaws.com (and .com.cn, .eu, FIPS, VPC endpoints,
# LocalStack's sqs.<region>.localhost.localstack.cloud) and the legacy <region>.queue.amazonaws.com;
# the legacy queue.amazonaws.com is us-east-1's.
_QUEUE_HOST_REGION: Final = re.compile(rf"(?:.+\.)?sqs(?:-fips)?\.({_REGION})\..+|({_REGION})\.queue\..+")
_LEGACY_US_EAST_1_QUEUE_HOST: Final = "queue.amazonaws.com"
_AWS_HOST: Final = re.compile(r"(?:.+\.)?amazonaws\.(?:com|com\.cn|eu)")


def _is_reserved_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in (IDEMPOTENCY_HEADER.lower(), "traceparent") or lowered.startswith(_RESERVED_PREFIX)


def validate_target(spec: Mapping[str, Any], policy: NetworkPolicy) -> dict[str, Any]:
    """The normalised target (defaults filled in), or TargetError naming the field. No network access."""
    return normalize_target(spec, policy, strict=True)


def normalize_target(spec: Mapping[str, Any], policy: NetworkPolicy, *, strict: bool) -> dict[str, Any]:
    """The normalised target; ``strict=False`` (the executor) drops reserved headers instead of refusing."""
    if not isinstance(spec, Mapping):
        raise TargetError("target", "must be an object")
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in TARGET_TYPES:
        raise TargetError("target.type", f"must be one of {', '.join(TARGET_TYPES)}")
    if kind == "http":
        return _normalize_http(spec, policy, strict=strict)
    if kind == "lambda":
        _check_keys(spec, kind, {"function"})
        function = _required_str(spec, "function", MAX_LENGTHS["function"])
        if not FUNCTION_NAME.fullmatch(function):
            raise TargetError("target.function", "must be a Lambda function name or ARN")
        return {"type": kind, "function": function}
    if kind == "sqs":
        _check_keys(spec, kind, {"queue_url"})
        queue_url = _required_str(spec, "queue_url", MAX_LENGTHS["queue_url"])
        parts = urlsplit(queue_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or not _QUEUE_PATH.fullmatch(parts.path):
            raise TargetError(
                "target.queue_url", "must be an SQS queue URL (https://sqs.<region>.../<account>/<name>)"
            )
        # An AWS host that names no region would send the run to the deployment's region, where a queue
        # of the same name may exist. Other hosts (an emulator's) are the deployment's region.
        if _AWS_HOST.fullmatch(parts.hostname or "") and _queue_region(queue_url) is None:
            raise TargetError(
                "target.queue_url",
                "the host must name the queue's region (https://sqs.<region>.amazonaws.com/...)",
            )
        return {"type": kind, "queue_url": queue_url}
    if kind == "sns":
        _check_keys(spec, kind, {"topic_arn"})
        topic_arn = _required_str(spec, "topic_arn", MAX_LENGTHS["topic_arn"])
        if not TOPIC_ARN.fullmatch(topic_arn):
            raise TargetError("target.topic_arn", "must be an SNS topic ARN")
        return {"type": kind, "topic_arn": topic_arn}
    _check_keys(spec, kind, {"bus", "source", "detail_type"})
    bus = _optional_str(spec, "bus", DEFAULT_EVENT_BUS, MAX_LENGTHS["bus"])
    if not (BUS_NAME.fullmatch(bus) or BUS_ARN.fullmatch(bus)):
        raise TargetError("target.bus", "must be an event bus name or ARN")
    source = _optional_str(spec, "source", DEFAULT_EVENT_SOURCE, MAX_LENGTHS["source"])
    if source.startswith("aws."):
        raise TargetError("target.source", "sources starting with 'aws.' are reserved for AWS services")
    detail_type = _optional_str(spec, "detail_type", DEFAULT_EVENT_DETAIL_TYPE, MAX_LENGTHS["detail_type"])
    return {"type": kind, "bus": bus, "source": source, "detail_type": detail_type}


def target_region(target: Mapping[str, Any]) -> str | None:
    """The region of the AWS resource a normalised target names, or None where it names none: a bare
    function or bus name, which Lambda and EventBridge resolve in the caller's (the deployment's) region,
    or a queue URL of an emulator."""
    kind = target["type"]
    if kind == "sqs":
        return _queue_region(str(target["queue_url"]))
    if kind == "lambda":
        found = _FUNCTION_REGION.match(str(target["function"]))
        return (found.group(1) or found.group(2)) if found else None
    name = {"sns": "topic_arn", "eventbridge": "bus"}.get(kind)
    found = _ARN_REGION.match(str(target[name])) if name is not None else None
    return found.group(1) if found else None


def _queue_region(queue_url: str) -> str | None:
    host = urlsplit(queue_url).hostname or ""
    if host == _LEGACY_US_EAST_1_QUEUE_HOST:
        return "us-east-1"
    found = _QUEUE_HOST_REGION.fullmatch(host)
    return (found.group(1) or found.group(2)) if found else None


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
    if len(raw) > MAX_HEADERS:
        raise TargetError("target.headers", f"at most {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in raw.items():
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name) or len(name) > MAX_HEADER_NAME:
            raise TargetError("target.headers", f"{name!r} is not a valid header name")
        if not isinstance(value, str):
            raise TargetError("target.headers", f"the value of {name} must be a string")
        if _HEADER_VALUE_FORBIDDEN.search(value) or len(value) > MAX_HEADER_VALUE:
            raise TargetError(
                "target.headers",
                f"the value of {name} must be at most {MAX_HEADER_VALUE} characters without CR, LF or NUL",
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

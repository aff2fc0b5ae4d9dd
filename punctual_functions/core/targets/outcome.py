"""The outcome model shared by every delivery: what one attempt is (:class:`Delivery`), what came of it
(:class:`TargetOutcome`), the identifying headers every delivery carries, and the helpers that build
outcomes and classify them as retriable or not.

The rule of thumb: throttling, server-side and network failures are retriable, anything that will fail
the same way again (a 404, a missing function, a denied permission, a refused address) is not.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from punctual_functions.core.model import scheduled_for_of
from punctual_functions.core.signing import SIGNATURE_HEADER, sign

__all__ = [
    "ALERT_HEADER",
    "EXCERPT_BYTES",
    "IDEMPOTENCY_HEADER",
    "Delivery",
    "TargetOutcome",
    "delivery_headers",
    "excerpt_of",
    "failure",
    "format_timestamp",
    "json_text",
    "seconds_text",
    "success",
    "traceparent",
    "traceparent_of",
    "xray_trace_id",
]

ALERT_HEADER: Final = "Punctual-Alert"
EXCERPT_BYTES: Final = 4096
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
_MAX_ERROR_CHARS: Final = 500


@dataclass(frozen=True)
class Delivery:
    """One attempt at delivering one run."""

    job_id: str
    run_id: str
    attempt: int  # 1-based
    scheduled_for: datetime  # aware
    payload: Any  # JSON value or None
    secret: str | None = None
    sampled: bool = True  # its trace is recorded (the traceparent's flag; punctual_functions/core/tracing.py)
    alert: str | None = None  # an alert about the run (punctual_functions/core/alerts.py), not the run itself

    @property
    def idempotency_key(self) -> str:
        """The run id; an alert's is its own per kind (``<run id>.alert-<kind>``), so a receiver or a
        FIFO topic that deduplicates on it keeps an alert apart from the run and from other kinds."""
        return self.run_id if self.alert is None else f"{self.run_id}.alert-{self.alert}"

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
    """What one attempt came to; ``retriable`` tells the worker whether another attempt can help."""

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


def traceparent(delivery: Delivery) -> str:
    """The W3C ``traceparent`` of an attempt: the trace is the run's (the same for every attempt and
    re-delivery, derived from its id), the parent span the attempt's, so a target's own spans join the
    run that called it and an attempt's retry shows as a sibling span of the same trace."""
    return traceparent_of(delivery.job_id, delivery.run_id, delivery.attempt, sampled=delivery.sampled)


def traceparent_of(job_id: str, run_id: str, attempt: int, *, sampled: bool = True) -> str:
    """The ``traceparent`` of attempt ``attempt`` of a run (see :func:`traceparent`).

    The trace id is also a valid X-Ray trace id (:func:`xray_trace_id`): its first 8 hex digits are
    the run's scheduled time in epoch seconds, as X-Ray's own ids carry the time of their request, the
    other 24 a digest of the job and run. So the worker's segment of each attempt
    (``punctual_functions/core/tracing.py``) and the target's own spans land in one trace, whichever of W3C or
    X-Ray the target speaks. The scheduled time comes from the run id, which carries it, so every
    worker, every attempt and every re-delivery derives the same ids without reading anything.
    """
    digest = hashlib.sha256(f"trace|{job_id}|{run_id}".encode()).hexdigest()
    try:
        epoch = int(scheduled_for_of(run_id).timestamp())
    except ValueError:
        # Only a run id not made by ``model.run_id_for`` (tests make such) lacks its time: the digest
        # then fills all of it.
        trace = digest[:32]
    else:
        # 8 hex digits hold epoch seconds until 2106; the mask keeps the width whatever the time.
        trace = f"{epoch & 0xFFFFFFFF:08x}{digest[:24]}"
    span = hashlib.sha256(f"span|{run_id}|{attempt}".encode()).hexdigest()[:16]
    # All-zero ids are invalid in W3C Trace Context; neither a scheduled time nor a digest will be
    # zero in practice, but the format must hold whatever they are.
    trace = trace if trace.strip("0") else "1" + trace[1:]
    span = span if span.strip("0") else "1" + span[1:]
    # The flag says whether Punctual records the run's trace (its X-Ray segments): a target whose
    # tracer follows its parent's decision records the same runs, so no trace lacks its root.
    return f"00-{trace}-{span}-{'01' if sampled else '00'}"


def xray_trace_id(traceparent: str) -> str:
    """The X-Ray form of a ``traceparent``'s trace id: ``1-<8 hex>-<24 hex>``, the same 32 digits."""
    trace = traceparent.split("-")[1]
    return f"1-{trace[:8]}-{trace[8:]}"


def delivery_headers(delivery: Delivery, body: bytes, now: datetime) -> dict[str, str]:
    """The headers every delivery carries; ``body`` is signed at ``now`` when the job has a secret."""
    headers = {
        IDEMPOTENCY_HEADER: delivery.idempotency_key,
        "Punctual-Job-Id": delivery.job_id,
        "Punctual-Run-Id": delivery.run_id,
        "Punctual-Attempt": str(delivery.attempt),
        "Punctual-Scheduled-For": format_timestamp(delivery.scheduled_for),
        "traceparent": traceparent(delivery),
    }
    if delivery.alert is not None:
        headers[ALERT_HEADER] = delivery.alert
    if delivery.secret:
        headers[SIGNATURE_HEADER] = sign(delivery.secret, body, now)
    return headers


def success(excerpt: str, status_code: int | None = None) -> TargetOutcome:
    """A successful outcome without its duration, which the executor fills in once the attempt is over."""
    return TargetOutcome(True, False, status_code, None, excerpt, 0)


def failure(
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


def excerpt_of(data: bytes) -> str:
    """The first 4 KiB of a response or error payload, as text."""
    return data[:EXCERPT_BYTES].decode("utf-8", errors="replace")


def json_text(value: Any) -> str:
    """Compact JSON of a payload or event, as sent to every target."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in a JSON "\ud800" escape) cannot be UTF-8 encoded; escaping keeps it.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text


def seconds_text(value: float) -> str:
    return f"{value:g}s"

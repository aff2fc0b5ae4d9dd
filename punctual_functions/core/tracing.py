"""One X-Ray segment per run attempt, in the run's own trace.

Every delivery carries a W3C ``traceparent`` derived from its run and attempt
(``targets.outcome.traceparent_of``): the trace id is the run's, and X-Ray compatible (its first 8 hex
digits are the scheduled time in epoch seconds), the span id the attempt's. For each attempt the
worker sends X-Ray a segment with exactly these ids, so a target's own spans, whose parent is that
span id, nest under the attempt that called them, and the attempts of one run (its retries) sit side
by side in one trace, with the job, run, attempt, outcome and lateness as annotations to search by.

Why a segment of its own and not a subsegment of the Lambda invocation's: the invocation's segment
is in Lambda's trace of an SQS batch, which holds several runs and is none of theirs; a subsegment
there would put the attempt in the wrong trace (its trace id goes into the metadata instead, to
find one from the other). Why not the X-Ray SDK or Powertools' Tracer: a dependency, and its import
on the worker's cold start, for one UDP datagram an attempt. The daemon's protocol is documented and
small: a header line, then the segment document, in one datagram to ``AWS_XRAY_DAEMON_ADDRESS``.

On only when ``AWS_XRAY_DAEMON_ADDRESS`` is set: Lambda sets it when active tracing is on (the stack
turns it on for every function); the local stack has no daemon, so there it is on only if you set
the variable to a daemon of your own. Off, it costs an environment lookup: no socket, no JSON.
Standard library only, and it never raises into the worker: a segment that cannot be sent is logged
at DEBUG and dropped, as UDP would drop it anyway.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import socket
from typing import Any, Final
from urllib.parse import urlsplit

from punctual_functions.core.model import Attempt, Job, Run
from punctual_functions.core.targets.outcome import traceparent_of, xray_trace_id

__all__ = [
    "DAEMON_ADDRESS_ENV",
    "SEGMENT_NAME",
    "attempt_segment",
    "attempt_span",
    "sampled",
    "udp_address",
]

DAEMON_ADDRESS_ENV: Final = "AWS_XRAY_DAEMON_ADDRESS"
# The Lambda invocation's own trace header, ``Root=1-...;Parent=...;Sampled=1``.
LAMBDA_TRACE_ENV: Final = "_X_AMZN_TRACE_ID"
# One name for every stage: ``service("punctual-worker")`` finds them all; the function's name is in
# the metadata. Not the function's own name, which Lambda's segment of the invocation already uses.
SEGMENT_NAME: Final = "punctual-worker"
# The daemon's header line: every datagram starts with it.
_HEADER: Final = b'{"format": "json", "version": 1}\n'
# Outcomes of an attempt that failed (attempt.outcome; RETRIABLE is a failure that will be retried).
_FAILED: Final = frozenset({"FAILED", "RETRIABLE"})
_ROOT = re.compile(r"(?:^|;)\s*Root=([^;]+)")

# The Powertools logger of the functions is the standard library's logger of this name.
_log = logging.getLogger("punctual")


def sampled(run_id: str, percent: int) -> bool:
    """Whether the run's trace is recorded: ``percent`` of runs (the ``run_trace_percent`` setting),
    chosen by the run id, so every attempt and every worker decides alike. X-Ray bills each trace
    recorded ($5 a million): one a run would add about as much as a run costs otherwise."""
    if percent >= 100:
        return True
    return int(hashlib.sha256(f"sample|{run_id}".encode()).hexdigest()[:8], 16) % 100 < percent


def attempt_span(
    job: Job, run: Run, attempt: Attempt, *, percent: int = 100, address: str | None = None
) -> None:
    """Send the segment of ``attempt`` of ``run`` to the X-Ray daemon, if tracing is on and the run
    is among the ``percent`` sampled (``sampled``).

    ``address`` is the daemon's (``AWS_XRAY_DAEMON_ADDRESS`` when not given); without one this does
    nothing. Never raises: tracing must not cost a run its outcome.
    """
    value = address if address is not None else os.environ.get(DAEMON_ADDRESS_ENV)
    if not value or not sampled(run.run_id, percent):
        return
    try:
        target = udp_address(value)
        if target is None:
            _log.debug("X-Ray daemon address not understood", extra={"address": value})
            return
        document = attempt_segment(job, run, attempt, lambda_trace=os.environ.get(LAMBDA_TRACE_ENV))
        _send(target, _HEADER + json.dumps(document, separators=(",", ":")).encode())
    except Exception as error:  # a lost segment is not worth a lost outcome
        _log.debug(
            "X-Ray segment not sent",
            extra={"job_id": run.job_id, "run_id": run.run_id, "error": f"{type(error).__name__}: {error}"},
        )


def attempt_segment(
    job: Job, run: Run, attempt: Attempt, *, lambda_trace: str | None = None
) -> dict[str, Any]:
    """The segment document of one attempt (``docs.aws.amazon.com/xray``, "segment documents").

    Its ``id`` is the span id of the ``traceparent`` the target saw, its ``trace_id`` that trace in
    X-Ray's form; no ``parent_id`` (the attempt is where the run's trace begins) and no ``origin`` (a
    custom segment is none of the AWS resource types X-Ray knows).
    """
    header = traceparent_of(run.job_id, run.run_id, attempt.number)
    outcome = attempt.outcome or "UNKNOWN"
    failed = outcome in _FAILED
    status = attempt.status_code
    annotations: dict[str, str | int] = {
        "job_id": run.job_id,
        "run_id": run.run_id,
        "attempt": attempt.number,
        "outcome": outcome,
    }
    if run.lateness_ms is not None:  # annotation values are strings, numbers or booleans, never null
        annotations["lateness_ms"] = run.lateness_ms
    target_type = str(job.target.get("type", ""))
    punctual: dict[str, Any] = {"target_type": target_type, "kind": run.kind.value}
    if attempt.error:
        punctual["error"] = attempt.error
    if attempt.duration_ms is not None:
        punctual["duration_ms"] = attempt.duration_ms
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    if function:
        punctual["function"] = function
    root = _root_of(lambda_trace)
    if root:
        punctual["lambda_trace"] = root
    finished = attempt.finished_at or attempt.started_at
    segment: dict[str, Any] = {
        "name": SEGMENT_NAME,
        "id": header.split("-")[2],
        "trace_id": xray_trace_id(header),
        "start_time": attempt.started_at.timestamp(),
        "end_time": finished.timestamp(),
        "annotations": annotations,
        "metadata": {"punctual": punctual},
    }
    if failed:
        # X-Ray's flags follow HTTP's classes: ``error`` for any failed attempt (the call did not do
        # its job), ``fault`` too when the target's side failed (5xx), ``throttle`` for a 429.
        segment["error"] = True
        if status is not None and status >= 500:
            segment["fault"] = True
        if status == 429:
            segment["throttle"] = True
    if target_type == "http":
        http: dict[str, Any] = {"request": {"method": str(job.target.get("method", "")), "url": _url_of(job)}}
        if status is not None:
            http["response"] = {"status": status}
        segment["http"] = http
    return segment


@functools.lru_cache(maxsize=8)
def udp_address(value: str) -> tuple[str, int] | None:
    """The UDP ``(host, port)`` of a daemon address: ``host:port``, or the SDKs' two-part form
    ``tcp:host:port udp:host:port`` (either order; a comma is taken as a separator too). None for
    anything else."""
    parts = value.replace(",", " ").split()
    if len(parts) > 1 or (parts and parts[0].startswith(("udp:", "tcp:"))):
        chosen = [part[len("udp:") :] for part in parts if part.startswith("udp:")]
        if len(chosen) != 1:
            return None
        parts = chosen
    if len(parts) != 1:
        return None
    host, _, port = parts[0].rpartition(":")
    host = host.strip("[]")  # an IPv6 literal, [::1]:2000
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _send(address: tuple[str, int], datagram: bytes) -> None:
    """One datagram, from a socket of its own: nothing to keep across Lambda's freezes or share
    between the threads of a batch. Non-blocking: a full buffer drops the segment, never stalls."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(*address, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setblocking(False)
        sock.sendto(datagram, sockaddr)


def _root_of(header: str | None) -> str | None:
    """The ``Root`` trace id of an ``X-Amzn-Trace-Id`` header."""
    match = _ROOT.search(header or "")
    return match.group(1).strip() if match else None


def _url_of(job: Job) -> str:
    """The target's URL as stored, without its query, fragment or credentials: those may carry
    secrets, and X-Ray keeps what it is sent for 30 days."""
    parts = urlsplit(str(job.target.get("url", "")))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"

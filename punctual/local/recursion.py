"""Lambda's recursive-loop detection, imitated by the local stack.

On AWS, an invocation's X-Ray trace header (the runtime's ``_X_AMZN_TRACE_ID``) carries a
``Lineage`` field: how many invocations of the function the chain of events that led to it has made.
botocore sends the header with each request the invocation makes (``X-Amzn-Trace-Id``), SQS keeps it
with a message sent with it (the ``AWSTraceHeader`` attribute), and the event source mapping invokes
the function with it. A message that would invoke the same function a 17th time in one chain is not
processed when the function's ``RecursiveLoop`` is ``Terminate`` (the default): it goes to the
queue's dead-letter queue. The worker continues chains of its own on its own queue (the next
occurrence of a buffered backfill, a slot handed on under a target limit, a run woken after the one
it waited for), so the deployment sets ``Allow`` on the worker (``WORKER_RECURSIVE_LOOP``).

The local stack does the same, in three places:

- the emulator keeps a ``SendMessage``'s or ``SendMessageBatch``'s ``X-Amzn-Trace-Id`` header with
  its messages as their ``AWSTraceHeader`` (moto keeps only an explicit attribute, and none of a batch);
- a worker process adds the header of the invocation in progress to the requests the invocation
  makes (``install``): Lambda runs one invocation per process and reads an environment variable;
  here invocations share a process, so the header follows the invocation's context (its records'
  threads run in it: ``punctual_functions/worker/handler.py``);
- the event source counts each message's chain (``Chains``): a message whose chain has invoked the
  worker 16 times goes to the dead-letter queue unless the worker allows recursive loops.
"""

from __future__ import annotations

import contextvars
import hashlib
import re
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

# Lambda stops the invocation a chain would make of a function for the 17th time.
MAX_CHAIN_INVOCATIONS: Final = 16
TRACE_HEADER: Final = "X-Amzn-Trace-Id"
SYSTEM_ATTRIBUTE: Final = "AWSTraceHeader"

RecursiveLoop = Literal["Allow", "Terminate"]

# The trace header of the invocation running in this context (None outside an invocation).
_invocation_header: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "invocation_header", default=None
)
_LINEAGE = re.compile(r"(?:^|;)Lineage=([0-9a-f]{8}):(\d+)")


def function_hash(function_name: str) -> str:
    """A function's mark in the lineage (Lambda's is a hash of the function too)."""
    return hashlib.sha256(function_name.encode()).hexdigest()[:8]


def chain_count(header: str | None, function: str) -> int:
    """How many invocations of ``function`` (its ``function_hash``) the chain of ``header`` has made."""
    if not header:
        return 0
    found = _LINEAGE.search(header)
    if found is None or found.group(1) != function:
        return 0
    return int(found.group(2))


def header_for(function: str, count: int) -> str:
    """The trace header of an invocation that is its chain's ``count``-th of ``function``."""
    root = uuid.uuid4().hex
    return (
        f"Root=1-{root[:8]}-{root[8:32]};Parent={uuid.uuid4().hex[:16]};Sampled=0;Lineage={function}:{count}"
    )


@dataclass(frozen=True)
class Verdict:
    """What the event source does with a batch: the messages it invokes with, under ``header``, and
    those the detection stops."""

    invoke: list[dict[str, Any]]
    stopped: list[dict[str, Any]]
    header: str


class Chains:
    """The event source's count of each message's chain, for one function."""

    def __init__(self, function_name: str, recursive_loop: RecursiveLoop) -> None:
        self.function = function_hash(function_name)
        self.recursive_loop = recursive_loop

    def judge(self, messages: Iterable[dict[str, Any]]) -> Verdict:
        invoke: list[dict[str, Any]] = []
        stopped: list[dict[str, Any]] = []
        longest = 0
        for message in messages:
            count = chain_count((message.get("Attributes") or {}).get(SYSTEM_ATTRIBUTE), self.function)
            if count >= MAX_CHAIN_INVOCATIONS and self.recursive_loop == "Terminate":
                stopped.append(message)
                continue
            invoke.append(message)
            longest = max(longest, count)
        return Verdict(invoke, stopped, header_for(self.function, longest + 1))


class Invocation:
    """``with Invocation(header):`` the requests made in this context carry ``header``."""

    def __init__(self, header: str) -> None:
        self.header = header
        self._token: contextvars.Token[str | None] | None = None

    def __enter__(self) -> Invocation:
        self._token = _invocation_header.set(self.header)
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._token is not None
        _invocation_header.reset(self._token)


def _add_invocation_header(params: dict[str, Any], **_kwargs: Any) -> None:
    """botocore's ``before-call`` handler: what its own ``add_recursion_detection_header`` does on
    Lambda, from the invocation's context instead of the process's environment."""
    header = _invocation_header.get()
    if header is not None:
        params["headers"].setdefault(TRACE_HEADER, header)


_installed = threading.Lock()


def install() -> None:
    """Every botocore session this process creates from now on adds the invocation's header."""
    from botocore import handlers

    with _installed:
        entry = ("before-call", _add_invocation_header)
        if entry not in handlers.BUILTIN_HANDLERS:
            handlers.BUILTIN_HANDLERS.append(entry)


# ------------------------------------------------------------------------------------ the emulator

# The trace header of the SQS request the emulator is serving on this thread.
_request_header = threading.local()


class TraceHeaders:
    """WSGI middleware: an SQS request's ``X-Amzn-Trace-Id``, for ``_send_message`` to keep."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        _request_header.value = environ.get("HTTP_X_AMZN_TRACE_ID")
        try:
            return self.app(environ, start_response)
        finally:
            _request_header.value = None


def keep_trace_headers(backend_class: Any) -> None:
    """moto's ``SQSBackend.send_message`` (which a batch calls for each entry), keeping the request's
    trace header as the message's ``AWSTraceHeader`` unless the sender set that attribute itself."""
    original = backend_class.send_message
    if getattr(original, "keeps_trace_headers", False):
        return

    def send_message(
        self: Any, *args: Any, system_attributes: dict[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        header = getattr(_request_header, "value", None)
        if header and not (system_attributes or {}).get(SYSTEM_ATTRIBUTE):
            system_attributes = {
                **(system_attributes or {}),
                SYSTEM_ATTRIBUTE: {"DataType": "String", "StringValue": header},
            }
        return original(self, *args, system_attributes=system_attributes, **kwargs)

    send_message.keeps_trace_headers = True  # type: ignore[attr-defined]
    backend_class.send_message = send_message

"""The :class:`TargetExecutor`: one delivery against its target, dispatched by target type, bounded by
the attempt's time budget and stoppable by a cancel.

The executor never raises for a target failure; it returns a :class:`TargetOutcome` whose ``retriable``
flag tells the worker whether another attempt can help.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from punctual_functions.core.lifecycle import CANCELLED_ERROR
from punctual_functions.core.ssrf_guard import ForbiddenAddressError, NetworkPolicy, TargetError
from punctual_functions.core.targets.aws import AwsDeliveries
from punctual_functions.core.targets.exchange import Exchange
from punctual_functions.core.targets.http import HttpDelivery
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome, failure, json_text, seconds_text
from punctual_functions.core.targets.staged import HttpWork
from punctual_functions.core.targets.validation import normalize_target
from punctual_functions.core.templating import has_templates, render, values_of

__all__ = ["TargetExecutor"]

_CANCEL_POLL_SECONDS: Final = 0.02


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
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self._http = HttpDelivery(policy, user_agent, ca_certs)
        self._aws = AwsDeliveries(self._client)

    def _client(self, service: str) -> Any:
        with self._clients_lock:
            client = self._clients.get(service)
            if client is None:
                client = self._clients[service] = self._client_factory(service)
            return client

    def prepare(self, spec: Mapping[str, Any], timeout_seconds: float) -> None:
        """A delivery to this target is due within a moment: open its connection now, in the
        background (HTTP targets; ``punctual_functions/core/targets/warm.py``). Never fails: a warm-up that
        does not work leaves the delivery to connect, as without it."""
        if spec.get("type") != "http" or has_templates({"url": spec.get("url")}, None):
            return

        def warm() -> None:
            try:
                target = normalize_target(spec, self._policy, strict=False)
                budget = float(timeout_seconds)
                if target.get("timeout_seconds") is not None:
                    budget = min(budget, float(target["timeout_seconds"]))
                self._http.prepare(target, budget)
            except Exception:
                return

        threading.Thread(target=warm, name="punctual-warm", daemon=True).start()

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
        *,
        wait: Callable[[], None] | None = None,
    ) -> TargetOutcome:
        """Deliver once and report how it went; never raises for a failure of the target.

        The attempt is bounded by ``timeout_seconds`` (the job's timeout) and, for HTTP, by the target's
        own timeout, whichever is smaller. Setting ``cancel`` ends the wait at once with a non-retriable
        "cancelled" outcome (an HTTP request in flight is aborted; an AWS call already sent may still
        complete on the AWS side).

        ``wait`` (the worker's wait for the run's second) is called on the delivery's own thread just
        before the request goes out: the request is composed (template, target, body, headers, its
        signature) and its thread started before it, so at the second only the request is sent. The
        time bound counts from the end of the wait.
        """
        started = time.monotonic()
        if has_templates(spec, delivery.payload):  # {{run_id}} and the like, filled in for this attempt
            spec, payload = render(spec, delivery.payload, values_of(delivery))
            delivery = replace(delivery, payload=payload)
        try:
            target = normalize_target(spec, self._policy, strict=False)
        except ForbiddenAddressError as exc:
            return self._fail(failure(f"blocked: {exc.reason}", retriable=False), wait)
        except TargetError as exc:
            return self._fail(failure(f"invalid target: {exc}", retriable=False), wait)
        try:
            body_text = json_text(delivery.payload)
        except (TypeError, ValueError) as exc:
            return self._fail(failure(f"payload is not valid JSON: {exc}", retriable=False), wait)

        budget = float(timeout_seconds)
        if target["type"] == "http" and target.get("timeout_seconds") is not None:
            budget = min(budget, float(target["timeout_seconds"]))
        if cancel is not None and cancel.is_set():
            return self._finish(failure(CANCELLED_ERROR, retriable=False), started)
        if not budget > 0:
            return self._fail(failure(f"timeout after {seconds_text(budget)}", retriable=True), wait)

        exchange: Exchange | None = None
        staging: HttpWork | None = None
        work: Callable[[], TargetOutcome]
        kind = target["type"]
        if kind == "http":
            exchange = Exchange()
            work = staging = self._http.work(
                target=target,
                delivery=delivery,
                body_text=body_text,
                budget=budget,
                exchange=exchange,
            )
        elif kind == "lambda":
            work = self._aws.lambda_work(target, delivery)
        elif kind == "sqs":
            work = self._aws.sqs_work(target, delivery, body_text)
        elif kind == "sns":
            work = self._aws.sns_work(target, delivery, body_text)
        else:
            work = self._aws.eventbridge_work(target, delivery)
        return self._run_bounded(work, budget, started, cancel, exchange, wait, staging)

    def _fail(self, outcome: TargetOutcome, wait: Callable[[], None] | None) -> TargetOutcome:
        """A delivery that fails before any request (a blocked or invalid target, a payload that is
        not JSON) fails at its moment, not before it: its attempt's times stay in order."""
        if wait is not None:
            wait()
        return self._finish(outcome, time.monotonic())

    @staticmethod
    def _finish(outcome: TargetOutcome, started: float) -> TargetOutcome:
        return replace(outcome, duration_ms=round((time.monotonic() - started) * 1000))

    def _run_bounded(
        self,
        work: Callable[[], TargetOutcome],
        budget: float,
        started: float,
        cancel: threading.Event | None,
        exchange: Exchange | None,
        wait: Callable[[], None] | None = None,
        staging: HttpWork | None = None,
    ) -> TargetOutcome:
        """Run ``work`` in its own thread (after ``wait``) so that a deadline or a cancel can end the
        wait at any point. An HTTP request is staged before the wait (``HttpWork.stage``): at the
        second only its bytes are written.

        Socket timeouts alone would not do: they bound each read, not the whole exchange, so a target
        trickling one byte at a time could hold a worker forever.
        """
        results: list[TargetOutcome] = []
        done = threading.Event()
        stopped = threading.Event()
        began: list[float | None] = [started if wait is None else None]  # when the request went out

        def run() -> None:
            try:
                if wait is not None:
                    if staging is not None:
                        staging.stage()
                    wait()
                    began[0] = time.monotonic()
                if not stopped.is_set():
                    results.append(work())
            except Exception as exc:
                results.append(failure(f"internal error: {type(exc).__name__}: {exc}", retriable=True))
            finally:
                if staging is not None:
                    staging.close()
                if exchange is not None:
                    exchange.release()
                done.set()

        threading.Thread(target=run, name="punctual-target", daemon=True).start()
        stop: str | None = None
        while not done.is_set():
            if cancel is not None and cancel.is_set():
                stop = "cancelled"
                break
            sent = began[0]
            if sent is None:  # still waiting for its moment: only a cancel ends that
                done.wait(_CANCEL_POLL_SECONDS)
                continue
            remaining = sent + budget - time.monotonic()
            if remaining <= 0:
                stop = "timeout"
                break
            done.wait(remaining if cancel is None else min(remaining, _CANCEL_POLL_SECONDS))
        sent = began[0] if began[0] is not None else started
        if done.is_set() and results:
            return self._finish(results[0], sent)
        stopped.set()

        answered: TargetOutcome | None = None
        if exchange is not None:
            exchange.abort()
            answered = exchange.outcome_so_far()
        if answered is not None:
            return self._finish(answered, sent)
        if stop == "cancelled":
            return self._finish(failure(CANCELLED_ERROR, retriable=False), sent)
        return self._finish(failure(f"timeout after {seconds_text(budget)}", retriable=True), sent)

    # ------------------------------------------------------------------------------------------ HTTP

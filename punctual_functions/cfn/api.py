"""The Punctual API as the ``Job`` custom resource's handler calls it (``job_resource.JobsApi``):
over HTTPS, each request signed by ``sign`` (SigV4 with the handler's role on AWS; a bearer token on
the local stack), a refusal raised as ``Refused`` with the API's status, field and reason.

A stack's first deploy calls the API moments after creating it and the roles that call it, so the
first answers may be transient: API Gateway's own ``403`` while the caller's policy propagates and
its ``404`` while a route is not live yet (both without the API's ``reason``), ``429`` in an account
whose small concurrency quota the new functions share, ``5xx`` from a cold or throttled API, or no
answer at all. Such a request is sent again, with jittered exponential backoff (never sooner than a
``Retry-After``), until ``RETRY_FOR_SECONDS`` have passed; the API's own refusals (a ``404`` for a
job that is gone, a ``422`` naming a field) are answers, and are never retried. Sending again is
safe: a create carries its Idempotency-Key, and the other requests are idempotent.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote, urlencode

import urllib3
from urllib3.exceptions import HTTPError

from punctual_functions.cfn.job_resource import Refused
from punctual_functions.core.clock import SYSTEM_CLOCK

# Adds the request's authentication to its headers: (method, url, body, headers) -> headers.
Sign = Callable[[str, str, bytes | None, dict[str, str]], dict[str, str]]
# Well within the function's own timeout: a create that reached the API answers CloudFormation.
REQUEST_TIMEOUT_SECONDS = 10.0
# How long a request is sent again while its answers are transient; the function's timeout
# (ON_EVENT_TIMEOUT, punctual/cdk/job_provider.py) leaves room for one more request after it.
RETRY_FOR_SECONDS: Final = 120.0
# The backoff: the n-th wait is random between 0 and min(CAP, BASE * 2**n) seconds (full jitter).
BACKOFF_BASE_SECONDS: Final = 0.5
BACKOFF_CAP_SECONDS: Final = 10.0


def transient(status: int, answer: Mapping[str, Any]) -> bool:
    """Whether an answer may differ if asked again in a moment. The API's own errors carry a
    ``reason``; API Gateway's (a policy or a route not in force yet) carry only a ``message``."""
    if status == 429 or status >= 500:
        return True
    return status in (403, 404) and "reason" not in answer


def backoff(attempt: int, rng: Callable[[float, float], float] = random.uniform) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (full jitter)."""
    return rng(0.0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))


class HttpJobsApi:
    def __init__(
        self,
        endpoint: str,
        sign: Sign,
        timeout: float = REQUEST_TIMEOUT_SECONDS,
        *,
        retry_for: float = RETRY_FOR_SECONDS,
        sleep: Callable[[float], None] = SYSTEM_CLOCK.sleep,
        monotonic: Callable[[], float] = SYSTEM_CLOCK.monotonic,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.sign = sign
        self.http = urllib3.PoolManager(timeout=urllib3.Timeout(total=timeout), retries=False)
        self.retry_for = retry_for
        self.sleep = sleep
        self.monotonic = monotonic

    def create(self, body: Mapping[str, Any], idempotency_key: str) -> Mapping[str, Any]:
        return self._call("POST", "/v1/jobs", body, {"Idempotency-Key": idempotency_key})

    def get(self, job_id: str) -> Mapping[str, Any]:
        return self._call("GET", f"/v1/jobs/{quote(job_id, safe='')}")

    def patch(self, job_id: str, changes: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._call("PATCH", f"/v1/jobs/{quote(job_id, safe='')}", changes)

    def cancel(self, job_id: str) -> None:
        self._call("DELETE", f"/v1/jobs/{quote(job_id, safe='')}")

    def tagged(self, key: str, value: str) -> list[Mapping[str, Any]]:
        found: list[Mapping[str, Any]] = []
        cursor: str | None = None
        while True:
            query = urlencode(
                {"tag": f"{key}={value}", "limit": 100, **({"cursor": cursor} if cursor else {})}
            )
            page = self._call("GET", f"/v1/jobs?{query}")
            found.extend(page.get("items") or [])
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Mapping[str, Any]:
        url = self.endpoint + path
        data = json.dumps(body).encode() if body is not None else None
        sent = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        deadline = self.monotonic() + self.retry_for
        attempt = 0
        while True:
            try:
                # Signed afresh each time: a SigV4 signature is good for minutes only.
                response = self.http.request(
                    method, url, body=data, headers=self.sign(method, url, data, sent)
                )
            except HTTPError:  # no answer (refused, reset, timed out): a create may have reached it
                if self.monotonic() >= deadline:
                    raise
                self._wait(attempt, None, deadline)
                attempt += 1
                continue
            answer = _answer_of(response.data)
            if response.status < 400:
                return answer
            if transient(response.status, answer) and self.monotonic() < deadline:
                self._wait(attempt, response.headers.get("Retry-After"), deadline)
                if self.monotonic() < deadline:
                    attempt += 1
                    continue
            reason = " ".join(
                str(answer.get("reason") or answer.get("message") or f"HTTP {response.status}").split()
            )
            raise Refused(response.status, reason[:500], answer.get("field"))

    def _wait(self, attempt: int, retry_after: str | None, deadline: float) -> None:
        wait = backoff(attempt)
        if retry_after and retry_after.strip().isdigit():
            wait = max(wait, float(retry_after))
        self.sleep(max(0.0, min(wait, deadline - self.monotonic())))


def _answer_of(data: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(data) if data else {}
    except ValueError:
        return {"message": data[:200].decode(errors="replace")}
    return answer if isinstance(answer, dict) else {"message": str(answer)[:200]}

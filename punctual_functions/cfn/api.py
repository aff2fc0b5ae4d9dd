"""The Punctual API as the ``Job`` custom resource's handler calls it (``job_resource.JobsApi``):
over HTTPS, each request signed by ``sign`` (SigV4 with the handler's role on AWS; a bearer token on
the local stack), a refusal raised as ``Refused`` with the API's status, field and reason."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from punctual_functions.cfn.job_resource import Refused

# Adds the request's authentication to its headers: (method, url, body, headers) -> headers.
Sign = Callable[[str, str, bytes | None, dict[str, str]], dict[str, str]]
# Well within the function's own timeout: a create that reached the API answers CloudFormation.
REQUEST_TIMEOUT_SECONDS = 10.0


class HttpJobsApi:
    def __init__(self, endpoint: str, sign: Sign, timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.sign = sign
        self.http = urllib3.PoolManager(timeout=urllib3.Timeout(total=timeout), retries=False)

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
        response = self.http.request(method, url, body=data, headers=self.sign(method, url, data, sent))
        try:
            answer = json.loads(response.data) if response.data else {}
        except ValueError:
            answer = {"reason": response.data[:200].decode(errors="replace")}
        if not isinstance(answer, dict):
            answer = {"reason": str(answer)[:200]}
        if response.status >= 400:
            reason = " ".join(
                str(answer.get("reason") or answer.get("message") or f"HTTP {response.status}").split()
            )
            raise Refused(response.status, reason[:500], answer.get("field"))
        return answer

"""A scripted stand-in for the Punctual API over HTTP, and answers as the local stack gave them: what the
typed client's unit tests read (tests/unit/test_client_typed*.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

# Answers as the local stack gave them (a one-off that ran, and its run).
JOB: dict[str, Any] = {
    "job_id": "job_f2c8f1a739e14a1995417e05_202611270115s2",
    "name": "smoke",
    "status": "COMPLETED",
    "schedule": {
        "at": "2026-11-27T01:15:52.808Z",
        "timezone": "UTC",
        "misfire": "run_once",
        "overlap": "allow",
        "catchup_seconds": None,
        "calendar": None,
        "on_excluded": None,
    },
    "target": {"type": "http", "url": "http://127.0.0.1:8000/v1/health", "method": "GET", "headers": {}},
    "payload": None,
    "retry": {"max_attempts": 3, "backoff_seconds": 5.0, "max_backoff_seconds": 600.0},
    "timeout_seconds": 30,
    "jitter_seconds": 0,
    "pause_on_failures": None,
    "max_runs": None,
    "max_concurrent": None,
    "alerts": None,
    "dead_letter": None,
    "remaining_runs": None,
    "on_complete": "keep",
    "delete_after_days": None,
    "deletes_at": None,
    "pause": None,
    "tags": {"t": "x"},
    "has_signing_secret": False,
    "next_run_at": None,
    "upcoming": [],
    "last_run": {
        "run_id": "20261127T011552.808Z-15e3fea8",
        "status": "SUCCEEDED",
        "scheduled_for": "2026-11-27T01:15:52.808Z",
        "finished_at": "2026-11-27T01:15:52.810Z",
        "lateness_ms": 0,
        "attempt": 1,
        "error": None,
    },
    "run_counts": {"SUCCEEDED": 1},
    "version": 1,
    "created_at": "2026-11-27T01:15:50.068Z",
    "updated_at": "2026-11-27T01:15:50.068Z",
}
RUN: dict[str, Any] = {
    "run_id": "20261127T011552.808Z-15e3fea8",
    "job_id": JOB["job_id"],
    "status": "SUCCEEDED",
    "kind": "scheduled",
    "scheduled_for": "2026-11-27T01:15:52.808Z",
    "queued_at": "2026-11-27T01:15:50.092Z",
    "started_at": "2026-11-27T01:15:52.808Z",
    "finished_at": "2026-11-27T01:15:52.810Z",
    "lateness_ms": 0,
    "jitter_ms": 0,
    "reason": None,
    "covers": 1,
    "covers_until": None,
    "note": None,
    "by": None,
    "overlap_with": None,
    "calendar": None,
    "moved_from": [],
    "limited_by": None,
    "limited_since": None,
    "limited_ms": None,
    "attempt": 1,
    "duration_ms": 2,
    "executions": 1,
    "next_attempt_at": None,
    "error": None,
    "attempts": [
        {
            "attempt": 1,
            "started_at": "2026-11-27T01:15:52.808Z",
            "finished_at": "2026-11-27T01:15:52.809Z",
            "outcome": "SUCCEEDED",
            "duration_ms": 2,
            "status_code": 200,
            "error": None,
            "response": '{"status":"ok"}',
        }
    ],
}

Answer = tuple[int, Any, dict[str, str]]  # status, JSON body, headers


def unscripted(_query: dict[str, str], _body: Any) -> Answer:
    return 404, {"error": "not_found", "field": "path", "reason": "not in the script"}, {}


class ScriptedApi:
    """An HTTP server answering each ``(method, path)`` with what its script returns for the request's
    query and body; every request is kept (method, path, query, headers, JSON body)."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], Callable[[dict[str, str], Any], Answer]] = {}
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                url = urlsplit(self.path)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                query = dict(parse_qsl(url.query))
                api.requests.append(
                    {
                        "method": self.command,
                        "path": url.path,
                        "query": query,
                        "headers": dict(self.headers.items()),
                        "body": body,
                    }
                )
                script = api.script.get((self.command, url.path), unscripted)
                status, payload, headers = script(query, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def on(
        self, method: str, path: str, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        self.script[(method, path)] = lambda _query, _body: (status, body, headers or {})


@contextmanager
def scripted_api() -> Iterator[ScriptedApi]:
    """A ``ScriptedApi`` serving on a free port, for the block."""
    api = ScriptedApi()
    threading.Thread(target=api.server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()

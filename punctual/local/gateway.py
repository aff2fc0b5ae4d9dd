"""The local API Gateway: HTTP requests become REST API proxy events for the same api handler.

Authentication is what API Gateway plus an authorizer would do: a bearer token from
``PUNCTUAL_TOKENS`` becomes the request's principal; without one, protected routes get 401 before the
handler runs.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from punctual.console.assets import console_answer, is_console_path
from punctual.local.httpserver import LocalHTTPServer, reply
from punctual_functions.core.observability import logger
from punctual_functions.core.resources import WORKER_TIMEOUT_SECONDS

PUBLIC_PATHS = ("/v1/health", "/openapi.json", "/docs")
# Swagger UI's script and style, under /docs/.
PUBLIC_PREFIXES = ("/docs/",)
# API Gateway's own limit on a request's payload: the API's smaller ones (64 KiB; 1 MiB for a batch of
# jobs) are its handler's to answer, as on AWS.
MAX_BODY_BYTES = 10 * 1024 * 1024
# API Gateway answers 504 when its integration has not answered in 29 s (the api function's timeout
# is the same), and 502 when the function's answer is over Lambda's 6 MB.
INTEGRATION_TIMEOUT_SECONDS = 29.0
LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024


@dataclass
class LambdaContext:
    """Enough of Lambda's context object for Powertools and the worker's time budget."""

    function_name: str = "punctual-api-local"
    memory_limit_in_mb: int = 512
    aws_request_id: str = ""
    # The function's timeout: an invocation has this long from when its context is made.
    timeout_seconds: float = WORKER_TIMEOUT_SECONDS
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.started + self.timeout_seconds - time.monotonic()) * 1000))

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"


def build_event(
    method: str, raw_path: str, headers: dict[str, str], body: bytes, principal: str | None
) -> dict[str, Any]:
    parts = urlsplit(raw_path)
    query = parse_qsl(parts.query, keep_blank_values=True)
    multi: dict[str, list[str]] = {}
    for key, value in query:
        multi.setdefault(key, []).append(value)
    try:
        text = body.decode("utf-8")
        encoded = False
    except UnicodeDecodeError:
        text = base64.b64encode(body).decode()
        encoded = True
    request_id = uuid.uuid4().hex
    return {
        "resource": parts.path,
        "path": parts.path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {key: [value] for key, value in headers.items()},
        "queryStringParameters": {key: values[-1] for key, values in multi.items()} or None,
        "multiValueQueryStringParameters": multi or None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": parts.path,
            "httpMethod": method,
            "path": parts.path,
            "stage": "local",
            "requestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "accountId": "123456789012",
            "apiId": "local",
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent", "")},
            "authorizer": {"principalId": principal} if principal else None,
        },
        "body": text if body else None,
        "isBase64Encoded": encoded,
    }


def make_handler_class(
    tokens: dict[str, str], api_handler: Any, timeout_seconds: float = INTEGRATION_TIMEOUT_SECONDS
) -> type[BaseHTTPRequestHandler]:
    # A Lambda execution environment serves one request at a time, and so does the api process here
    # (the handler's service and its clients are shared). Connections are still accepted at once.
    invocation = threading.Lock()

    def invoke(event: dict[str, Any]) -> dict[str, Any] | None:
        """The handler's answer, or None when it took longer than API Gateway waits. The handler
        goes on in its thread (a Lambda function runs to its own timeout), and holds the process
        until it ends, as it holds its execution environment."""
        answer: list[dict[str, Any]] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                with invocation:
                    context = LambdaContext(
                        aws_request_id=event["requestContext"]["requestId"], timeout_seconds=timeout_seconds
                    )
                    answer.append(api_handler(event, context))
            except BaseException as error:
                failure.append(error)

        thread = threading.Thread(target=run, name="api-invocation", daemon=True)
        thread.start()
        thread.join(timeout_seconds)
        if failure:
            raise failure[0]
        return answer[0] if answer else None

    class GatewayHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "PunctualLocal/0.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            reply(self, status, headers, body)

        def _error(self, status: int, error: str, reason: str, field: str | None = None) -> None:
            payload: dict[str, Any] = {"error": error, "reason": reason}
            if field:
                payload["field"] = field
            self._reply(status, {"Content-Type": "application/json"}, json.dumps(payload).encode())

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._error(413, "payload_too_large", "the body exceeds API Gateway's 10 MB", "body")
                return
            body = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            if is_console_path(path):
                # The web console's static files; the page then calls /v1 with a bearer token.
                answer = console_answer(path, self.command)
                self._reply(answer.status, answer.headers, answer.body)
                return
            principal = None
            if path not in PUBLIC_PATHS and not path.startswith(PUBLIC_PREFIXES):
                auth = self.headers.get("Authorization", "")
                scheme, _, token = auth.partition(" ")
                principal = tokens.get(token.strip()) if scheme.lower() == "bearer" else None
                if principal is None:
                    self._error(401, "unauthorized", "missing or invalid bearer token")
                    return
            headers = dict(self.headers.items())
            event = build_event(self.command, self.path, headers, body, principal)
            started = time.perf_counter()
            try:
                result = invoke(event)
            except Exception as error:  # the handler must not raise; if it does, say so as API GW would
                self._error(502, "internal_error", f"the api handler failed: {type(error).__name__}")
                return
            if result is None:
                self._reply(
                    504, {"Content-Type": "application/json"}, b'{"message":"Endpoint request timed out"}'
                )
                return
            if len(json.dumps(result).encode()) > LAMBDA_ANSWER_BYTES:
                self._error(502, "internal_error", "the api handler's answer exceeds Lambda's 6 MB")
                return
            out_headers = dict(result.get("headers") or {})
            for key, values in (result.get("multiValueHeaders") or {}).items():
                out_headers[key] = ", ".join(values)
            raw = result.get("body") or ""
            payload = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode()
            status = int(result.get("statusCode", 200))
            self._reply(status, out_headers, payload)
            logger.info(
                f"{self.command} {path} {status}",
                extra={"owner": principal, "ms": round((time.perf_counter() - started) * 1000, 1)},
            )

        def __getattr__(self, name: str) -> Any:
            # BaseHTTPRequestHandler looks up do_<METHOD>: every method goes to the API, which
            # answers the ones it does not serve in JSON.
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

    return GatewayHandler


def serve(host: str, port: int, tokens: dict[str, str]) -> None:
    from punctual_functions.api.handler import handler as api_handler

    server = LocalHTTPServer((host, port), make_handler_class(tokens, api_handler))
    server.serve_forever()

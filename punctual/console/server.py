"""``punctual console``: the console's page on this machine, with its ``/v1`` calls forwarded to the
configured API and authenticated there (SigV4 from the user's AWS credentials, the configured API
key, or the configured bearer token), so that no credential ever reaches the browser.

The server is a signing proxy on loopback, which a web page of any other site could try to use: it
answers only requests whose ``Host`` is its own address (a DNS-rebinding page has another name), and
forwards only requests carrying the token it made at start for its own page (``/console/session``,
readable only by a page of its own origin: it sends no CORS headers) and, when the browser sends an
``Origin``, only from its own origin.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import urllib3

from punctual.client import Authenticator, Config, ConnectionFailed, masked
from punctual.console.assets import CONSOLE_PREFIX, console_answer, is_console_path
from punctual.local.httpserver import LocalHTTPServer, reply

__all__ = ["ConsoleServer", "Forwarder", "start_console"]

# POST /v1/jobs/batch takes up to 1 MiB; the API refuses larger bodies itself, this only bounds memory.
MAX_BODY_BYTES = 1024 * 1024 + 1024
FORWARDED_REQUEST_HEADERS = ("Accept", "Content-Type", "Idempotency-Key")
FORWARDED_RESPONSE_HEADERS = ("Content-Type", "Retry-After")


@dataclass
class Forwarder:
    """Sends one request to the configured API, authenticated as the CLI would (punctual/client.py)."""

    config: Config
    timeout: float = 30.0
    _auth: Authenticator = field(init=False)
    _http: urllib3.PoolManager = field(init=False)

    def __post_init__(self) -> None:
        self._http = urllib3.PoolManager(timeout=urllib3.Timeout(total=self.timeout), retries=False)
        self._auth = Authenticator(self.config)
        if self.config.auth == "sigv4":
            self._auth.aws()  # no credentials: say so before serving

    @property
    def description(self) -> str:
        if self.config.auth == "sigv4":
            role = f" as {self.config.role_arn}" if self.config.role_arn else ""
            return f"{self.config.endpoint} (SigV4{role}, region {self._auth.aws()[1]})"
        if self.config.auth == "api_key" and self.config.api_key:
            return f"{self.config.endpoint} (API key {masked(self.config.api_key)})"
        return f"{self.config.endpoint} (bearer token)"

    def forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        url = self.config.endpoint + path
        wanted = {name.lower() for name in FORWARDED_REQUEST_HEADERS}
        sent = {name: value for name, value in headers.items() if name.lower() in wanted}
        data = body or None
        try:
            # Credentials that cannot be refreshed (an SSO session ended, a role no longer assumable)
            # are the API out of reach for the page: its answer says why, the server serves on.
            sent = self._auth.apply(method, url, data, sent)
        except ConnectionFailed as error:
            return 502, {"Content-Type": "application/json"}, _error("bad_gateway", str(error))
        try:
            response = self._http.request(method, url, body=data, headers=sent)
        except urllib3.exceptions.HTTPError as error:
            reason = f"cannot reach {self.config.endpoint}: {error}"
            return 502, {"Content-Type": "application/json"}, _error("bad_gateway", reason)
        kept = {
            name: response.headers[name] for name in FORWARDED_RESPONSE_HEADERS if name in response.headers
        }
        return response.status, kept, response.data


def _error(code: str, reason: str, field: str | None = None) -> bytes:
    payload = {"error": code, "reason": reason}
    if field:
        payload["field"] = field
    return json.dumps(payload).encode()


def make_handler_class(
    forwarder: Forwarder, session_token: str, origins: Callable[[], set[str]]
) -> type[BaseHTTPRequestHandler]:
    class ConsoleHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "PunctualConsole/0.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            reply(self, status, {"Cache-Control": "no-store", **headers}, body)

        def _refuse(self, status: int, code: str, reason: str, field: str | None = None) -> None:
            self._reply(status, {"Content-Type": "application/json"}, _error(code, reason, field))

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._refuse(413, "payload_too_large", "the body is too large", "body")
                return
            body = self.rfile.read(length) if length else b""
            allowed = origins()
            if self.headers.get("Host", "") not in {urlsplit(origin).netloc for origin in allowed}:
                self._refuse(403, "forbidden", "this server answers only on its own address", "Host")
                return
            origin = self.headers.get("Origin")
            if origin is not None and origin not in allowed:
                self._refuse(403, "forbidden", "requests from other sites are not forwarded", "Origin")
                return
            path = urlsplit(self.path).path
            if path == CONSOLE_PREFIX + "/session":
                self._session()
            elif is_console_path(path):
                answer = console_answer(path, self.command)
                self._reply(answer.status, answer.headers, answer.body)
            elif path == "/":
                self._reply(302, {"Location": CONSOLE_PREFIX}, b"")
            elif path == "/v1" or path.startswith("/v1/"):
                self._forward(body)
            else:
                self._refuse(404, "not_found", "only /console and /v1 are served here", "path")

        def _session(self) -> None:
            if self.command != "GET" or self.headers.get("Sec-Fetch-Site", "same-origin") not in (
                "same-origin",
                "none",
            ):
                self._refuse(403, "forbidden", "the console's session is for its own page", "path")
                return
            payload = {
                "token": session_token,
                "endpoint": forwarder.config.endpoint,
                "auth": forwarder.config.auth,
            }
            self._reply(200, {"Content-Type": "application/json"}, json.dumps(payload).encode())

        def _forward(self, body: bytes) -> None:
            scheme, _, token = self.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), session_token):
                self._refuse(401, "unauthorized", "reload the console: its session token is missing or stale")
                return
            status, headers, answer = forwarder.forward(
                self.command, self.path, dict(self.headers.items()), body
            )
            self._reply(status, headers, answer)

        def __getattr__(self, name: str) -> Any:
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

    return ConsoleHandler


@dataclass
class ConsoleServer:
    """The running server: its URL, and ``stop``."""

    server: LocalHTTPServer
    thread: threading.Thread | None
    url: str
    forwarder: Forwarder

    def serve_forever(self) -> None:
        self.server.serve_forever()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)


def start_console(config: Config, port: int = 0, *, background: bool = False) -> ConsoleServer:
    """Bind to 127.0.0.1:``port`` (0: any free one); with ``background``, serve in a thread."""
    forwarder = Forwarder(config)
    session_token = secrets.token_urlsafe(32)
    bound: list[int] = []

    def origins() -> set[str]:
        return {f"http://127.0.0.1:{bound[0]}", f"http://localhost:{bound[0]}"}

    server = LocalHTTPServer(("127.0.0.1", port), make_handler_class(forwarder, session_token, origins))
    bound.append(server.server_address[1])
    thread = None
    if background:
        thread = threading.Thread(target=server.serve_forever, name="punctual-console", daemon=True)
        thread.start()
    return ConsoleServer(server, thread, f"http://127.0.0.1:{bound[0]}{CONSOLE_PREFIX}", forwarder)

"""``punctual console``: every forwarded call is signed with SigV4 from the user's AWS credentials (a
receiver recomputes each signature with the same known credentials), or carries the configured bearer
token or API key; the browser's own token never goes further, and the server refuses what a page of
another site could send it."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from punctual.client import Config, ConnectionFailed
from punctual.console.server import ConsoleServer, start_console
from punctual.local.httpserver import LocalHTTPServer

ACCESS_KEY = "AKIDCONSOLETEST00001"
SECRET_KEY = "console-test-secret-key/with+symbols"
SESSION_TOKEN = "console-test-session-token"
REGION = "eu-west-1"
AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Stands in for API Gateway: records each request and answers with a JSON echo."""

    port: int = 0
    requests: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def expected_signature(received: Received, url: str, secret_key: str = SECRET_KEY) -> str:
    """The SigV4 signature of the received request, recomputed from its signed headers and body with
    the known credentials, at the time its X-Amz-Date states."""
    match = AUTHORIZATION.match(received.headers["Authorization"])
    assert match, received.headers["Authorization"]
    lowered = {name.lower(): value for name, value in received.headers.items()}
    signed = {name: lowered[name] for name in match["signed"].split(";")}
    request = AWSRequest(
        method=received.method, url=url + received.path, data=received.body or None, headers=signed
    )
    request.context["timestamp"] = lowered["x-amz-date"]
    auth = SigV4Auth(Credentials(ACCESS_KEY, secret_key, SESSION_TOKEN), "execute-api", REGION)
    canonical = auth.canonical_request(request)
    return auth.signature(auth.string_to_sign(request, canonical), request)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.requests.append(Received(self.command, self.path, dict(self.headers.items()), body))
            answer = json.dumps({"echo": self.path}).encode()
            status = 422 if "refuse" in self.path else 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Set-Cookie", "tracking=1")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_GET = do_POST = do_PATCH = do_DELETE = _any

    server = LocalHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def signing_console(receiver: Receiver, aws_credentials: None) -> Iterator[ConsoleServer]:
    server = start_console(Config(endpoint=receiver.url, auth="sigv4", region=REGION), background=True)
    yield server
    server.stop()


def call(
    server: ConsoleServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    base = server.url.removesuffix("/console")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


def session_token(server: ConsoleServer) -> str:
    status, _, body = call(server, "GET", "/console/session")
    assert status == 200
    token: str = json.loads(body)["token"]
    return token


def test_every_forwarded_call_carries_a_valid_sigv4_signature_of_the_users_credentials(
    signing_console: ConsoleServer, receiver: Receiver
) -> None:
    # Given the console's page with its session token
    bearer = {"Authorization": f"Bearer {session_token(signing_console)}", "Cookie": "session=browser"}
    # When it calls the API with each method, a query and bodies
    calls = [
        ("GET", "/v1/jobs?limit=20&status=ACTIVE&name=a%20b", None),
        ("POST", "/v1/jobs", {"schedule": {"cron": "0 13 * * 1-5"}, "target": {"type": "http", "url": "x"}}),
        ("PATCH", "/v1/jobs/job_1", {"name": "ünïcode"}),
        ("POST", "/v1/jobs/job_1/pause", {}),
        ("DELETE", "/v1/jobs/job_1", None),
        ("GET", "/v1/stats", None),
    ]
    for method, path, body in calls:
        status, headers, answer = call(signing_console, method, path, body, bearer)
        assert status == 200, answer
        assert json.loads(answer) == {"echo": path}
        assert "Set-Cookie" not in headers

    # Then the receiver got each one signed for execute-api in the region, with the known credentials
    assert [(r.method, r.path) for r in receiver.requests] == [(m, p) for m, p, _ in calls]
    today = datetime.now(UTC).strftime("%Y%m%d")
    for received in receiver.requests:
        match = AUTHORIZATION.match(received.headers["Authorization"])
        assert match, f"{received.method} {received.path} was not SigV4-signed: {received.headers}"
        assert (match["key"], match["date"], match["region"], match["service"]) == (
            ACCESS_KEY,
            today,
            REGION,
            "execute-api",
        )
        assert received.headers["X-Amz-Security-Token"] == SESSION_TOKEN
        assert {"host", "x-amz-date", "x-amz-security-token"} <= set(match["signed"].split(";"))
        assert match["signature"] == expected_signature(received, receiver.url), (
            f"{received.method} {received.path}: the signature does not verify"
        )
        # and a signature made with another secret would not have matched (the check can fail)
        assert match["signature"] != expected_signature(received, receiver.url, "another-secret")
        # The browser's token and cookies stay on this machine.
        assert "Bearer" not in received.headers["Authorization"]
        assert "Cookie" not in received.headers


def test_the_apis_refusal_reaches_the_page_unchanged(signing_console: ConsoleServer) -> None:
    bearer = {"Authorization": f"Bearer {session_token(signing_console)}"}
    status, headers, body = call(signing_console, "POST", "/v1/refuse", {"x": 1}, bearer)
    assert status == 422
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"echo": "/v1/refuse"}


def test_without_the_pages_session_token_nothing_is_forwarded(
    signing_console: ConsoleServer, receiver: Receiver
) -> None:
    for headers in ({}, {"Authorization": "Bearer local-dev-token"}):
        status, _, body = call(signing_console, "GET", "/v1/jobs", headers=headers)
        assert status == 401, body
    assert receiver.requests == []


def test_requests_from_another_site_or_another_host_name_are_refused(
    signing_console: ConsoleServer, receiver: Receiver
) -> None:
    bearer = f"Bearer {session_token(signing_console)}"
    # A page of another site (its browser sends its Origin)
    status, _, body = call(
        signing_console, "POST", "/v1/jobs", {}, {"Authorization": bearer, "Origin": "https://evil.example"}
    )
    assert (status, json.loads(body)["field"]) == (403, "Origin")
    # A DNS-rebinding page reaches this port under its own host name
    for path in ("/v1/jobs", "/console/session"):
        status, _, body = call(signing_console, "GET", path, headers={"Host": "evil.example:80"})
        assert (status, json.loads(body)["field"]) == (403, "Host")
    # The session token is not handed to a cross-site fetch either
    status, _, _ = call(signing_console, "GET", "/console/session", headers={"Sec-Fetch-Site": "cross-site"})
    assert status == 403
    assert receiver.requests == []
    # while the page's own origin is fine
    port = signing_console.url.split(":")[2].split("/")[0]
    status, _, _ = call(
        signing_console,
        "GET",
        "/v1/stats",
        headers={"Authorization": bearer, "Origin": f"http://127.0.0.1:{port}"},
    )
    assert status == 200


def test_it_serves_the_console_page_and_says_where_it_forwards(signing_console: ConsoleServer) -> None:
    status, headers, body = call(signing_console, "GET", "/console")
    assert status == 200 and b'<div id="app">' in body
    assert "script-src 'self' 'sha256-" in headers["Content-Security-Policy"]
    status, _, body = call(signing_console, "GET", "/console/session")
    session = json.loads(body)
    assert session["auth"] == "sigv4" and session["endpoint"].startswith("http://127.0.0.1:")
    assert "AKID" not in body.decode() and SECRET_KEY not in body.decode()
    assert call(signing_console, "GET", "/elsewhere")[0] == 404


def test_with_a_bearer_token_configured_it_forwards_with_that_token(receiver: Receiver) -> None:
    server = start_console(Config(endpoint=receiver.url, auth="bearer", token="alice-token"), background=True)
    try:
        status, _, _ = call(
            server, "GET", "/v1/jobs", headers={"Authorization": f"Bearer {session_token(server)}"}
        )
    finally:
        server.stop()
    assert status == 200
    assert receiver.requests[0].headers["Authorization"] == "Bearer alice-token"


def test_with_an_api_key_configured_it_forwards_with_x_api_key(receiver: Receiver) -> None:
    # Given a console for a deployment in API-key mode (punctual config from-stack saved the key)
    key = "k3yV4lu3-0f-th3-d3pl0ym3nt-Xy9z"
    server = start_console(Config(endpoint=receiver.url, auth="api_key", api_key=key), background=True)
    try:
        # When its page calls the API, even trying a key of its own
        bearer = {"Authorization": f"Bearer {session_token(server)}", "x-api-key": "from-the-page"}
        calls = [("GET", "/v1/jobs", None), ("POST", "/v1/jobs/job_1/pause", {"note": "x"})]
        for method, path, body in calls:
            status, _, answer = call(server, method, path, body, bearer)
            assert status == 200, answer
        session = json.loads(call(server, "GET", "/console/session")[2])
    finally:
        server.stop()
    # Then every call carried the configured key, and nothing else that authenticates
    assert [(r.method, r.path) for r in receiver.requests] == [(m, p) for m, p, _ in calls]
    for received in receiver.requests:
        assert received.headers["x-api-key"] == key
        assert "Authorization" not in received.headers
    # and the key stays on this machine: neither the page nor the startup line gets it
    assert session["auth"] == "api_key" and key not in json.dumps(session)
    assert server.forwarder.description == f"{receiver.url} (API key …Xy9z)"


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Nothing in the standard AWS credential chain."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


def test_without_aws_credentials_it_says_so_before_serving(no_aws_credentials: None) -> None:
    with pytest.raises(ConnectionFailed, match="no AWS credentials"):
        start_console(Config(endpoint="https://abc.execute-api.eu-west-1.amazonaws.com", auth="sigv4"))


def test_the_command_exits_5_without_aws_credentials_for_a_deployed_api(no_aws_credentials: None) -> None:
    from click.testing import CliRunner

    from punctual.cli import main

    result = CliRunner().invoke(
        main, ["console", "--port", "0", "--endpoint", "https://abc.execute-api.eu-west-1.amazonaws.com"]
    )
    assert result.exit_code == 5
    assert "no AWS credentials found for SigV4 signing" in result.output


def test_credentials_that_can_no_longer_be_had_reach_the_page_as_502(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SSO session that ended or a role no longer assumable, after the console started: the page
    reads why, the server serves on, nothing unsigned goes out."""
    from punctual.console.server import Forwarder

    forwarder = Forwarder(Config(endpoint=receiver.url, auth="bearer", token="t"))

    def refused(*_args: Any) -> dict[str, str]:
        raise ConnectionFailed("cannot assume role arn:aws:iam::123456789012:role/jobs-owner: AccessDenied")

    monkeypatch.setattr(forwarder._auth, "apply", refused)
    status, headers, body = forwarder.forward("GET", "/v1/jobs", {}, b"")
    assert (status, headers["Content-Type"]) == (502, "application/json")
    assert json.loads(body) == {
        "error": "bad_gateway",
        "reason": "cannot assume role arn:aws:iam::123456789012:role/jobs-owner: AccessDenied",
    }
    assert receiver.requests == []


def test_with_a_role_it_says_so_when_it_starts(moto_env: None) -> None:
    role = "arn:aws:iam::123456789012:role/jobs-owner"
    endpoint = "https://abc.execute-api.eu-west-1.amazonaws.com"
    server = start_console(
        Config(endpoint=endpoint, auth="sigv4", region=REGION, role_arn=role), background=True
    )
    try:
        assert server.forwarder.description == f"{endpoint} (SigV4 as {role}, region {REGION})"
    finally:
        server.stop()

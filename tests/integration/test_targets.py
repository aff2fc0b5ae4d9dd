"""Delivering a run to each kind of target.

HTTP targets run against a real server on 127.0.0.1; SQS, SNS and EventBridge against moto in-process;
Lambda through botocore's Stubber (moto cannot run functions without Docker).
"""

from __future__ import annotations

import datetime as dt
import io
import ipaddress
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from moto import mock_aws

from punctual.verify import verify
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.targets import (
    Delivery,
    TargetError,
    TargetExecutor,
    TargetOutcome,
    delivery_headers,
    format_timestamp,
    validate_target,
)
from punctual_functions.core.targets.outcome import traceparent

REGION = "us-east-1"
LOCAL = NetworkPolicy(allow_loopback=True)
STRICT = NetworkPolicy()
SCHEDULED_FOR = dt.datetime(2026, 11, 22, 12, 0, 5, tzinfo=dt.UTC)
SECRET = "whsec_integration"
PAYLOAD = {"report": "sales", "region": "EMEA", "note": "naïve ✓"}


def make_delivery(attempt: int = 1, secret: str | None = SECRET, payload: Any = PAYLOAD) -> Delivery:
    return Delivery(
        job_id="job_01JDX5",
        run_id="run_01JDX5_20261122T120005Z",
        attempt=attempt,
        scheduled_for=SCHEDULED_FOR,
        payload=payload,
        secret=secret,
    )


def no_clients(service: str) -> Any:
    raise AssertionError(f"an HTTP delivery must not create a {service} client")


# ------------------------------------------------------------------------------------------ HTTP server


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class TargetServer:
    """A webhook receiver whose behaviour is chosen by the request path."""

    port: int = 0
    scheme: str = "http"
    requests: list[Recorded] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    slow_started: threading.Event = field(default_factory=threading.Event)
    server_names: list[str | None] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def _handler(state: TargetServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append(
                Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            path = self.path.split("?")[0]
            if path.startswith("/status/"):
                status = int(path.rsplit("/", 1)[1])
                extra = {"Retry-After": "7"} if status == 429 else {}
                self._respond(status, f'{{"status":{status}}}'.encode(), extra)
            elif path == "/redirect":
                self._respond(302, b"moved", {"Location": state.url("/after-redirect")})
            elif path == "/slow":
                state.slow_started.set()
                state.release.wait(5)
                self._respond(200, b"late")
            elif path == "/trickle":
                self.send_response(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(b"0123456789")
                state.release.wait(5)
            elif path == "/big":
                self._respond(200, b"x" * 10_000)
            else:
                self._respond(200, b'{"ok":true}', {"Content-Type": "application/json"})

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    return Handler


@pytest.fixture
def start_server() -> Iterator[Callable[..., TargetServer]]:
    servers: list[tuple[ThreadingHTTPServer, TargetServer]] = []

    def start(tls: ssl.SSLContext | None = None) -> TargetServer:
        state = TargetServer(scheme="https" if tls else "http")
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
        httpd.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: state.server_names.append(name)
            httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
        state.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append((httpd, state))
        return state

    yield start
    for httpd, state in servers:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server(start_server: Callable[..., TargetServer]) -> TargetServer:
    return start_server()


def http_spec(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "url": url, **extra}


# ------------------------------------------------------------------------------------------ HTTP tests


def test_http_success_carries_the_body_all_delivery_headers_and_a_valid_signature(
    server: TargetServer,
) -> None:
    # Given a job with a signing secret and a POST webhook
    executor = TargetExecutor(no_clients, LOCAL, user_agent="Punctual/test")
    before = time.time()
    # When the run is delivered
    outcome = executor.execute(http_spec(server.url("/hook?x=1")), make_delivery(attempt=2), 30)
    # Then it succeeded and the receiver got the JSON payload with every Punctual header
    assert outcome.succeeded and outcome.status_code == 200 and outcome.error is None
    assert outcome.response_excerpt == '{"ok":true}'
    assert outcome.duration_ms >= 0
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/hook?x=1")
    assert json.loads(request.body) == PAYLOAD
    headers = request.headers
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == "Punctual/test"
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["idempotency-key"] == "run_01JDX5_20261122T120005Z"
    assert headers["punctual-job-id"] == "job_01JDX5"
    assert headers["punctual-run-id"] == "run_01JDX5_20261122T120005Z"
    assert headers["punctual-attempt"] == "2"
    assert headers["punctual-scheduled-for"] == "2026-11-22T12:00:05.000Z"
    # And the signature verifies over the exact bytes received, signed just now
    signature = headers["punctual-signature"]
    assert verify(SECRET, signature, request.body)
    assert int(signature.split(",")[0].removeprefix("t=")) >= int(before)


def test_http_without_secret_sends_no_signature(server: TargetServer) -> None:
    executor = TargetExecutor(no_clients, LOCAL)
    outcome = executor.execute(http_spec(server.url("/hook")), make_delivery(secret=None), 30)
    assert outcome.succeeded
    assert "punctual-signature" not in server.requests[0].headers


def test_http_user_headers_cannot_override_punctual_headers(server: TargetServer) -> None:
    # Given a stored spec whose user headers try to forge the Punctual headers (in any case)
    spec = http_spec(
        server.url("/hook"),
        headers={
            "X-Team": "data",
            "punctual-job-id": "forged",
            "IDEMPOTENCY-KEY": "forged",
            "Punctual-Signature": "t=1,v1=forged",
            "Content-Type": "application/vnd.team+json",
        },
    )
    # When it is delivered
    outcome = TargetExecutor(no_clients, LOCAL).execute(spec, make_delivery(), 30)
    # Then the user's own headers arrive but the Punctual ones are the real ones
    assert outcome.succeeded
    headers = server.requests[0].headers
    assert headers["x-team"] == "data"
    assert headers["content-type"] == "application/vnd.team+json"
    assert headers["punctual-job-id"] == "job_01JDX5"
    assert headers["idempotency-key"] == "run_01JDX5_20261122T120005Z"
    assert verify(SECRET, headers["punctual-signature"], server.requests[0].body)
    # And validation tells the user up front
    with pytest.raises(TargetError, match="cannot be overridden") as caught:
        validate_target(spec, LOCAL)
    assert caught.value.field == "target.headers"


def test_a_traceparent_of_the_jobs_own_is_refused_and_never_replaces_the_runs(server: TargetServer) -> None:
    spec = http_spec(server.url("/trace"), headers={"TraceParent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"})
    with pytest.raises(TargetError, match="TraceParent is set by Punctual"):
        validate_target(spec, LOCAL)
    assert TargetExecutor(no_clients, LOCAL).execute(spec, make_delivery(), 30).succeeded  # a stored one
    assert server.requests[0].headers["traceparent"] == traceparent(make_delivery())


def test_http_get_sends_no_body_but_still_signs(server: TargetServer) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/poll"), method="GET"), make_delivery(), 30
    )
    assert outcome.succeeded
    (request,) = server.requests
    assert (request.method, request.body) == ("GET", b"")
    assert "content-type" not in request.headers
    assert verify(SECRET, request.headers["punctual-signature"], b"")


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_http_408_429_and_5xx_are_retriable(server: TargetServer, status: int) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url(f"/status/{status}")), make_delivery(), 30
    )
    assert not outcome.succeeded and outcome.retriable
    assert (outcome.status_code, outcome.error) == (status, f"HTTP {status}")
    assert outcome.response_excerpt == f'{{"status":{status}}}'
    assert outcome.retry_after_seconds == (7.0 if status == 429 else None)


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
def test_http_other_4xx_are_fatal(server: TargetServer, status: int) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url(f"/status/{status}")), make_delivery(), 30
    )
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error == f"HTTP {status}"


def test_http_redirect_is_fatal_and_not_followed(server: TargetServer) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/redirect")), make_delivery(), 30
    )
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.status_code == 302
    assert (
        outcome.error is not None and "not followed" in outcome.error and "/after-redirect" in outcome.error
    )
    assert [r.path for r in server.requests] == ["/redirect"]


def test_http_response_excerpt_is_capped_at_4_kib(server: TargetServer) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(http_spec(server.url("/big")), make_delivery(), 30)
    assert outcome.succeeded
    assert outcome.response_excerpt == "x" * 4096


def test_http_target_timeout_is_retriable(server: TargetServer) -> None:
    # Given a target that answers after 5 s and a target timeout of 0.3 s
    spec = http_spec(server.url("/slow"), timeout_seconds=0.3)
    started = time.monotonic()
    outcome = TargetExecutor(no_clients, LOCAL).execute(spec, make_delivery(), 30)
    # Then the attempt ends at the timeout as a retriable failure
    assert time.monotonic() - started < 1.5
    assert not outcome.succeeded and outcome.retriable
    assert outcome.error == "timeout after 0.3s"


def test_answer_whose_body_trickles_past_the_timeout_keeps_its_status(server: TargetServer) -> None:
    # Given a target that answers 200 at once but then sends its body slower than the timeout allows
    started = time.monotonic()
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/trickle"), timeout_seconds=0.3), make_delivery(), 30
    )
    # Then the attempt still ends at the timeout, and the answer counts with the part of the body received
    assert time.monotonic() - started < 1.5
    assert outcome.succeeded and outcome.status_code == 200
    assert outcome.response_excerpt == "0123456789"


def test_without_a_target_timeout_the_job_timeout_bounds_the_call(server: TargetServer) -> None:
    spec = validate_target({"type": "http", "url": server.url("/slow")}, LOCAL)
    started = time.monotonic()
    outcome = TargetExecutor(no_clients, LOCAL).execute(spec, make_delivery(), 0.4)
    assert time.monotonic() - started < 1.5
    assert outcome.retriable and outcome.error == "timeout after 0.4s"


def test_job_timeout_smaller_than_the_target_timeout_wins(server: TargetServer) -> None:
    started = time.monotonic()
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/slow"), timeout_seconds=10), make_delivery(), 0.25
    )
    assert time.monotonic() - started < 1.5
    assert outcome.retriable and outcome.error == "timeout after 0.25s"


def test_cancel_aborts_a_slow_response_quickly(server: TargetServer) -> None:
    # Given a request in flight to a target that would take 5 s
    cancel = threading.Event()

    def cancel_once_the_target_is_busy() -> None:
        server.slow_started.wait(5)
        cancel.set()

    threading.Thread(target=cancel_once_the_target_is_busy, daemon=True).start()
    started = time.monotonic()
    # When the run is cancelled while waiting for the response
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/slow")), make_delivery(), 30, cancel
    )
    # Then the execution returns at once, cancelled and not to be retried
    assert time.monotonic() - started < 1.0
    assert server.slow_started.is_set()
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error == "cancelled"
    # And the request itself was aborted (its socket shut down), not merely abandoned in the background
    deadline = time.monotonic() + 1.0
    while any(t.name == "punctual-target" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "punctual-target" for t in threading.enumerate())
    assert not server.release.is_set()


def test_already_cancelled_run_sends_nothing(server: TargetServer) -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/hook")), make_delivery(), 30, cancel
    )
    assert outcome.error == "cancelled" and not outcome.retriable
    assert server.requests == []


def test_loopback_url_is_refused_when_loopback_is_not_allowed(server: TargetServer) -> None:
    outcome = TargetExecutor(no_clients, STRICT).execute(http_spec(server.url("/hook")), make_delivery(), 30)
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error is not None and outcome.error.startswith("blocked:") and "loopback" in outcome.error
    assert server.requests == []


def test_name_that_now_resolves_to_a_private_address_is_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a name that passed validation but whose DNS now answers with a metadata address
    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec("http://hooks.example.com/x"), make_delivery(), 30
    )
    # Then the execution refuses it: fatal, with the reason
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error is not None and "resolves to 169.254.169.254" in outcome.error


def test_connection_refused_is_retriable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(f"http://127.0.0.1:{port}/"), make_delivery(), 30
    )
    assert not outcome.succeeded and outcome.retriable
    assert outcome.error is not None and outcome.error.startswith("connection failed")


def _tls_material(tmp_path: Path, hostname: str) -> tuple[ssl.SSLContext, str]:
    """A throwaway CA and a server certificate for ``hostname`` signed by it."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Punctual Test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    chain_file = tmp_path / "server.pem"
    chain_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain_file)
    return context, str(ca_file)


def test_https_connects_to_the_vetted_ip_once_with_sni_and_certificate_of_the_name(
    tmp_path: Path, start_server: Callable[..., TargetServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a TLS receiver for "hooks.test" and DNS that would rebind to a private address on a 2nd lookup
    context, ca_file = _tls_material(tmp_path, "hooks.test")
    server = start_server(context)
    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            lookups.append(host)
            address = "127.0.0.1" if len(lookups) == 1 else "10.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    executor = TargetExecutor(no_clients, LOCAL, ca_certs=ca_file)
    # When the run is delivered to https://hooks.test:<port>/
    outcome = executor.execute(http_spec(server.url("/hook", host="hooks.test")), make_delivery(), 30)
    # Then the name was resolved exactly once, TLS verified the name, and Host kept it
    assert outcome.succeeded, outcome
    assert lookups == ["hooks.test"]
    assert server.server_names == ["hooks.test"]
    assert server.requests[0].headers["host"] == f"hooks.test:{server.port}"


def test_https_certificate_for_another_name_fails_retriably(
    tmp_path: Path, start_server: Callable[..., TargetServer]
) -> None:
    context, ca_file = _tls_material(tmp_path, "other.test")
    server = start_server(context)
    outcome = TargetExecutor(no_clients, LOCAL, ca_certs=ca_file).execute(
        http_spec(server.url("/hook")), make_delivery(), 30
    )
    assert not outcome.succeeded and outcome.retriable
    assert outcome.error is not None and outcome.error.startswith("TLS error")
    assert server.requests == []


def test_invalid_stored_spec_is_a_fatal_outcome_not_an_exception() -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute({"type": "carrier-pigeon"}, make_delivery(), 30)
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error == "invalid target: target.type: must be one of http, lambda, sqs, sns, eventbridge"


def test_payload_that_is_not_json_is_a_fatal_outcome(server: TargetServer) -> None:
    outcome = TargetExecutor(no_clients, LOCAL).execute(
        http_spec(server.url("/hook")), make_delivery(payload={"x": float("nan")}), 30
    )
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error is not None and outcome.error.startswith("payload is not valid JSON")


# ------------------------------------------------------------------------------------------ validation


def test_validate_http_fills_defaults_and_leaves_the_timeout_to_the_job() -> None:
    assert validate_target({"type": "http", "url": "https://example.com/hook"}, STRICT) == {
        "type": "http",
        "url": "https://example.com/hook",
        "method": "POST",
        "headers": {},
    }
    assert (
        validate_target({"type": "http", "url": "https://example.com/", "method": "put"}, STRICT)["method"]
        == "PUT"
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "target.type"),
        ({"type": "ftp"}, "target.type"),
        ({"type": "http"}, "target.url"),
        ({"type": "http", "url": "http://10.0.0.1/"}, "target.url"),
        ({"type": "http", "url": "https://example.com/", "method": "HEAD"}, "target.method"),
        ({"type": "http", "url": "https://example.com/", "timeout_seconds": 0}, "target.timeout_seconds"),
        ({"type": "http", "url": "https://example.com/", "timeout_seconds": 901}, "target.timeout_seconds"),
        ({"type": "http", "url": "https://example.com/", "timeout_seconds": True}, "target.timeout_seconds"),
        ({"type": "http", "url": "https://example.com/", "headers": {"Host": "evil"}}, "target.headers"),
        ({"type": "http", "url": "https://example.com/", "headers": {"X-A": "a\r\nB: b"}}, "target.headers"),
        ({"type": "http", "url": "https://example.com/", "headers": {"bad name": "x"}}, "target.headers"),
        ({"type": "http", "url": "https://example.com/", "headers": {"X-A": 1}}, "target.headers"),
        ({"type": "http", "url": "https://example.com/", "body": "x"}, "target.body"),
        ({"type": "lambda"}, "target.function"),
        ({"type": "lambda", "function": "bad name!"}, "target.function"),
        ({"type": "lambda", "function": "f", "qualifier": "x"}, "target.qualifier"),
        ({"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/queue"}, "target.queue_url"),
        ({"type": "sns", "topic_arn": "arn:aws:sqs:us-east-1:123456789012:q"}, "target.topic_arn"),
        ({"type": "eventbridge", "bus": "has space"}, "target.bus"),
        ({"type": "eventbridge", "source": "aws.ec2"}, "target.source"),
        ({"type": "eventbridge", "detail_type": ""}, "target.detail_type"),
    ],
)
def test_validate_rejects_bad_specs_naming_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(TargetError) as caught:
        validate_target(spec, STRICT)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "lambda", "function": "my-function"},
        {"type": "lambda", "function": "arn:aws:lambda:eu-west-1:123456789012:function:my-function:live"},
        {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo"},
        {"type": "sqs", "queue_url": "http://localhost:4566/000000000000/local-queue"},
        {"type": "sns", "topic_arn": "arn:aws:sns:eu-west-1:123456789012:alerts"},
        {"type": "eventbridge", "bus": "arn:aws:events:eu-west-1:123456789012:event-bus/ops"},
    ],
)
def test_validate_accepts_aws_targets(spec: dict[str, Any]) -> None:
    assert validate_target(spec, STRICT)["type"] == spec["type"]


def test_validate_eventbridge_fills_defaults() -> None:
    assert validate_target({"type": "eventbridge"}, STRICT) == {
        "type": "eventbridge",
        "bus": "default",
        "source": "punctual",
        "detail_type": "Punctual Job Run",
    }


def test_delivery_headers_format_scheduled_time_in_utc_with_milliseconds() -> None:
    berlin = dt.timezone(dt.timedelta(hours=1))
    delivery = Delivery("j", "r", 3, dt.datetime(2026, 11, 22, 13, 0, 5, 123_456, tzinfo=berlin), None)
    headers = delivery_headers(delivery, b"null", dt.datetime.now(dt.UTC))
    assert headers == {
        "Idempotency-Key": "r",
        "Punctual-Job-Id": "j",
        "Punctual-Run-Id": "r",
        "Punctual-Attempt": "3",
        "Punctual-Scheduled-For": "2026-11-22T12:00:05.123Z",
        "traceparent": traceparent(delivery),
    }
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", headers["traceparent"]), "W3C Trace Context"
    assert format_timestamp(SCHEDULED_FOR) == "2026-11-22T12:00:05.000Z"


def test_every_attempt_of_a_run_shares_its_trace_and_has_a_span_of_its_own() -> None:
    def parts(run_id: str, attempt: int) -> tuple[str, str]:
        _, trace, span, _ = traceparent(Delivery("j", run_id, attempt, SCHEDULED_FOR, None)).split("-")
        return trace, span

    first, second, other = parts("r1", 1), parts("r1", 2), parts("r2", 1)
    assert first[0] == second[0] != other[0], "one trace a run"
    assert first[1] != second[1], "one span an attempt"
    assert parts("r1", 1) == first, "derived, so a re-delivery of an attempt carries the same ids"


# ------------------------------------------------------------------------------------------ AWS (moto)


@pytest.fixture
def aws() -> Iterator[Callable[[str], Any]]:
    with mock_aws():
        clients: dict[str, Any] = {}

        def factory(service: str) -> Any:
            if service not in clients:
                clients[service] = boto3.client(service, region_name=REGION)  # type: ignore[call-overload]
            return clients[service]

        yield factory


def _receive(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=0
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in message.get("MessageAttributes", {}).items()}


def test_sqs_message_carries_the_payload_and_delivery_headers_as_attributes(
    aws: Callable[[str], Any],
) -> None:
    sqs = aws("sqs")
    queue_url = sqs.create_queue(QueueName="deliveries")["QueueUrl"]
    outcome = TargetExecutor(aws, STRICT).execute(
        {"type": "sqs", "queue_url": queue_url}, make_delivery(), 30
    )
    assert outcome.succeeded, outcome
    assert "MessageId" in json.loads(outcome.response_excerpt)
    (message,) = _receive(sqs, queue_url)
    assert json.loads(message["Body"]) == PAYLOAD
    attributes = _attributes(message)
    assert attributes["Idempotency-Key"] == "run_01JDX5_20261122T120005Z"
    assert attributes["Punctual-Job-Id"] == "job_01JDX5"
    assert attributes["Punctual-Attempt"] == "1"
    assert attributes["Punctual-Scheduled-For"] == "2026-11-22T12:00:05.000Z"
    assert verify(SECRET, attributes["Punctual-Signature"], message["Body"].encode())


def test_sqs_fifo_groups_by_job_and_deduplicates_a_re_execution_of_the_run(aws: Callable[[str], Any]) -> None:
    # Given a FIFO queue
    sqs = aws("sqs")
    queue_url = sqs.create_queue(QueueName="deliveries.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    executor = TargetExecutor(aws, STRICT)
    # When the same run is delivered twice (a re-execution after a crash)
    first = executor.execute({"type": "sqs", "queue_url": queue_url}, make_delivery(attempt=1), 30)
    second = executor.execute({"type": "sqs", "queue_url": queue_url}, make_delivery(attempt=1), 30)
    # Then both calls succeed but only one message is in the queue
    assert first.succeeded and second.succeeded
    response = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
    )
    (message,) = response["Messages"]
    assert message["Attributes"]["MessageGroupId"] == "job_01JDX5"
    assert message["Attributes"]["MessageDeduplicationId"] == "run_01JDX5_20261122T120005Z"


def test_sqs_missing_queue_is_fatal(aws: Callable[[str], Any]) -> None:
    queue_url = f"https://sqs.{REGION}.amazonaws.com/123456789012/does-not-exist"
    outcome = TargetExecutor(aws, STRICT).execute(
        {"type": "sqs", "queue_url": queue_url}, make_delivery(), 30
    )
    assert not outcome.succeeded and not outcome.retriable
    assert outcome.error in ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


def test_sns_publish_reaches_a_subscribed_queue_with_attributes(aws: Callable[[str], Any]) -> None:
    # Given a topic with an SQS subscription
    sns, sqs = aws("sns"), aws("sqs")
    topic_arn = sns.create_topic(Name="deliveries")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    # When the run is published
    outcome = TargetExecutor(aws, STRICT).execute(
        {"type": "sns", "topic_arn": topic_arn}, make_delivery(), 30
    )
    # Then the subscriber sees the payload and the delivery headers as message attributes
    assert outcome.succeeded, outcome
    (message,) = _receive(sqs, queue_url)
    envelope = json.loads(message["Body"])
    assert json.loads(envelope["Message"]) == PAYLOAD
    attributes = {name: value["Value"] for name, value in envelope["MessageAttributes"].items()}
    assert attributes["Idempotency-Key"] == "run_01JDX5_20261122T120005Z"
    assert attributes["Punctual-Run-Id"] == "run_01JDX5_20261122T120005Z"
    assert verify(SECRET, attributes["Punctual-Signature"], envelope["Message"].encode())


def test_sns_missing_topic_is_fatal(aws: Callable[[str], Any]) -> None:
    topic_arn = f"arn:aws:sns:{REGION}:123456789012:missing"
    outcome = TargetExecutor(aws, STRICT).execute(
        {"type": "sns", "topic_arn": topic_arn}, make_delivery(), 30
    )
    assert not outcome.succeeded and not outcome.retriable


def test_eventbridge_event_reaches_a_rule_target_with_payload_and_run_identity(
    aws: Callable[[str], Any],
) -> None:
    # Given a rule on the default bus forwarding Punctual events to a queue
    events, sqs = aws("events"), aws("sqs")
    queue_url = sqs.create_queue(QueueName="events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name="punctual", EventPattern=json.dumps({"source": ["com.example.reports"]}))
    events.put_targets(Rule="punctual", Targets=[{"Id": "queue", "Arn": queue_arn}])
    spec = {"type": "eventbridge", "source": "com.example.reports", "detail_type": "Report Due"}
    # When the run is delivered
    outcome = TargetExecutor(aws, STRICT).execute(spec, make_delivery(attempt=2), 30)
    # Then the event carries the payload and the run's identity
    assert outcome.succeeded, outcome
    assert "EventId" in json.loads(outcome.response_excerpt)
    (message,) = _receive(sqs, queue_url)
    event = json.loads(message["Body"])
    assert (event["source"], event["detail-type"]) == ("com.example.reports", "Report Due")
    assert event["detail"] == {
        "payload": PAYLOAD,
        "punctual": {
            "job_id": "job_01JDX5",
            "run_id": "run_01JDX5_20261122T120005Z",
            "attempt": 2,
            "scheduled_for": "2026-11-22T12:00:05.000Z",
            "idempotency_key": "run_01JDX5_20261122T120005Z",
            "traceparent": event["detail"]["punctual"]["traceparent"],
        },
    }
    assert event["detail"]["punctual"]["traceparent"].startswith("00-")


# ------------------------------------------------------------------------------------------ AWS (Stubber)


def _stubbed(service: str) -> tuple[Any, Stubber]:
    client = boto3.client(  # type: ignore[call-overload]
        service, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def _factory(client: Any) -> Callable[[str], Any]:
    return lambda service: client


def test_eventbridge_failed_entry_is_retriable_with_its_error_code() -> None:
    client, stubber = _stubbed("events")
    stubber.add_response(
        "put_events",
        {
            "FailedEntryCount": 1,
            "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"}],
        },
        {"Entries": ANY},
    )
    outcome = TargetExecutor(_factory(client), STRICT).execute({"type": "eventbridge"}, make_delivery(), 30)
    stubber.assert_no_pending_responses()
    assert not outcome.succeeded and outcome.retriable
    assert outcome.error == "ThrottlingException"
    assert outcome.response_excerpt == "ThrottlingException: slow down"


def _payload(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


def _invoke_events(client: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.lambda.Invoke", lambda params, **_: sent.append(json.loads(params["Payload"]))
    )
    return sent


def test_lambda_success_invokes_synchronously_with_the_run_event() -> None:
    # Given a function that returns a result
    client, stubber = _stubbed("lambda")
    sent = _invoke_events(client)
    stubber.add_response(
        "invoke",
        {"StatusCode": 200, "Payload": _payload(b'{"done":true}')},
        {"FunctionName": "report-builder", "InvocationType": "RequestResponse", "Payload": ANY},
    )
    # When the run is delivered
    outcome = TargetExecutor(_factory(client), STRICT).execute(
        {"type": "lambda", "function": "report-builder"}, make_delivery(attempt=3), 30
    )
    # Then it succeeded with the function's result, and the event identifies the run
    stubber.assert_no_pending_responses()
    assert outcome.succeeded and outcome.response_excerpt == '{"done":true}'
    assert sent == [
        {
            "job_id": "job_01JDX5",
            "run_id": "run_01JDX5_20261122T120005Z",
            "attempt": 3,
            "scheduled_for": "2026-11-22T12:00:05.000Z",
            "idempotency_key": "run_01JDX5_20261122T120005Z",
            "traceparent": sent[0]["traceparent"],
            "payload": PAYLOAD,
        }
    ]
    assert sent[0]["traceparent"].startswith("00-")


def test_lambda_function_error_is_retriable_and_keeps_the_error_payload() -> None:
    client, stubber = _stubbed("lambda")
    error = b'{"errorMessage":"boom","errorType":"ValueError"}'
    stubber.add_response(
        "invoke", {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": _payload(error)}
    )
    outcome = TargetExecutor(_factory(client), STRICT).execute(
        {"type": "lambda", "function": "report-builder"}, make_delivery(), 30
    )
    assert not outcome.succeeded and outcome.retriable
    assert outcome.error == "FunctionError: Unhandled"
    assert outcome.response_excerpt == error.decode()


@pytest.mark.parametrize(
    ("code", "status", "retriable"),
    [
        ("ResourceNotFoundException", 404, False),
        ("AccessDeniedException", 403, False),
        ("TooManyRequestsException", 429, True),
        ("ServiceException", 500, True),
        ("SomethingNewAndTransient", 503, True),
        ("SomethingNewAndPermanent", 400, False),
    ],
)
def test_lambda_client_errors_are_classified_by_code(code: str, status: int, retriable: bool) -> None:
    client, stubber = _stubbed("lambda")
    stubber.add_client_error(
        "invoke", service_error_code=code, service_message="nope", http_status_code=status
    )
    outcome: TargetOutcome = TargetExecutor(_factory(client), STRICT).execute(
        {"type": "lambda", "function": "report-builder"}, make_delivery(), 30
    )
    assert not outcome.succeeded
    assert outcome.retriable is retriable
    assert outcome.error == code
    assert outcome.response_excerpt == f"{code}: nope"


def test_clients_are_created_lazily_once_per_service() -> None:
    client, stubber = _stubbed("lambda")
    for _ in range(2):
        stubber.add_response("invoke", {"StatusCode": 200, "Payload": _payload(b"null")})
    created: list[str] = []

    def factory(service: str) -> Any:
        created.append(service)
        return client

    executor = TargetExecutor(factory, STRICT)
    assert created == []
    for _ in range(2):
        assert executor.execute({"type": "lambda", "function": "f"}, make_delivery(), 30).succeeded
    assert created == ["lambda"]


def test_a_request_waits_for_its_moment_on_its_own_thread_and_its_time_bound_counts_from_then(
    server: TargetServer,
) -> None:
    # Given a delivery whose wait for its second is longer than its whole time bound
    executor = TargetExecutor(no_clients, LOCAL)
    waited: dict[str, Any] = {}

    def wait() -> None:
        waited["thread"] = threading.current_thread()
        time.sleep(0.4)
        waited["until"] = time.monotonic()

    # When it is executed with that wait
    outcome = executor.execute(http_spec(server.url("/at-its-second")), make_delivery(), 0.3, wait=wait)
    # Then the request went out after the wait, from the delivery's own thread, and succeeded: the
    # bound counts from the moment the request goes out, not from the composing before it
    assert outcome.succeeded, outcome.error
    assert waited["thread"] is not threading.current_thread()
    assert len(server.requests) == 1 and outcome.duration_ms < 300


def test_a_cancel_during_the_wait_sends_nothing(server: TargetServer) -> None:
    executor = TargetExecutor(no_clients, LOCAL)
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    outcome = executor.execute(
        http_spec(server.url("/never")), make_delivery(), 30, cancel, wait=lambda: time.sleep(0.4)
    )
    assert outcome.error == "cancelled" and not outcome.retriable
    time.sleep(0.5)  # past the wait: the delivery's thread saw the cancel and sent nothing
    assert server.requests == []


def test_a_delivery_that_fails_before_any_request_fails_at_its_moment_not_before() -> None:
    # A target the policy blocks fails without a request; handed a wait, it fails once the wait is
    # over, so that the attempt's finish never comes before the second its start records.
    executor = TargetExecutor(no_clients, STRICT)
    waited: list[float] = []
    outcome = executor.execute(
        http_spec("http://127.0.0.1:9/hook"),
        make_delivery(),
        30,
        wait=lambda: waited.append(time.monotonic()),
    )
    assert outcome.error is not None and outcome.error.startswith("blocked") and not outcome.retriable
    assert len(waited) == 1

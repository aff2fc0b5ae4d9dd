"""The run's trace context (``targets.outcome.traceparent_of``) and the X-Ray segment each attempt sends
(``punctual_functions/core/tracing.py``): X-Ray-compatible ids, and the daemon's protocol checked on a
real UDP
socket on 127.0.0.1, down to the worker's ``RunExecutor`` on the in-memory fakes."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.testing.fakes.store import MemoryStore
from punctual_functions.api.requests import CreateJobIn
from punctual_functions.core import tracing
from punctual_functions.core.model import Attempt, Job, Run, RunStatus, run_id_for
from punctual_functions.core.schedule import parse_schedule
from punctual_functions.core.settings import Settings
from punctual_functions.core.ssrf_guard import NetworkPolicy
from punctual_functions.core.targets.outcome import Delivery, traceparent, traceparent_of, xray_trace_id
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue
from tests.fakes.targets import ScriptedTargets, failure
from tests.harness import Harness

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SCHEDULED_FOR = datetime(2026, 11, 22, 13, 0, 5, 250_000, tzinfo=UTC)
RUN_ID = run_id_for("job_1", SCHEDULED_FOR)
HEADER = b'{"format": "json", "version": 1}\n'
W3C = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-01")


def job(**target: Any) -> Job:
    return Job(
        job_id="job_1",
        owner="alice",
        schedule=parse_schedule(at=SCHEDULED_FOR.isoformat(), now=NOW),
        target=target or {"type": "http", "url": "https://example.com/hook", "method": "POST"},
        created_at=NOW,
        updated_at=NOW,
    )


def run(**changes: Any) -> Run:
    fields: dict[str, Any] = {
        "job_id": "job_1",
        "run_id": RUN_ID,
        "owner": "alice",
        "scheduled_for": SCHEDULED_FOR,
        "status": RunStatus.RUNNING,
        "attempt": 2,
        "lateness_ms": 3,
    }
    return Run(**(fields | changes))


def attempt(outcome: str = "SUCCEEDED", status_code: int | None = 200, error: str | None = None) -> Attempt:
    started = SCHEDULED_FOR + timedelta(seconds=60)
    return Attempt(
        number=2,
        started_at=started,
        finished_at=started + timedelta(milliseconds=120),
        outcome=outcome,
        duration_ms=120,
        status_code=status_code,
        error=error,
    )


@pytest.fixture
def daemon() -> Iterator[socket.socket]:
    """A UDP socket standing in for the X-Ray daemon."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(5)
        yield sock


def address_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()
    return f"{host}:{port}"


def received(sock: socket.socket) -> dict[str, Any]:
    """One datagram: the daemon's header line, then one segment document."""
    datagram = sock.recv(65536)
    assert datagram.startswith(HEADER), datagram[:60]
    document: dict[str, Any] = json.loads(datagram[len(HEADER) :])
    return document


def nothing_more(sock: socket.socket) -> bool:
    sock.settimeout(0.2)
    try:
        sock.recv(65536)
    except TimeoutError:
        return True
    return False


# ------------------------------------------------------------------------------------ the trace ids


def test_the_traceparent_is_w3c_stable_and_its_trace_id_starts_with_the_scheduled_epoch() -> None:
    first = traceparent_of("job_1", RUN_ID, 1)
    assert W3C.fullmatch(first)
    assert traceparent_of("job_1", RUN_ID, 1) == first, "derived: a re-delivery carries the same ids"
    _, trace, span, _ = first.split("-")
    assert int(trace[:8], 16) == int(SCHEDULED_FOR.timestamp()) == 1795352405  # 2026-11-22T13:00:05Z
    second = traceparent_of("job_1", RUN_ID, 2)
    assert second.split("-")[1] == trace and second.split("-")[2] != span, (
        "one trace a run, one span an attempt"
    )
    other = traceparent_of("job_1", run_id_for("job_1", SCHEDULED_FOR + timedelta(seconds=1)), 1)
    assert other.split("-")[1][8:] != trace[8:], "another run, another trace"
    delivery = Delivery("job_1", RUN_ID, 1, SCHEDULED_FOR, None)
    assert traceparent(delivery) == first


def test_the_xray_form_of_the_trace_id_is_the_same_32_digits() -> None:
    header = traceparent_of("job_1", RUN_ID, 1)
    xray = xray_trace_id(header)
    assert re.fullmatch(r"1-[0-9a-f]{8}-[0-9a-f]{24}", xray)
    assert xray.replace("1-", "", 1).replace("-", "") == header.split("-")[1]
    assert xray.split("-")[1] == f"{int(SCHEDULED_FOR.timestamp()):08x}"


def test_a_run_id_without_its_time_still_gets_a_valid_traceparent() -> None:
    header = traceparent_of("j", "r", 1)
    assert W3C.fullmatch(header) and traceparent_of("j", "r", 1) == header


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("169.254.79.129:2000", ("169.254.79.129", 2000)),
        ("tcp:127.0.0.1:2000 udp:127.0.0.2:2001", ("127.0.0.2", 2001)),
        ("udp:127.0.0.2:2001 tcp:127.0.0.1:2000", ("127.0.0.2", 2001)),
        ("tcp:127.0.0.1:2000,udp:127.0.0.2:2001", ("127.0.0.2", 2001)),
        ("[::1]:2000", ("::1", 2000)),
        ("localhost", None),
        ("127.0.0.1:http", None),
        ("127.0.0.1:0", None),
        ("tcp:127.0.0.1:2000", None),
        ("a:1 b:2", None),
    ],
)
def test_the_daemon_address_is_its_udp_host_and_port_or_none_if_it_names_no_usable_one(
    value: str, expected: tuple[str, int] | None
) -> None:
    assert tracing.udp_address(value) == expected


# -------------------------------------------------------------------------------------- the segment


def test_an_attempt_sends_one_well_formed_segment_in_the_runs_trace(
    daemon: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", address_of(daemon))
    monkeypatch.setenv(
        "_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    )
    target = {
        "type": "http",
        "url": "https://user:pw@example.com:8443/hook/{{run_id}}?token=s3cret#x",
        "method": "POST",
    }
    tracing.attempt_span(job(**target), run(), attempt("RETRIABLE", 503, "HTTP 503"))

    segment = received(daemon)
    seen = traceparent(Delivery("job_1", RUN_ID, 2, SCHEDULED_FOR, None))  # what the target got
    _, trace, span, _ = seen.split("-")
    assert segment["id"] == span
    assert segment["trace_id"] == f"1-{trace[:8]}-{trace[8:]}"
    assert segment["name"] == "punctual-worker"
    assert "parent_id" not in segment and "origin" not in segment
    started = SCHEDULED_FOR.timestamp() + 60
    assert segment["start_time"] == pytest.approx(started) and segment["end_time"] == pytest.approx(
        started + 0.12
    )
    assert segment["annotations"] == {
        "job_id": "job_1",
        "run_id": RUN_ID,
        "attempt": 2,
        "outcome": "RETRIABLE",
        "lateness_ms": 3,
    }
    assert all(re.fullmatch(r"\w+", key, re.ASCII) for key in segment["annotations"]), "X-Ray's key rule"
    assert segment["error"] is True and segment["fault"] is True and "throttle" not in segment
    assert segment["metadata"]["punctual"]["target_type"] == "http"
    assert segment["metadata"]["punctual"]["lambda_trace"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert segment["metadata"]["punctual"]["error"] == "HTTP 503"
    assert segment["http"] == {
        "request": {"method": "POST", "url": "https://example.com:8443/hook/{{run_id}}"},
        "response": {"status": 503},
    }, "no credentials, query or fragment"
    assert nothing_more(daemon)


def test_a_successful_attempt_of_another_target_type_has_no_error_and_no_http_block(
    daemon: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", f"tcp:127.0.0.1:9 udp:{address_of(daemon)}")
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    sqs = {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"}
    tracing.attempt_span(job(**sqs), run(lateness_ms=None), attempt("SUCCEEDED", None))
    segment = received(daemon)
    assert not {"error", "fault", "throttle", "http"} & segment.keys()
    assert segment["annotations"]["outcome"] == "SUCCEEDED" and "lateness_ms" not in segment["annotations"]
    assert segment["metadata"]["punctual"]["target_type"] == "sqs"
    assert "lambda_trace" not in segment["metadata"]["punctual"]


def test_without_a_daemon_address_nothing_is_built_or_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_XRAY_DAEMON_ADDRESS", raising=False)
    # Recorded, not raised: attempt_span swallows whatever its parts raise (it never costs an outcome).
    made: list[str] = []

    def forbidden(name: str) -> Any:
        def called(*_args: object, **_kwargs: object) -> Any:
            made.append(name)
            raise OSError(name)

        return called

    monkeypatch.setattr(socket, "socket", forbidden("socket"))
    monkeypatch.setattr(tracing, "attempt_segment", forbidden("segment"))
    tracing.attempt_span(job(), run(), attempt())
    assert made == [], "no socket and no segment when tracing is off"
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", "127.0.0.1:2000")
    tracing.attempt_span(job(), run(), attempt())
    assert made == ["segment"], "the stubs see a call when tracing is on"


def test_a_segment_that_cannot_be_sent_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> Any:
        raise OSError("network is unreachable")

    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", "127.0.0.1:2000")
    with monkeypatch.context() as patched:
        patched.setattr(socket, "socket", broken)
        tracing.attempt_span(job(), run(), attempt())
    with monkeypatch.context() as patched:
        patched.setattr(socket, "getaddrinfo", broken)  # a daemon host that does not resolve
        tracing.attempt_span(job(), run(), attempt())
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", "not an address")
    tracing.attempt_span(job(), run(), attempt())


# ------------------------------------------------------------------------- the worker, on the fakes


def test_the_worker_sends_a_segment_per_attempt_of_a_run_that_retries_once(
    clock: Clock, daemon: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", address_of(daemon))
    settings = Settings(
        table_name="memory",
        queue_url="memory://work",
        dlq_url="memory://dlq",
        shard_count=4,
        run_trace_percent=100,
    )
    engine = Harness(
        settings,
        clock,
        MemoryStore(),
        MemoryQueue(delays=False),
        ScriptedTargets(failure(503, retriable=True)),
        NetworkPolicy(allow_loopback=False, allow_list=("example.com",)),
    )
    body = {
        "schedule": {"at": (clock() + timedelta(seconds=5)).isoformat()},
        "target": {"type": "http", "url": "https://example.com/hook"},
    }
    created = engine.service.create_job("alice", CreateJobIn.model_validate(body))
    store, targets, deliver_all = engine.store, engine.targets, engine.deliver_all

    clock.advance(5)
    deliver_all()  # attempt 1: 503, retried
    clock.advance(60)
    deliver_all()  # attempt 2: 200

    (stored,) = store.runs[created["job_id"]].values()
    assert stored.status is RunStatus.SUCCEEDED
    first, second = received(daemon), received(daemon)
    assert nothing_more(daemon), "one segment an attempt"
    assert first["trace_id"] == second["trace_id"] and first["id"] != second["id"]
    seen = [traceparent(delivery).split("-") for _spec, delivery, _timeout in targets.deliveries]
    assert [first["id"], second["id"]] == [span for _, _, span, _ in seen], "the span ids the target saw"
    assert first["trace_id"] == xray_trace_id(traceparent(targets.deliveries[0][1]))
    assert int(first["trace_id"].split("-")[1], 16) == int(stored.scheduled_for.timestamp())
    assert [s["annotations"]["outcome"] for s in (first, second)] == ["RETRIABLE", "SUCCEEDED"]
    assert first.get("error") is True and "error" not in second
    assert [s["annotations"]["attempt"] for s in (first, second)] == [1, 2]
    assert first["start_time"] == pytest.approx(stored.attempts[0].started_at.timestamp())
    assert second["end_time"] == pytest.approx(stored.attempts[1].finished_at.timestamp())  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------- sampling


def test_a_share_of_runs_is_traced_chosen_by_the_run_id_and_the_flag_says_which() -> None:
    ids = [f"20261122T12{m:02d}{s:02d}.000Z-{m:04x}{s:04x}" for m in range(60) for s in range(0, 60, 3)]
    traced = [run_id for run_id in ids if tracing.sampled(run_id, 5)]
    assert 0.02 < len(traced) / len(ids) < 0.08, "about 5 in 100"
    assert traced == [run_id for run_id in ids if tracing.sampled(run_id, 5)], "the same every time"
    assert not any(tracing.sampled(run_id, 0) for run_id in ids)
    assert all(tracing.sampled(run_id, 100) for run_id in ids)
    assert set(traced) <= {run_id for run_id in ids if tracing.sampled(run_id, 50)}, "a larger share adds"
    on = next(run_id for run_id in ids if tracing.sampled(run_id, 5))
    off = next(run_id for run_id in ids if not tracing.sampled(run_id, 5))
    assert traceparent_of("j", on, 1).endswith("-01")
    assert traceparent_of("j", off, 1, sampled=False).endswith("-00")


def test_a_run_not_sampled_sends_no_segment(daemon: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", address_of(daemon))
    tracing.attempt_span(job(), run(), attempt(), percent=0)
    assert nothing_more(daemon)
    tracing.attempt_span(job(), run(), attempt(), percent=100)
    assert received(daemon)["annotations"]["run_id"] == run().run_id

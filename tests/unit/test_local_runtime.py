"""The local runtime's own parts: tokens, the HTTP → API Gateway event translation, the supervisor."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time

import pytest

from punctual.local.env import DEFAULT_OWNER, DEFAULT_TOKEN, parse_tokens
from punctual.local.gateway import build_event
from punctual.local.supervisor import LocalStack, Role
from punctual_functions.core.settings import Settings


def test_without_tokens_configured_the_dev_token_is_owner_local() -> None:
    assert parse_tokens(None) == {DEFAULT_TOKEN: DEFAULT_OWNER}


def test_tokens_map_to_owners() -> None:
    assert parse_tokens("t1=alice, t2=bob") == {"t1": "alice", "t2": "bob"}


def test_a_malformed_token_entry_is_refused_with_its_text() -> None:
    with pytest.raises(ValueError, match="'t1' is not token=owner"):
        parse_tokens("t1")


def test_http_request_becomes_a_rest_proxy_event_with_the_principal() -> None:
    event = build_event(
        "GET", "/v1/jobs/job_1/runs?limit=5&status=FAILED", {"Accept": "application/json"}, b"", "alice"
    )
    assert event["httpMethod"] == "GET"
    assert event["path"] == "/v1/jobs/job_1/runs"
    assert event["queryStringParameters"] == {"limit": "5", "status": "FAILED"}
    assert event["requestContext"]["authorizer"] == {"principalId": "alice"}
    assert event["body"] is None


def test_json_body_is_passed_as_text() -> None:
    event = build_event("POST", "/v1/jobs", {}, json.dumps({"a": 1}).encode(), "alice")
    assert json.loads(event["body"]) == {"a": 1} and event["isBase64Encoded"] is False


def test_settings_survive_the_trip_through_the_environment() -> None:
    settings = Settings(table_name="t", shard_count=3, http_allow_list=("10.0.0.0/8", "hooks.internal"))
    assert Settings.from_env(settings.to_env()) == settings


def test_supervisor_restarts_a_role_that_dies() -> None:
    stack = LocalStack(log=io.StringIO(), settings=Settings())
    role = Role("worker-1", [sys.executable, "-c", "import time; time.sleep(60)"])
    stack.roles.append(role)
    stack._spawn(role, dict(os.environ))
    assert role.process is not None
    first = role.process.pid
    try:
        os.kill(first, signal.SIGKILL)
        role.process.wait(timeout=5)
        stack.check()
        assert role.restarts == 1
        assert role.process.pid != first and role.process.poll() is None
        assert "worker-1 exited" in stack.log.getvalue()  # type: ignore[attr-defined]
    finally:
        stack.stop()


def test_every_session_of_a_role_is_the_same_owner() -> None:
    from punctual_functions.api.handler import owner_of_arn

    assert owner_of_arn("arn:aws:sts::123456789012:assumed-role/billing-service/i-0abc") == (
        "arn:aws:iam::123456789012:role/billing-service"
    )
    assert owner_of_arn("arn:aws:sts::123456789012:assumed-role/billing-service/other-session") == (
        "arn:aws:iam::123456789012:role/billing-service"
    )
    assert owner_of_arn("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"
    assert owner_of_arn(None) is None


def test_the_local_dispatcher_sweeps_as_it_starts_then_on_the_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    # A role restarted just before a tick must not miss it (EventBridge would not).
    from punctual.local import roles
    from punctual_functions.core.settings import Settings
    from punctual_functions.dispatcher import handler as dispatcher_handler

    calls: list[str] = []

    class Stop(BaseException):
        pass

    def tick(_event: object, _context: object) -> None:
        calls.append("tick")
        if calls.count("tick") == 2:
            raise Stop

    def sleep(seconds: float) -> None:
        calls.append("sleep")

    monkeypatch.setattr(dispatcher_handler, "handler", tick)
    monkeypatch.setattr(time, "sleep", sleep)
    with pytest.raises(Stop):
        roles.run_dispatcher(Settings(), 60.0)
    assert calls == ["tick", "sleep", "tick"]


def test_the_local_roles_read_the_allow_list_from_the_table_not_their_environment() -> None:
    """As on AWS (where hundreds of ARNs do not fit Lambda's 4 KB of environment): provisioning
    writes the list into the table's item, and the roles' environment carries none of it."""
    stack = LocalStack(settings_overrides={"allowed_target_arns": ("arn:aws:sqs:*:*:reports-*",)})
    stack.settings = Settings(allowed_target_arns=("arn:aws:sqs:*:*:reports-*",), queue_url="q")
    environment = stack.environment()
    assert environment["PUNCTUAL_QUEUE_URL"] == "q"
    assert Settings.from_env(environment).allowed_target_arns == ()

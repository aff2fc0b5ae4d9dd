"""The typed client's errors, each an ``ApiError`` subclass by the status's meaning, and its
construction: how it authenticates, what cannot go together, as the CLI is configured, and its export
by ``punctual.client`` without the CLI paying for its imports."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from punctual.client import (
    ApiError,
    Config,
    ConfigError,
    Conflict,
    InvalidRequest,
    NotFound,
    Punctual,
    ServerError,
    Throttled,
    Unauthorized,
)
from tests.support.scripted_api import ScriptedApi, scripted_api


@pytest.fixture
def api() -> Iterator[ScriptedApi]:
    with scripted_api() as running:
        yield running


@pytest.fixture
def client(api: ScriptedApi) -> Punctual:
    return Punctual(api.url, token="t0k")


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, InvalidRequest),
        (401, Unauthorized),
        (403, Unauthorized),
        (404, NotFound),
        (409, Conflict),
        (413, InvalidRequest),
        (415, InvalidRequest),
        (422, InvalidRequest),
        (429, Throttled),
        (500, ServerError),
        (503, ServerError),
    ],
)
def test_errors_are_api_error_subclasses_by_meaning_with_field_and_reason(
    api: ScriptedApi, client: Punctual, status: int, kind: type[ApiError]
) -> None:
    api.on("GET", "/v1/jobs/x", status, {"error": "e", "field": "job_id", "reason": f"because {status}"})
    with pytest.raises(ApiError) as raised:
        client.get_job("x")
    assert type(raised.value) is kind
    assert (raised.value.status, raised.value.field, raised.value.reason) == (
        status,
        "job_id",
        f"because {status}",
    )


def test_a_status_without_a_meaning_of_its_own_is_a_plain_api_error(
    api: ScriptedApi, client: Punctual
) -> None:
    api.on("GET", "/v1/jobs/x", 418, {"reason": "teapot"})
    with pytest.raises(ApiError) as raised:
        client.get_job("x")
    assert type(raised.value) is ApiError and raised.value.reason == "teapot"


def test_throttled_says_when_to_retry(api: ScriptedApi, client: Punctual) -> None:
    api.on("POST", "/v1/jobs", 429, {"error": "throttled", "reason": "slow down"}, {"Retry-After": "1"})
    with pytest.raises(Throttled) as raised:
        client.create_job({"cron": "0 3 * * *"}, {"type": "http", "url": "https://example.com"})
    assert raised.value.retry_after == 1.0


# ------------------------------------------------------------------------------------ construction


def test_how_a_client_authenticates_follows_what_it_is_given() -> None:
    deployed = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/"
    signed = Punctual(deployed).config
    assert (signed.endpoint, signed.auth, signed.region, signed.token) == (
        deployed.rstrip("/"),
        "sigv4",
        "eu-west-1",
        None,
    )
    assert Punctual(deployed, region="eu-central-1").config.region == "eu-central-1"
    keyed = Punctual(deployed, api_key="k" * 20).config
    assert (keyed.auth, keyed.api_key) == ("api_key", "k" * 20)
    local = Punctual("http://127.0.0.1:8000").config
    assert (local.auth, local.token) == ("bearer", "local-dev-token")
    role = Punctual(deployed, role_arn="arn:aws:iam::123456789012:role/jobs-owner").config
    assert (role.auth, role.role_arn, role.role_session_name) == (
        "sigv4",
        "arn:aws:iam::123456789012:role/jobs-owner",
        "punctual-client",
    )
    assert Punctual("https://punctual.example.com").config.region is None, "a custom domain names none"


@pytest.mark.parametrize(
    "arguments",
    [
        {"token": "t", "api_key": "k"},
        {"token": "t", "role_arn": "arn:aws:iam::123456789012:role/r"},
        {"role_arn": "arn:aws:iam::123456789012:user/someone"},
    ],
)
def test_arguments_that_cannot_go_together_are_a_config_error(arguments: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Punctual("https://abc123.execute-api.eu-west-1.amazonaws.com", **arguments)


def test_from_config_is_configured_as_the_cli_is(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "https://abc123.execute-api.eu-west-1.amazonaws.com")
    monkeypatch.setenv("PUNCTUAL_ROLE_ARN", "arn:aws:iam::123456789012:role/jobs-owner")
    config = Punctual.from_config().config
    assert (config.auth, config.role_arn) == ("sigv4", "arn:aws:iam::123456789012:role/jobs-owner")
    given = Config(endpoint="http://127.0.0.1:9", token="x")
    assert Punctual.from_config(given).config is given


def test_the_cli_does_without_the_typed_clients_imports() -> None:
    """``punctual.client`` exports the typed client without importing it (nor the API's models) until
    it is used: every CLI command imports ``punctual.client``."""
    code = (
        "import sys, punctual.cli, punctual.client\n"
        "print('punctual_functions.api.responses' in sys.modules)\n"
        "from punctual.client import Punctual\n"
        "print('punctual_functions.api.responses' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert shown.stdout.split() == ["False", "True"]


def test_punctual_client_exports_every_name_of_the_typed_client_for_mypy_as_at_run_time() -> None:
    import punctual.client
    from punctual import typed_client

    source = Path(punctual.client.__file__).read_text()
    for_mypy = re.findall(r"from punctual\.typed_client import (\w+) as \1\b", source)
    assert sorted(for_mypy) == sorted(typed_client.__all__)
    for name in typed_client.__all__:
        assert getattr(punctual.client, name) is getattr(typed_client, name)
    with pytest.raises(AttributeError):
        punctual.client.Nothing  # type: ignore[attr-defined]  # noqa: B018

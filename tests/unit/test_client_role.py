"""Acting as a role (``role_arn``, ``--role-arn``, ``PUNCTUAL_ROLE_ARN``): where the setting comes from,
and SigV4 signed with the credentials of the role assumed through STS (moto in process), refreshed
before they expire, only when a role is set."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from punctual.cli import main
from punctual.client import Authenticator, Config, ConfigError, ConnectionFailed, Punctual

ROLE = "arn:aws:iam::123456789012:role/jobs-owner"
DEPLOYED = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"


def save(path: Path, **data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


# ----------------------------------------------------------------------------------- the setting


def test_the_role_comes_from_the_flag_then_the_environment_then_the_config_file(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE + "-saved")
    assert Config.load(None, None).role_arn == ROLE + "-saved"
    monkeypatch.setenv("PUNCTUAL_ROLE_ARN", ROLE + "-env")
    assert Config.load(None, None).role_arn == ROLE + "-env"
    assert Config.load(None, None, role_arn=ROLE).role_arn == ROLE


def test_no_role_unless_one_is_set(config_file: Path) -> None:
    assert Config.load(DEPLOYED, None).role_arn is None


def test_the_saved_role_belongs_to_the_saved_endpoint(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE)
    elsewhere = Config.load("https://def456.execute-api.eu-west-1.amazonaws.com", None)
    assert (elsewhere.auth, elsewhere.role_arn) == ("sigv4", None)


def test_a_role_is_for_sigv4_only(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A token or an API key is not signed: a PUNCTUAL_ROLE_ARN in the shell does not get in the way
    of the local stack."""
    monkeypatch.setenv("PUNCTUAL_ROLE_ARN", ROLE)
    assert Config.load("http://127.0.0.1:8000", None).role_arn is None
    assert Config.load(DEPLOYED, None, api_key="k" * 20).role_arn is None
    assert Config.load(DEPLOYED, None).role_arn == ROLE


def test_an_arn_that_is_not_a_roles_is_a_config_error(config_file: Path) -> None:
    for wrong in ("jobs-owner", "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::12345:role/x"):
        with pytest.raises(ConfigError, match="not an IAM role ARN"):
            Config.load(DEPLOYED, None, role_arn=wrong)
    assert Config.load(DEPLOYED, None, role_arn="arn:aws-cn:iam::123456789012:role/a/b").role_arn


def test_save_keeps_the_role(config_file: Path) -> None:
    Config(endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE).save()
    assert json.loads(config_file.read_text())["role_arn"] == ROLE
    assert Config.load(None, None).role_arn == ROLE


def test_config_show_and_the_api_commands_take_role_arn(config_file: Path) -> None:
    shown = CliRunner().invoke(main, ["config", "show", "--endpoint", DEPLOYED, "--role-arn", ROLE])
    assert shown.exit_code == 0, shown.output
    assert f"role      {ROLE}" in shown.stdout
    refused = CliRunner().invoke(main, ["jobs", "list", "--endpoint", DEPLOYED, "--role-arn", "jobs-owner"])
    assert refused.exit_code == 2
    assert (
        refused.stderr == "error: 'jobs-owner' is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)\n"
    )


# ------------------------------------------------------------------------------ signing as the role


def signed_key(authenticator: Authenticator) -> str:
    """The access key id a request is signed with (its Authorization header's Credential)."""
    headers = authenticator.sign("GET", DEPLOYED + "/v1/jobs", None, {})
    return headers["Authorization"].split("Credential=")[1].split("/")[0]


def identity_of(frozen: Any, region: str) -> str:
    """Whom STS takes these credentials for (its caller identity's ARN)."""
    sts = boto3.client(
        "sts",
        region_name=region,
        aws_access_key_id=frozen.access_key,
        aws_secret_access_key=frozen.secret_key,
        aws_session_token=frozen.token,
    )
    return str(sts.get_caller_identity()["Arn"])


def caller_key() -> str:
    credentials = boto3.session.Session().get_credentials()
    assert credentials is not None
    return str(credentials.get_frozen_credentials().access_key)


def test_with_a_role_requests_are_signed_with_the_assumed_roles_credentials(moto_env: None) -> None:
    authenticator = Authenticator(Config(endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE))
    key = signed_key(authenticator)
    assert key != caller_key() and key.startswith("ASIA"), "STS's temporary credentials"
    credentials, region = authenticator.aws()
    frozen = credentials.get_frozen_credentials()
    headers = authenticator.sign("GET", DEPLOYED + "/v1/jobs", None, {})
    assert headers["X-Amz-Security-Token"] == frozen.token
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
    assert identity_of(frozen, region) == "arn:aws:sts::123456789012:assumed-role/jobs-owner/punctual-cli"


def test_without_a_role_the_callers_own_credentials_sign(moto_env: None) -> None:
    authenticator = Authenticator(Config(endpoint=DEPLOYED, auth="sigv4", region="eu-west-1"))
    assert signed_key(authenticator) == caller_key()


def test_the_typed_client_assumes_the_role_with_its_own_session_name(moto_env: None) -> None:
    client = Punctual(DEPLOYED, role_arn=ROLE)
    credentials, region = client.client.auth.aws()
    frozen = credentials.get_frozen_credentials()
    assert (frozen.access_key != caller_key(), region) == (True, "eu-west-1")
    assert identity_of(frozen, region).endswith(":assumed-role/jobs-owner/punctual-client")


def test_the_roles_credentials_are_assumed_again_before_they_expire(
    moto_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An hour on, botocore's refresh assumes the role again: the credentials age by their own expiry
    (private to botocore, set here rather than waited for)."""
    import botocore.credentials

    authenticator = Authenticator(Config(endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE))
    first = signed_key(authenticator)
    assert signed_key(authenticator) == first, "not assumed again for every request"
    credentials, _ = authenticator.aws()
    assert isinstance(credentials, botocore.credentials.RefreshableCredentials)
    now = botocore.credentials._local_now()  # type: ignore[attr-defined]
    # Five minutes left: within botocore's refresh windows; and 55 minutes on by the fetcher's clock,
    # so that the AssumeRole answer it cached is stale too.
    credentials._expiry_time = now + timedelta(minutes=5)  # type: ignore[attr-defined]
    monkeypatch.setattr(botocore.credentials, "_local_now", lambda: now + timedelta(minutes=55))
    assert signed_key(authenticator) != first


def refuse_assume_role(monkeypatch: pytest.MonkeyPatch) -> None:
    """STS refuses every AssumeRole (moto serves them all)."""
    from botocore.credentials import AssumeRoleCredentialFetcher
    from botocore.exceptions import ClientError

    def refused(self: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "AccessDenied", "Message": "not authorized to perform sts:AssumeRole"}},
            "AssumeRole",
        )

    monkeypatch.setattr(AssumeRoleCredentialFetcher, "_get_credentials", refused)


def test_a_role_that_cannot_be_assumed_is_one_line(moto_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_assume_role(monkeypatch)
    authenticator = Authenticator(Config(endpoint=DEPLOYED, auth="sigv4", region="eu-west-1", role_arn=ROLE))
    with pytest.raises(ConnectionFailed, match=f"^cannot assume role {ROLE}: .*AccessDenied"):
        authenticator.aws()


def test_a_command_whose_role_cannot_be_assumed_exits_5_with_one_line(
    moto_env: None, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_assume_role(monkeypatch)
    result = CliRunner().invoke(main, ["jobs", "list", "--endpoint", DEPLOYED, "--role-arn", ROLE])
    assert result.exit_code == 5
    assert result.stderr.startswith(f"error: cannot assume role {ROLE}: ") and result.stderr.count("\n") == 1


class Recorder:
    """An HTTP server answering every request with an empty page, keeping each one's headers."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                recorder.headers.append(dict(self.headers.items()))
                body = b'{"items": [], "next_cursor": null}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    running = Recorder()
    threading.Thread(target=running.server.serve_forever, args=(0.05,), daemon=True).start()
    yield running
    running.server.shutdown()
    running.server.server_close()


def test_the_cli_signs_as_the_role_given_by_flag_or_environment(
    moto_env: None, config_file: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local address would mean bearer: save it as a SigV4 endpoint, as from-stack would a deployment.
    Config(endpoint=recorder.url, auth="sigv4", region="eu-west-1").save()
    plain = CliRunner().invoke(main, ["jobs", "list"])
    assert plain.exit_code == 0, plain.output
    as_role = CliRunner().invoke(main, ["jobs", "list", "--role-arn", ROLE])
    assert as_role.exit_code == 0, as_role.output
    monkeypatch.setenv("PUNCTUAL_ROLE_ARN", ROLE)
    from_env = CliRunner().invoke(main, ["jobs", "list"])
    assert from_env.exit_code == 0, from_env.output
    keys = [headers["Authorization"].split("Credential=")[1].split("/")[0] for headers in recorder.headers]
    assert keys[0] == caller_key()
    assert keys[1] != caller_key() and keys[2] != caller_key()

"""The CLI without a stack: relative times, tables, config resolution, exit codes, SigV4 (from-stack,
which reads a stack through moto, is in tests/integration/test_cli_from_stack.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from punctual.cli import main, parse_when
from punctual.client import DEFAULT_ENDPOINT, ApiError, Client, Config, ConnectionFailed
from punctual.output import relative, schedule_text, table, target_text

NOW = datetime(2026, 11, 22, 12, 0, 5, 250_000, tzinfo=UTC)
DEPLOYED = "https://abc.execute-api.us-east-1.amazonaws.com/prod"


def save(path: Path, **data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


# ------------------------------------------------------------------------------------ parse_when


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("in 30s", timedelta(seconds=30)),
        ("in 3 s", timedelta(seconds=3)),
        ("in 10 secs", timedelta(seconds=10)),
        ("in 1 second", timedelta(seconds=1)),
        ("in 5 minutes", timedelta(minutes=5)),
        ("in 5m", timedelta(minutes=5)),
        ("in 1 min", timedelta(minutes=1)),
        ("in 2h", timedelta(hours=2)),
        ("in 3 hours", timedelta(hours=3)),
        ("in 1 day", timedelta(days=1)),
        ("in 2d", timedelta(days=2)),
        ("IN 30 SECONDS", timedelta(seconds=30)),
        ("  in 30s  ", timedelta(seconds=30)),
    ],
)
def test_parse_when_turns_a_relative_time_into_utc_iso_with_milliseconds(text: str, delta: timedelta) -> None:
    expected = NOW + delta
    assert parse_when(text, now=NOW) == expected.strftime("%Y-%m-%dT%H:%M:%S.250Z")


def test_parse_when_uses_the_current_time_by_default() -> None:
    before = datetime.now(UTC)
    moment = datetime.fromisoformat(parse_when("in 30s").replace("Z", "+00:00"))
    after = datetime.now(UTC)
    assert before + timedelta(seconds=29.999) <= moment <= after + timedelta(seconds=30)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-22T13:00:05+01:00",
        "2026-11-22T12:00:05Z",
        "at(2026-11-22T13:00:05)",
        "tomorrow",
        "in 1.5h",
        "in 2 hrs",
        "in -5s",
        "30s",
        "",
    ],
)
def test_parse_when_passes_anything_else_to_the_api_as_written(text: str) -> None:
    assert parse_when(text, now=NOW) == text


# --------------------------------------------------------------------------------------- output


def test_table_aligns_columns_under_upper_case_headers() -> None:
    text = table([["job_1", "ACTIVE", 3], ["job_22", None, {"a": 1}]], ["job id", "status", "runs"])
    assert text.splitlines() == [
        "JOB ID  STATUS  RUNS",
        "job_1   ACTIVE  3",
        'job_22  -       {"a":1}',
    ]


def test_table_cuts_long_cells_so_a_row_stays_one_line() -> None:
    text = table([["x" * 100, "y"]], ["a", "b"])
    row = text.splitlines()[1]
    assert row.startswith("x" * 59 + "…") and row.endswith("  y")
    assert "\n" not in row


def test_table_with_no_rows_is_just_the_header() -> None:
    assert table([], ["run id", "status"]) == "RUN ID  STATUS"


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (None, "-"),
        ("", "-"),
        ("2026-11-22T12:00:47.250Z", "12:00:47 (in 42s)"),
        ("2026-11-22T12:00:05.250Z", "12:00:05 (in 0s)"),
        ("2026-11-22T11:59:55.250Z", "11:59:55 (10s ago)"),
        ("2026-11-22T12:02:05.250Z", "12:02:05 (in 2m)"),
        ("2026-11-22T13:30:05.250Z", "13:30:05 (in 1.5h)"),
        ("2026-11-24T12:00:05.250Z", "2026-11-24 12:00:05 (in 2.0d)"),
        ("2026-11-20T12:00:05.250Z", "2026-11-20 12:00:05 (2.0d ago)"),
    ],
)
def test_relative_shows_a_time_and_how_far_off_it_is(moment: str | None, expected: str) -> None:
    assert relative(moment, now=NOW) == expected


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ({"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"}, "cron 0 13 * * 1-5 Europe/Berlin"),
        ({"cron": "*/10 * * * * *", "timezone": "UTC"}, "cron */10 * * * * *"),
        ({"cron": "cron(0 13 ? * MON-FRI *)"}, "cron cron(0 13 ? * MON-FRI *)"),
        ({"rate": "5 minutes", "timezone": "UTC", "misfire": "skip"}, "rate 5 minutes"),
        ({"at": "2026-11-22T12:00:05.000Z", "timezone": "Europe/Berlin"}, "at 2026-11-22T12:00:05.000Z"),
        ({}, "-"),
    ],
)
def test_a_schedule_reads_as_its_form_and_expression_with_any_zone_but_utc(
    schedule: dict[str, Any], expected: str
) -> None:
    assert schedule_text(schedule) == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            {"type": "http", "url": "https://example.com/hook", "method": "POST"},
            "http https://example.com/hook",
        ),
        ({"type": "lambda", "function": "report"}, "lambda report"),
        (
            {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q"},
            "sqs https://sqs.eu-west-1.amazonaws.com/1/q",
        ),
        ({"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:1:t"}, "sns arn:aws:sns:us-east-1:1:t"),
        ({"type": "eventbridge", "bus": "orders", "source": "app"}, "eventbridge orders"),
        ({"type": "eventbridge"}, "eventbridge default"),
    ],
)
def test_a_target_reads_as_its_type_and_where_it_delivers(target: dict[str, Any], expected: str) -> None:
    assert target_text(target) == expected


# ------------------------------------------------------------------------------- Config.load


def test_without_anything_the_local_stack_with_the_dev_token(config_file: Path) -> None:
    assert Config.load(None, None) == Config(
        endpoint=DEFAULT_ENDPOINT, token="local-dev-token", auth="bearer", region=None
    )


def test_the_config_file_beats_the_default(config_file: Path) -> None:
    save(config_file, endpoint="http://127.0.0.1:9000/", token="file-token")
    config = Config.load(None, None)
    assert (config.endpoint, config.token, config.auth) == ("http://127.0.0.1:9000", "file-token", "bearer")


def test_the_environment_beats_the_config_file(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save(config_file, endpoint="http://127.0.0.1:9000", token="file-token")
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "http://localhost:9100")
    monkeypatch.setenv("PUNCTUAL_TOKEN", "env-token")
    config = Config.load(None, None)
    assert (config.endpoint, config.token) == ("http://localhost:9100", "env-token")


def test_flags_beat_the_environment(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save(config_file, endpoint="http://127.0.0.1:9000", token="file-token")
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "http://localhost:9100")
    monkeypatch.setenv("PUNCTUAL_TOKEN", "env-token")
    config = Config.load("http://127.0.0.1:9200/", "flag-token")
    assert (config.endpoint, config.token, config.auth) == ("http://127.0.0.1:9200", "flag-token", "bearer")


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:8000", "http://localhost:8100", "http://[::1]:8000", "http://127.0.0.1"]
)
def test_local_endpoints_default_to_the_dev_token(config_file: Path, endpoint: str) -> None:
    config = Config.load(endpoint, None)
    assert (config.auth, config.token) == ("bearer", "local-dev-token")


def test_a_deployed_endpoint_without_a_token_is_signed_with_sigv4(config_file: Path) -> None:
    config = Config.load(DEPLOYED + "/", None)
    assert (config.endpoint, config.auth, config.token) == (DEPLOYED, "sigv4", None)


def test_a_deployed_endpoint_with_a_token_uses_the_token(config_file: Path) -> None:
    config = Config.load(DEPLOYED, "api-token")
    assert (config.auth, config.token) == ("bearer", "api-token")


def test_region_from_the_config_file_then_aws_region_then_aws_default_region(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    assert Config.load(DEPLOYED, None).region == "eu-central-1"
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert Config.load(DEPLOYED, None).region == "us-west-2"
    # The saved region is where the stack (and so its API) lives.
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1")
    assert Config.load(None, None).region == "eu-west-1"


def test_a_saved_deployed_config_is_used_when_nothing_overrides_it(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1")
    assert Config.load(None, None) == Config(endpoint=DEPLOYED, token=None, auth="sigv4", region="eu-west-1")


def test_a_local_endpoint_from_env_uses_the_dev_token_even_after_from_stack(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1")
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "http://127.0.0.1:8000")
    config = Config.load(None, None)
    assert (config.endpoint, config.auth, config.token) == (
        "http://127.0.0.1:8000",
        "bearer",
        "local-dev-token",
    )


def test_a_token_flag_means_bearer_even_after_from_stack(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="sigv4", region="eu-west-1")
    config = Config.load("http://127.0.0.1:8100", "flag-token")
    assert (config.auth, config.token) == ("bearer", "flag-token")


def test_config_show_prints_what_the_other_commands_would_use(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "http://127.0.0.1:8100")
    result = CliRunner().invoke(main, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "endpoint  http://127.0.0.1:8100",
        "auth      bearer",
        "region    -",
    ]
    result = CliRunner().invoke(main, ["config", "show", "--endpoint", DEPLOYED])
    assert "auth      sigv4" in result.stdout


API_KEY = "k3yV4lu3-0f-th3-d3pl0ym3nt-Xy9z"


def test_a_saved_api_key_config_is_used_when_nothing_overrides_it(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="api_key", region="eu-west-1", api_key=API_KEY)
    config = Config.load(None, None)
    assert config == Config(
        endpoint=DEPLOYED, token=None, auth="api_key", region="eu-west-1", api_key=API_KEY
    )
    assert API_KEY not in repr(config)


def test_an_api_key_from_flag_or_environment_means_api_key_mode(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Config.load(DEPLOYED, None, api_key="flag-key")
    assert (config.auth, config.api_key, config.token) == ("api_key", "flag-key", None)
    monkeypatch.setenv("PUNCTUAL_API_KEY", "env-key")
    assert Config.load(DEPLOYED, None).api_key == "env-key"
    assert Config.load(DEPLOYED, None, api_key="flag-key").api_key == "flag-key"


def test_a_token_or_another_endpoint_beats_a_saved_api_key(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(config_file, endpoint=DEPLOYED, auth="api_key", region="eu-west-1", api_key=API_KEY)
    config = Config.load(None, "flag-token")
    assert (config.auth, config.token, config.api_key) == ("bearer", "flag-token", None)
    monkeypatch.setenv("PUNCTUAL_ENDPOINT", "http://127.0.0.1:8000")
    config = Config.load(None, None)
    assert (config.auth, config.token, config.api_key) == ("bearer", "local-dev-token", None)


def test_api_key_mode_without_a_key_is_a_one_line_error(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="api_key", region="eu-west-1")
    result = CliRunner().invoke(main, ["jobs", "list"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: auth api_key needs a key: --api-key, PUNCTUAL_API_KEY")
    assert len(result.stderr.splitlines()) == 1


def test_config_show_never_prints_the_api_key_in_full(config_file: Path) -> None:
    save(config_file, endpoint=DEPLOYED, auth="api_key", region="eu-west-1", api_key=API_KEY)
    result = CliRunner().invoke(main, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"endpoint  {DEPLOYED}",
        "auth      api_key",
        "region    eu-west-1",
        "api key   …Xy9z",
    ]
    result = CliRunner().invoke(main, ["config", "show", "--api-key", "short"])
    assert "short" not in result.stdout and "api key   …" in result.stdout


def test_a_malformed_config_file_is_a_one_line_error(config_file: Path) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text("{not json")
    result = CliRunner().invoke(main, ["jobs", "list"])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and str(config_file) in result.stderr


# ------------------------------------------------------------------ exit codes and error lines


class FakeApi:
    """A tiny HTTP server: ``GET /v1/jobs/<status>`` answers with that status and a JSON error body;
    every request's headers are kept."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                api.headers.append(dict(self.headers.items()))
                api.bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                last = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
                if last == "empty":
                    self._send(503, b"", "text/plain")
                elif last == "html":
                    body = b"<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>\n"
                    self._send(502, body, "text/html")
                elif last.isdigit():
                    error = {"error": "x", "field": "job_id", "reason": f"because {last}"}
                    self._send(int(last), json.dumps(error).encode(), "application/json")
                else:
                    self._send(200, b'{"items": [], "next_cursor": null}', "application/json")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeApi:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_api(config_file: Path) -> Iterator[FakeApi]:
    with FakeApi() as api:
        yield api


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, 1), (401, 1), (403, 1), (404, 3), (409, 4), (413, 1), (422, 1), (500, 5), (503, 5)],
)
def test_api_errors_map_to_exit_codes_with_one_line_carrying_field_and_reason(
    fake_api: FakeApi, status: int, code: int
) -> None:
    result = CliRunner().invoke(main, ["jobs", "get", str(status), "--endpoint", fake_api.url])
    assert result.exit_code == code
    assert result.stderr == f"error: job_id: because {status}\n"
    assert result.stdout == ""


def test_the_bearer_token_and_accept_header_are_sent(fake_api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["jobs", "list", "--endpoint", fake_api.url, "--token", "t0k"])
    assert result.exit_code == 0, result.output
    assert fake_api.headers[-1]["Authorization"] == "Bearer t0k"
    assert fake_api.headers[-1]["Accept"] == "application/json"


def test_the_api_key_is_sent_as_x_api_key_without_any_authorization(
    fake_api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(main, ["jobs", "list", "--endpoint", fake_api.url, "--api-key", API_KEY])
    assert result.exit_code == 0, result.output
    assert fake_api.headers[-1]["x-api-key"] == API_KEY
    assert "Authorization" not in fake_api.headers[-1]
    # PUNCTUAL_API_KEY, like PUNCTUAL_TOKEN
    monkeypatch.setenv("PUNCTUAL_API_KEY", "env-key")
    result = CliRunner().invoke(main, ["jobs", "list", "--endpoint", fake_api.url])
    assert result.exit_code == 0, result.output
    assert fake_api.headers[-1]["x-api-key"] == "env-key"


def test_an_unreachable_endpoint_exits_5_with_one_line(config_file: Path) -> None:
    from punctual.local.supervisor import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(main, ["stats", "--endpoint", endpoint])
    assert result.exit_code == 5
    assert result.stderr.startswith(f"error: cannot reach {endpoint}")
    assert len(result.stderr.splitlines()) == 1


def test_a_non_json_5xx_exits_5(fake_api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["jobs", "get", "html", "--endpoint", fake_api.url])
    assert result.exit_code == 5
    assert result.stderr.startswith("error: <html>")


def test_a_non_json_error_body_is_still_one_line(fake_api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["jobs", "get", "html", "--endpoint", fake_api.url])
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_an_error_without_a_body_names_the_status(fake_api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["jobs", "get", "empty", "--endpoint", fake_api.url])
    assert result.exit_code == 5
    assert result.stderr == "error: HTTP 503\n"


def test_usage_errors_exit_2_before_any_request(fake_api: FakeApi) -> None:
    runner = CliRunner()
    for argv in (
        ["jobs", "create", "--url", "http://x"],
        ["jobs", "create", "--at", "in 5s", "--cron", "* * * * *", "--url", "http://x"],
        ["jobs", "create", "--at", "in 5s"],
        ["jobs", "create", "--at", "in 5s", "--url", "http://x", "--sqs", "https://q"],
        ["jobs", "create", "--at", "in 5s", "--url", "http://x", "--payload", "{nope"],
        ["jobs", "create", "--at", "in 5s", "--url", "http://x", "--tag", "novalue"],
        ["jobs", "create", "--at", "in 5s", "--url", "http://x", "--header", "no-colon"],
        ["jobs", "list", "--limit", "0"],
        ["jobs", "list", "--status", "active"],
        ["jobs", "nope"],
    ):
        result = runner.invoke(main, [*argv, "--endpoint", fake_api.url])
        assert result.exit_code == 2, (argv, result.output)
    assert fake_api.headers == []


def test_a_missing_payload_file_is_a_usage_error(fake_api: FakeApi, tmp_path: Path) -> None:
    argv = ["jobs", "create", "--at", "in 5s", "--url", "http://x", "--payload", f"@{tmp_path}/missing.json"]
    result = CliRunner().invoke(main, [*argv, "--endpoint", fake_api.url])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and "--payload" in result.stderr


def test_runs_can_be_filtered_on_every_run_status(fake_api: FakeApi) -> None:
    result = CliRunner().invoke(
        main, ["jobs", "runs", "job_1", "--status", "SCHEDULED", "--endpoint", fake_api.url]
    )
    assert result.exit_code == 0, result.output


def test_create_sends_every_option_group_in_the_body(fake_api: FakeApi, tmp_path: Path) -> None:
    payload = tmp_path / "payload.json"
    payload.write_text('{"report": "sales"}')
    argv = [
        "jobs", "create", "--name", "nightly", "--cron", "0 13 * * 1-5", "--timezone", "Europe/Berlin",
        "--start-at", "2026-12-01T00:00:00Z", "--end-at", "2027-01-01T00:00:00Z", "--misfire", "skip",
        "--catchup-seconds", "60", "--overlap", "skip", "--url", "http://127.0.0.1:9/hook", "--method", "put",
        "--header", "X-Team: data", "--payload", f"@{payload}", "--max-attempts", "5", "--backoff", "2",
        "--max-backoff", "30", "--timeout", "20", "--tag", "team=data", "--tag", "env=dev",
        "--signing-secret", "s3cret", "--idempotency-key", "key-1", "--endpoint", fake_api.url,
        "--max-runs", "12", "--on-complete", "delete", "--delete-after-days", "3",
        "--alert-url", "https://hooks.example.com/alerts", "--alert-on", "failed", "--alert-on", "missed",
        "--alert-late", "30", "--alert-running", "600",
        "--dead-letter", "https://sqs.eu-west-1.amazonaws.com/123456789012/failures",
    ]  # fmt: skip
    result = CliRunner().invoke(main, argv)
    # The fake API answers a list page, which is not a job: only the request matters here.
    assert fake_api.headers[-1]["Idempotency-Key"] == "key-1"
    assert json.loads(fake_api.bodies[-1]) == {
        "name": "nightly",
        "schedule": {
            "cron": "0 13 * * 1-5",
            "timezone": "Europe/Berlin",
            "start_at": "2026-12-01T00:00:00Z",
            "end_at": "2027-01-01T00:00:00Z",
            "misfire": "skip",
            "catchup_seconds": 60,
            "overlap": "skip",
        },
        "target": {
            "type": "http",
            "url": "http://127.0.0.1:9/hook",
            "method": "PUT",
            "headers": {"X-Team": "data"},
        },
        "payload": {"report": "sales"},
        "retry": {"max_attempts": 5, "backoff_seconds": 2.0, "max_backoff_seconds": 30.0},
        "timeout_seconds": 20,
        "tags": {"team": "data", "env": "dev"},
        "signing_secret": "s3cret",
        "max_runs": 12,
        "on_complete": "delete",
        "delete_after_days": 3,
        "alerts": {
            "target": {"type": "http", "url": "https://hooks.example.com/alerts"},
            "failed": True,
            "missed": True,
            "late_seconds": 30,
            "running_seconds": 600,
        },
        "dead_letter": {
            "type": "sqs",
            "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/failures",
        },
    }
    assert result.exit_code != 0  # the page is not a job view


@pytest.mark.parametrize(
    ("flags", "target"),
    [
        (["--lambda", "report"], {"type": "lambda", "function": "report"}),
        (["--sqs", "https://sqs.us-east-1.amazonaws.com/1/q"], {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/1/q"}),
        (["--sns", "arn:aws:sns:us-east-1:1:t"], {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:1:t"}),
        (
            ["--eventbridge", "orders", "--source", "app", "--detail-type", "Tick"],
            {"type": "eventbridge", "bus": "orders", "source": "app", "detail_type": "Tick"},
        ),
    ],
)  # fmt: skip
def test_create_builds_each_aws_target(fake_api: FakeApi, flags: list[str], target: dict[str, Any]) -> None:
    CliRunner().invoke(main, ["jobs", "create", "--rate", "5 minutes", *flags, "--endpoint", fake_api.url])
    assert json.loads(fake_api.bodies[-1]) == {"schedule": {"rate": "5 minutes"}, "target": target}


# ----------------------------------------------------------------------------------------- SigV4


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_sigv4_signs_for_execute_api_in_the_configured_region(fake_credentials: None) -> None:
    client = Client(Config(endpoint=DEPLOYED, auth="sigv4", region="us-east-1"))
    body = b'{"schedule": {"rate": "5 minutes"}}'
    headers = client._sign(
        "POST",
        DEPLOYED + "/v1/jobs",
        body,
        {"Accept": "application/json", "Content-Type": "application/json"},
    )
    authorization = headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/execute-api/aws4_request" in authorization
    assert "SignedHeaders=" in authorization and "Signature=" in authorization
    assert headers["X-Amz-Security-Token"] == "session-token"
    assert "X-Amz-Date" in headers
    assert headers["Content-Type"] == "application/json"


def test_sigv4_falls_back_to_the_session_region(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    headers = Client(Config(endpoint=DEPLOYED, auth="sigv4"))._sign("GET", DEPLOYED + "/v1/stats", None, {})
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]


def test_sigv4_requests_carry_the_signature_and_no_bearer_token(fake_credentials: None) -> None:
    with FakeApi() as api:
        Client(Config(endpoint=api.url, auth="sigv4", region="us-east-1")).list_jobs(limit=5)
    assert api.headers[-1]["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")


def test_sigv4_without_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    for key in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = Client(Config(endpoint=DEPLOYED, auth="sigv4", region="us-east-1"))
    with pytest.raises(ConnectionFailed, match="no AWS credentials"):
        client._sign("GET", DEPLOYED + "/v1/stats", None, {})


def test_api_error_message_is_field_and_reason() -> None:
    assert (
        str(ApiError(422, {"field": "schedule.cron", "reason": "bad minute"})) == "schedule.cron: bad minute"
    )
    assert str(ApiError(401, {"message": "Unauthorized"})) == "Unauthorized"
    assert str(ApiError(500, {})) == "HTTP 500"

"""Schemathesis against the running local stack's ``/openapi.json``: property-based requests to every
operation, bounded so the module takes about a minute.

The CLI runs in a subprocess (the same one a developer would run by hand, see docs/api.md), with the
bearer token and a config file that points the path parameters at a real job and run, so that the
operations behind ``{job_id}`` and ``{run_id}`` reach their logic instead of answering 404.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from functions.core.model import parse_iso
from tests.e2e.conftest import Api

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


@pytest.fixture
def fuzz_config(local_stack: Api, tmp_path: Path) -> Iterator[Path]:
    """A job and a run for the path parameters; afterwards, every job created meanwhile is cancelled."""
    started = datetime.now(UTC)
    status, job = local_stack.call(
        "POST",
        "/v1/jobs",
        {
            "name": f"schemathesis-{started.timestamp():.0f}",
            "schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"},
            # the stack's own health endpoint: a run started by the fuzzer succeeds at once
            "target": {"type": "http", "url": local_stack.base_url + "/v1/health", "method": "GET"},
        },
    )
    assert status == 201, job
    status, run = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/run")
    assert status == 202, run
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\n"path.job_id" = "{job["job_id"]}"\n"path.run_id" = "{run["run_id"]}"\n')
    yield config
    cancel_jobs_created_since(local_stack, started)


def cancel_jobs_created_since(api: Api, started: datetime) -> None:
    cursor = None
    while True:
        status, page = api.call("GET", "/v1/jobs?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        for job in page["items"]:
            if parse_iso(job["created_at"]) < started:
                return  # newest first: the rest is older
            if job["status"] in ("ACTIVE", "PAUSED"):
                api.call("DELETE", f"/v1/jobs/{job['job_id']}")
        cursor = page["next_cursor"]
        if not cursor:
            return


# Methods the coverage phase sends to paths that do not declare them.
UNEXPECTED_METHODS = ["get", "put", "post", "delete", "options", "patch", "trace"]


def schemathesis(api: Api, config: Path, *options: str) -> tuple[int, str]:
    methods = ", ".join(f'"{method}"' for method in UNEXPECTED_METHODS)
    config.write_text(config.read_text() + f"\n[phases.coverage]\nunexpected-methods = [{methods}]\n")
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        f"{api.base_url}/openapi.json",
        "--header",
        f"Authorization: Bearer {api.token}",
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--no-color",
        *options,
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=240, cwd=config.parent, check=False
    )
    output = result.stdout + result.stderr
    print(output)  # shown by pytest when the test fails
    return result.returncode, output


def test_given_schema_valid_requests_when_fuzzed_then_no_5xx_and_answers_match_their_schemas(
    local_stack: Api, fuzz_config: Path
) -> None:
    code, output = schemathesis(
        local_stack,
        fuzz_config,
        "--mode",
        "positive",
        "--max-examples",
        "10",
        "--checks",
        "not_a_server_error,response_schema_conformance,content_type_conformance",
    )
    assert code == 0, output[-20000:]
    assert "Tested: 13" in output or "13/13" in output, output[-5000:]


def test_given_invalid_requests_and_undeclared_methods_when_fuzzed_then_no_5xx(
    local_stack: Api, fuzz_config: Path
) -> None:
    code, output = schemathesis(
        local_stack,
        fuzz_config,
        "--mode",
        "negative",
        "--phases",
        "coverage,fuzzing",
        "--max-examples",
        "10",
        "--seed",
        "1",
        "--checks",
        "not_a_server_error",
    )
    assert code == 0, output[-20000:]


def test_given_valid_requests_when_fuzzed_then_every_status_code_is_documented(
    local_stack: Api, fuzz_config: Path
) -> None:
    code, output = schemathesis(
        local_stack,
        fuzz_config,
        "--mode",
        "positive",
        "--phases",
        "fuzzing",
        "--max-examples",
        "3",
        "--seed",
        "1",
        "--checks",
        "status_code_conformance",
        "--include-path-regex",
        "^/v1/(stats|jobs)$",
    )
    assert code == 0, output[-20000:]

"""Schemathesis against the running local stack's ``/openapi.json``: property-based requests to every
operation, bounded so the module takes about two minutes.

The CLI runs in a subprocess (the same one a developer would run by hand, see docs/api.md), with the
bearer token and a config file. For the single-request phases (examples, coverage, fuzzing) the config
points the path parameters at a real job and run, so that the operations behind ``{job_id}`` and
``{run_id}`` reach their logic instead of answering 404. The stateful phase instead follows the
document's OpenAPI links: it creates jobs and chains the ids of the answers into the next calls.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from punctual_functions.core.model import parse_iso
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
    limit_name = f"schemathesis-{started.timestamp():.0f}"
    status, limit = local_stack.call(
        "POST",
        "/v1/limits",
        {"name": limit_name, "match": "https://limit.schemathesis.test", "max_concurrent": 5},
    )
    assert status == 201, limit
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        f'[parameters]\n"path.job_id" = "{job["job_id"]}"\n"path.run_id" = "{run["run_id"]}"\n'
        f'"path.name" = "{limit_name}"\n'
    )
    status, before = local_stack.call("GET", "/v1/limits")
    assert status == 200, before
    before["items"] = [item for item in before["items"] if item["name"] != limit_name]
    yield config
    cancel_jobs_created_since(local_stack, started)
    # and the target limits it created, which would hold back the other tests' jobs
    existing = {limit["name"] for limit in before["items"]}
    status, after = local_stack.call("GET", "/v1/limits")
    for limit in after["items"] if status == 200 else []:
        if limit["name"] not in existing:
            local_stack.call("DELETE", f"/v1/limits/{limit['name']}")


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
        # the stateful phase has its own test below, without the fixed path parameters
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "10",
        "--checks",
        "not_a_server_error,response_schema_conformance,content_type_conformance",
    )
    assert code == 0, output[-20000:]
    assert "Tested: 32" in output or "32/32" in output, output[
        -5000:
    ]  # every operation: batch create, bulk actions, backfill, the schedule preview, calendars and limits too


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


# The stateful phase. Schemathesis starts scenarios at the operations that need no ids (mainly
# POST /v1/jobs) and follows the links of /openapi.json from their answers: a created job is read,
# changed, paused, resumed, run and cancelled; a started run is read and cancelled; every answer that
# carries a job or a run leads on. Checks, besides no 5xx: the answers match their documented status
# codes, content types, headers and schemas; a job just created is found by every operation the
# links lead to (ensure_resource_availability); requests made invalid on purpose are refused
# (negative_data_rejection); a route that needs credentials refuses a request without them
# (ignored_auth). Left out, on purpose:
# - use_after_free expects 404 after a DELETE, but DELETE /v1/jobs/{job_id} cancels a job and the
#   job stays readable with its history (docs/api.md), so reading it afterwards is correct;
# - positive_data_acceptance expects every schema-valid body to be accepted, but the schema cannot
#   say which target URLs and AWS resources may be reached, and types `schedule.cron`/`at`/`rate`/
#   `timezone` as any string; the domain refuses most such values with 422 naming the field, by design.
STATEFUL_CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "ensure_resource_availability",
    "negative_data_rejection",
    "ignored_auth",
]


@pytest.fixture
def stateful_config(local_stack: Api, tmp_path: Path) -> Iterator[Path]:
    """Only the links written in the document (no inferred ones), scenarios up to 10 calls long, and
    jobs created with a valid schedule, target and alerts, so that chains start: generated ones are
    almost never valid (the fuzzing tests cover them). Every other field of the body is generated. The
    target is the stack's own health endpoint, so the runs the chains start succeed at once and deliver
    nowhere else. Afterwards, every job created meanwhile is cancelled."""
    started = datetime.now(UTC)
    schedule = {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"}
    target = {"type": "http", "url": local_stack.base_url + "/v1/health", "method": "GET"}
    # Alerts name a target too: a generated one is almost never valid, and would refuse most creates.
    alerts = {"target": target, "failed": True}
    config = tmp_path / "stateful.toml"
    config.write_text(
        "[phases.stateful]\n"
        "max-steps = 10\n"
        "[phases.stateful.inference]\n"
        "algorithms = []\n"
        "\n"
        "[[operations]]\n"
        'include-path = "/v1/jobs"\n'
        'include-method = "POST"\n'
        f'parameters = {{ "body.schedule" = {toml_table(schedule)}, "body.target" = {toml_table(target)},'
        f' "body.alerts" = {toml_table(alerts)} }}\n'
    )
    yield config
    cancel_jobs_created_since(local_stack, started)


def toml_table(values: dict[str, Any]) -> str:
    """An inline TOML table (strings, booleans and tables: JSON's spelling of them is TOML's)."""
    return (
        "{ "
        + ", ".join(
            f"{key} = {toml_table(value) if isinstance(value, dict) else json.dumps(value)}"
            for key, value in values.items()
        )
        + " }"
    )


def test_given_the_documents_links_when_scenarios_chain_calls_then_no_5xx_and_answers_conform(
    local_stack: Api, stateful_config: Path, tmp_path: Path
) -> None:
    events = tmp_path / "events.ndjson"
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(stateful_config),
        "run",
        f"{local_stack.base_url}/openapi.json",
        "--header",
        f"Authorization: Bearer {local_stack.token}",
        "--phases",
        "stateful",
        "--max-examples",
        "60",
        "--seed",
        "1",
        "--checks",
        ",".join(STATEFUL_CHECKS),
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(events),
        "--no-color",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path, check=False)
    output = result.stdout + result.stderr
    print(output)  # shown by pytest when the test fails
    assert result.returncode == 0, output[-20000:]

    # The phase ran on the document's links, and followed a good part of them.
    status, document = local_stack.call("GET", "/openapi.json")
    assert status == 200
    declared = sum(
        len(response.get("links", {}))
        for operations in document["paths"].values()
        for operation in operations.values()
        for response in operation["responses"].values()
    )
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected / (\d+) total", output)
    assert links, output[-5000:]
    covered, selected, total = map(int, links.groups())
    assert selected == total == declared, links.group(0)
    assert covered >= 15, links.group(0)

    # What was sent and answered, from the run's events: links followed with the ids they carried,
    # from a created job and from a started run; no answer a 5xx.
    followed, answers = stateful_steps(events)
    assert any(step.startswith("POST /v1/jobs -> [201] ") for step in followed), followed
    assert any(step.startswith("POST /v1/jobs/{job_id}/run -> [202] ") for step in followed), followed
    assert answers[("POST", "/v1/jobs", 201)] >= 5, answers
    assert answers[("POST", "/v1/jobs/{job_id}/run", 202)] >= 1, answers
    assert not [answer for answer in answers if answer[2] >= 500], answers


def stateful_steps(events: Path) -> tuple[set[str], Counter[tuple[str, str, int]]]:
    """The transitions the stateful phase followed (with their ids applied), and its answers by
    (method, path template, status)."""
    followed: set[str] = set()
    answers: Counter[tuple[str, str, int]] = Counter()
    for line in events.read_text().splitlines():
        event: dict[str, Any] = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished or finished.get("phase") != "stateful":
            continue
        recorder = finished["recorder"]
        for case_id, case in recorder.get("cases", {}).items():
            if case.get("transition") and case.get("is_transition_applied"):
                followed.add(case["transition"]["id"])
            interaction = recorder.get("interactions", {}).get(case_id)
            if interaction and interaction.get("response"):
                key = (case["value"]["method"], case["value"]["path"], interaction["response"]["status_code"])
                answers[key] += 1
    return followed, answers

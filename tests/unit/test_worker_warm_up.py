"""The worker's executor (its SDK clients: hundreds of milliseconds to build) is built before the
first batch: in Lambda's init phase (the handler's import), and by the local event source before its
first receive. Built by the first batch, it made a process's first run late by what the build took
beyond the message's 250 ms hold (107 ms in the precision benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = "import punctual_functions.worker.handler as h\nprint(h.run_executor.cache_info().currsize)\n"
SETTINGS = {
    "PUNCTUAL_QUEUE_URL": "http://127.0.0.1:1/123456789012/punctual-work",
    "PUNCTUAL_AWS_ENDPOINT_URL": "http://127.0.0.1:1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _built_at_import(extra: dict[str, str]) -> str:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_LAMBDA_")}
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        env={**environment, **SETTINGS, **extra},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout.strip()


def test_in_lambdas_init_the_import_builds_the_executor() -> None:
    lambda_runtime = {
        "AWS_LAMBDA_FUNCTION_NAME": "punctual-prod-worker",
        "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001",
    }
    assert _built_at_import(lambda_runtime) == "1"


def test_outside_lambda_the_import_builds_nothing() -> None:
    assert _built_at_import({}) == "0"

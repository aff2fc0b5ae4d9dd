"""Cold start: each handler imports only what it uses (the import time is measured in `make bench`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


def modules_after_import(module: str) -> set[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PUNCTUAL_TABLE_NAME": "t", "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(result.stdout))


@pytest.mark.parametrize(
    ("handler", "never"),
    [
        # pydantic was a fifth of these two handlers' import time, for Settings alone
        ("functions.dispatcher.handler", ["pydantic", "functions.core.targets", "functions.core.ssrf_guard"]),
        ("functions.worker.handler", ["pydantic", "functions.api", "functions.core.dispatching"]),
        # exchange-calendars and pandas are the API's, and there only once a calendar names an exchange
        ("functions.dispatcher.handler", ["exchange_calendars", "pandas", "numpy", "holidays"]),
        ("functions.worker.handler", ["exchange_calendars", "pandas", "numpy", "holidays"]),
        # The document and Swagger UI load only when /openapi.json or /docs is asked for, pydantic and
        # the request models with the first request that has a body; the routes are our own resolver's
        # (Powertools' event_handler imports every resolver it has: issue 11's cold start).
        (
            "functions.api.handler",
            [
                "functions.worker",
                "functions.dispatcher",
                "functions.api.openapi",
                "functions.api.exchanges",
                "exchange_calendars",
                "pandas",
                "holidays",
                "functions.api.requests",
                "functions.api.responses",
                "functions.api.targets",
                "pydantic",
                "aws_lambda_powertools.event_handler",
                "aws_lambda_powertools.utilities.data_classes",
            ],
        ),
    ],
)
def test_a_handler_does_not_import_what_it_does_not_use(handler: str, never: list[str]) -> None:
    loaded = modules_after_import(handler)
    assert handler in loaded
    assert [name for name in never if name in loaded] == []


def test_the_api_imports_target_validation_but_not_the_delivery_code() -> None:
    loaded = modules_after_import("functions.api.handler")
    assert "functions.core.targets.validation" in loaded
    delivery = [f"functions.core.targets.{name}" for name in ("http", "aws", "executor")]
    assert [name for name in delivery if name in loaded] == []


def test_the_worker_finds_the_delivery_code_through_the_targets_package() -> None:
    code = (
        "import functions.core.targets as t, sys; "
        "assert 'functions.core.targets.http' not in sys.modules; "
        "from functions.core.targets import TargetExecutor, validate_target; "
        "print(TargetExecutor.__module__, validate_target.__module__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["functions.core.targets.executor", "functions.core.targets.validation"]


def test_only_the_apis_exchange_module_imports_exchange_calendars() -> None:
    # The dispatcher and the worker read an exchange's closed days as the API stored them: their
    # Lambda functions do not even have the package (punctual/cdk/functions.py: the API's layer alone).
    root = Path(__file__).resolve().parents[2] / "functions"
    importers = sorted(
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if re.search(r"^\s*(import|from) (exchange_calendars|pandas|numpy)\b", path.read_text(), re.MULTILINE)
    )
    assert importers == ["functions/api/exchanges.py"]

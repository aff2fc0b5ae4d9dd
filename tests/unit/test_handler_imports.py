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
        (
            "punctual_functions.dispatcher.handler",
            ["pydantic", "punctual_functions.core.targets", "punctual_functions.core.ssrf_guard"],
        ),
        (
            "punctual_functions.worker.handler",
            ["pydantic", "punctual_functions.api", "punctual_functions.core.dispatching"],
        ),
        # exchange-calendars and pandas are the API's, and there only once a calendar names an exchange
        ("punctual_functions.dispatcher.handler", ["exchange_calendars", "pandas", "numpy", "holidays"]),
        ("punctual_functions.worker.handler", ["exchange_calendars", "pandas", "numpy", "holidays"]),
        # The document and Swagger UI load only when /openapi.json or /docs is asked for, pydantic and
        # the request models with the first request that has a body; the routes are our own resolver's
        # (Powertools' event_handler imports every resolver it has: issue 11's cold start).
        (
            "punctual_functions.api.handler",
            [
                "punctual_functions.worker",
                "punctual_functions.dispatcher",
                "punctual_functions.api.openapi",
                "punctual_functions.api.exchanges",
                "exchange_calendars",
                "pandas",
                "holidays",
                "punctual_functions.api.requests",
                "punctual_functions.api.responses",
                "punctual_functions.api.targets",
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
    loaded = modules_after_import("punctual_functions.api.handler")
    assert "punctual_functions.core.targets.validation" in loaded
    delivery = [f"punctual_functions.core.targets.{name}" for name in ("http", "aws", "executor")]
    assert [name for name in delivery if name in loaded] == []


def test_the_worker_finds_the_delivery_code_through_the_targets_package() -> None:
    code = (
        "import punctual_functions.core.targets as t, sys; "
        "assert 'punctual_functions.core.targets.http' not in sys.modules; "
        "from punctual_functions.core.targets import TargetExecutor, validate_target; "
        "print(TargetExecutor.__module__, validate_target.__module__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == [
        "punctual_functions.core.targets.executor",
        "punctual_functions.core.targets.validation",
    ]


def test_only_the_apis_exchange_module_imports_exchange_calendars() -> None:
    # The dispatcher and the worker read an exchange's closed days as the API stored them: their
    # Lambda functions do not even have the package (punctual/cdk/functions.py: the API's layer alone).
    root = Path(__file__).resolve().parents[2] / "punctual_functions"
    importers = sorted(
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if re.search(r"^\s*(import|from) (exchange_calendars|pandas|numpy)\b", path.read_text(), re.MULTILINE)
    )
    assert importers == ["punctual_functions/api/exchanges.py"]

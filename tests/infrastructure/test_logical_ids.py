"""The stack's resources keep their logical ids: a changed id is a replaced resource on the next
deploy (the table, with every job in it). ``logical_ids.json`` records them as they were before the
``Scheduler`` construct held the service (infra/stack.py leaves its segment out of each id); a
change that means to rename one updates the record and says why."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Names
from constructs import Construct

from infra.stack import _unique_id
from tests.infrastructure.conftest import Synthesized

RECORD = Path(__file__).with_name("logical_ids.json")


def _ids(stack: Synthesized) -> dict[str, Any]:
    """Every logical id but the worker's grants on targets: those are named by what they grant, so a
    changed grant is a new policy by design (punctual/cdk/grants.py)."""
    return {
        "resources": {
            key: value["Type"]
            for key, value in stack.raw["Resources"].items()
            if not (
                key.startswith("FunctionsTargetGrantsGrants") and value["Type"] == "AWS::IAM::ManagedPolicy"
            )
        },
        "outputs": sorted(stack.raw.get("Outputs", {})),
    }


@pytest.mark.parametrize("which", ["default", "production"])
def test_every_resource_keeps_its_logical_id(which: str, request: pytest.FixtureRequest) -> None:
    stack: Synthesized = request.getfixturevalue(f"{which}_stack")
    recorded = json.loads(RECORD.read_text())[which]
    assert _ids(stack) == recorded


@pytest.mark.parametrize(
    "path",
    [
        ["Storage", "Table", "Resource"],
        ["punctual-dev", "Queues", "WorkQueue"],
        ["Functions", "Worker", "SqsEventSource:punctualdevQueuesWorkQueueCD859EC1"],
        ["Api", "Default", "Api"],
        ["A", "AB", "B"],
        ["Only"],
        ["x" * 200, "y" * 100],
    ],
)
def test_the_unique_id_rule_is_cdks_own(path: list[str]) -> None:
    scope: Construct = App()
    for part in path:
        scope = Construct(scope, part)
    assert _unique_id(path) == Names.unique_id(scope)


def test_a_synthesized_assembly_is_written_where_the_session_removes_it(default_stack: Synthesized) -> None:
    """The CDK leaves every cloud assembly in the temporary directory (about 180 MB each): the
    suite's go to its own, which tests/conftest.py removes when the test process exits."""
    session = Path(os.environ["TMPDIR"]).resolve()
    assert session.name.startswith("punctual-tests-")
    assert default_stack.assembly_dir.resolve().is_relative_to(session)

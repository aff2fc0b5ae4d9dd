"""cdk-nag (AwsSolutions) and cfn-lint over the synthesized templates; the pinned CDK CLI."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk.assertions import Annotations, Match

from tests.infrastructure.conftest import REPO_ROOT, Synthesized

pytestmark = pytest.mark.xdist_group("infrastructure")

# The same exception the Makefile's cfn-lint target makes: CDK writes a DependsOn on each function's
# role next to the GetAtt that already implies it.
CFN_LINT_IGNORED = "W3005"


def _nag_report(synthesized: Synthesized) -> list[dict[str, str]]:
    (report,) = synthesized.assembly_dir.glob(f"AwsSolutions-*{synthesized.stack.stack_name}-NagReport.csv")
    with report.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_given_the_aws_solutions_pack_when_synthesized_then_no_finding_is_left_unsuppressed(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for synthesized in (default_stack, production_stack):
        annotations = Annotations.from_stack(synthesized.stack)
        errors = annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
        warnings = annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
        assert [str(e.entry.data) for e in errors] == []
        assert [str(w.entry.data) for w in warnings] == []
        report = _nag_report(synthesized)
        assert report, "cdk-nag wrote no report: the AwsSolutions checks did not run"
        assert {row["Compliance"] for row in report} <= {"Compliant", "Suppressed"}, [
            row for row in report if row["Compliance"] not in ("Compliant", "Suppressed")
        ]


def test_given_each_suppression_when_reported_then_it_carries_a_written_reason(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for synthesized in (default_stack, production_stack):
        suppressed = [row for row in _nag_report(synthesized) if row["Compliance"] == "Suppressed"]
        assert suppressed
        for row in suppressed:
            reason = re.sub(r"^\[[^\]]*\]\s*", "", row["Exception Reason"])  # drop "[applies to]"
            assert len(reason) >= 40, f"{row['Rule ID']} on {row['Resource ID']}: reason too thin: {reason!r}"


@pytest.mark.parametrize("configuration", ["default_stack", "production_stack"])
def test_given_the_synthesized_template_when_linted_then_cfn_lint_reports_nothing(
    configuration: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synthesized = request.getfixturevalue(configuration)
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run(
        [str(cfn_lint), "--ignore-checks", CFN_LINT_IGNORED, "--", str(synthesized.template_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_given_package_json_when_read_then_the_cdk_cli_is_pinned_to_one_version() -> None:
    package = json.loads((REPO_ROOT / "package.json").read_text())
    version = package["devDependencies"]["aws-cdk"]
    assert re.fullmatch(r"2\.\d+\.\d+", version), f"pin the CLI exactly, not {version!r}"
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == version


def test_given_cdk_json_when_read_then_the_cli_runs_the_app_from_the_project_venv() -> None:
    cdk_json = json.loads((REPO_ROOT / "cdk.json").read_text())
    assert cdk_json["app"] == ".venv/bin/python -m infra.app"
    assert cdk_json["context"]["stage"] == "dev"

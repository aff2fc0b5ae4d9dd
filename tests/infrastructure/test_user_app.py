"""A user's own CDK app, as a user writes it: a directory of its own with an ``app.py`` that imports
``punctual.cdk`` from the *installed* package (a wheel built from this tree, installed into a fresh
virtual environment; the repository is nowhere on its path), a Scheduler, a function and a queue of
its own, and two jobs on them. Synthesized, it is cdk-nag clean and grants the worker exactly what
those two targets need.

The fresh environment borrows the third-party packages (aws-cdk-lib, pydantic, ...) of the project's
venv through a path entry, so that the test needs no download beyond the wheel's build; ``punctual``
and ``punctual_functions`` come from the wheel alone (the project's editable install is not visible
there). The wheel is the one ``make wheel`` builds (docs/client.md, "Install"): ``punctual-aws`` (PyPI's
``punctual`` is another project), with only packages whose names the project owns. The user's app has a
``functions`` package of its own, as CDK apps often do for their Lambda code: it must not shadow ours.
"""

from __future__ import annotations

import csv
import email
import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from punctual.cdk.assets import BUILD_DIR_ENV, LambdaAssets
from tests.infrastructure.conftest import (
    REPO_ROOT,
    allowed_target_patterns,
    delivery_rights_written,
    logical_id_of,
    policy_statements,
    resources_of,
    target_grants,
)

pytestmark = pytest.mark.xdist_group("infrastructure")

APP = textwrap.dedent(
    """
    import json
    import punctual
    from aws_cdk import App, Aspects, CfnOutput, Stack
    from aws_cdk import aws_iam as iam, aws_kms as kms, aws_lambda as lambda_, aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks, NagPackSuppression, NagSuppressions
    from punctual.cdk import Job, Schedule, Scheduler, SchedulerProps, Target

    app = App(outdir="cdk.out")
    stack = Stack(app, "Reports")
    scheduler = Scheduler(stack, "Punctual", props=SchedulerProps(stage="prod"))

    role = iam.Role(stack, "ReportRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    report = lambda_.Function(
        stack, "Report", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler", role=role,
        code=lambda_.Code.from_inline("def handler(event, context):\\n    print(event)\\n"),
    )
    NagSuppressions.add_resource_suppressions(report, [NagPackSuppression(
        id="AwsSolutions-L1", reason="The report runs on Python 3.13, the runtime its team tests with.")])
    key = kms.Key(stack, "InboxKey", enable_key_rotation=True)
    dead = sqs.Queue(stack, "DeadLetters", enforce_ssl=True, encryption_master_key=key)
    inbox = sqs.Queue(
        stack, "Inbox", enforce_ssl=True, encryption_master_key=key,
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead, max_receive_count=3),
    )
    NagSuppressions.add_resource_suppressions(dead, [NagPackSuppression(
        id="AwsSolutions-SQS3", reason="This queue is the dead-letter queue of the inbox queue itself.")])

    nightly = Job(
        stack, "NightlyReport", scheduler=scheduler,
        schedule=Schedule.cron("0 2 * * *", timezone="Europe/Berlin"),
        target=Target.function(report), payload={"report": "daily"}, name="nightly-report",
        retry={"max_attempts": 5}, tags={"team": "reports"},
    )
    Job(stack, "HourlyDigest", scheduler=scheduler, schedule=Schedule.rate("1 hour"),
        target=Target.queue(inbox), payload={"digest": True})
    CfnOutput(stack, "NightlyJobId", value=nightly.job_id)
    CfnOutput(stack, "JobsOwnerRoleArn", value=scheduler.jobs_owner.role_arn)
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    app.synth()
    print(json.dumps({"punctual": punctual.__file__}))
    """
)


@dataclass(frozen=True)
class Installed:
    """A fresh venv with the wheel installed, and how to run a user's app in it."""

    venv: Path
    python: Path
    wheel: Path

    def run(self, app_dir: Path) -> subprocess.CompletedProcess[str]:
        environment = {
            key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")
        }
        environment[BUILD_DIR_ENV] = str(REPO_ROOT / "build" / "lambda")
        environment["CDK_OUTDIR"] = str(app_dir / "cdk.out")  # what the CDK CLI sets
        result = subprocess.run(
            [str(self.python), "app.py"],
            check=False,
            cwd=app_dir,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-4000:]
        return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    LambdaAssets.build()  # the repository's layers: the user's app finds them through BUILD_DIR_ENV
    root = tmp_path_factory.mktemp("installed")
    wheels = root / "wheels"
    built = subprocess.run(
        ["make", "--no-print-directory", "wheel", f"DIST={wheels}"],
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = wheels.glob("punctual_aws-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "project-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(venv, python, wheel)


@pytest.fixture(scope="module")
def user_app(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app_dir = tmp_path_factory.mktemp("user-app")
    (app_dir / "app.py").write_text(APP)
    with_functions_of_its_own(app_dir)
    result = installed.run(app_dir)
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    assembly = app_dir / "cdk.out"
    return {
        "venv": installed.venv,
        "punctual_file": Path(printed["punctual"]),
        "assembly": assembly,
        "template": json.loads((assembly / "Reports.template.json").read_text()),
        "nag": list(csv.DictReader((assembly / "AwsSolutions--Reports-NagReport.csv").open(newline=""))),
    }


def with_functions_of_its_own(app_dir: Path) -> None:
    """A ``functions`` package in the user's app, first on its path: importing it fails loudly."""
    (app_dir / "functions").mkdir()
    (app_dir / "functions" / "__init__.py").write_text(
        'raise ImportError("the user\'s own functions package")\n'
    )


def doc_file(name: str) -> str:
    """The code block docs/cdk.md gives for the file ``name`` (the first after the line naming it)."""
    text = (REPO_ROOT / "docs" / "cdk.md").read_text()
    after = text[text.index(f"`{name}`") :]
    match = re.search(r"```[a-z]*\n(.*?)```", after, re.DOTALL)
    assert match is not None, name
    return match.group(1)


def test_given_the_app_of_docs_cdk_md_when_synthesized_from_the_installed_package_then_it_has_its_jobs(
    installed: Installed, tmp_path: Path
) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "index.py").write_text(doc_file("report/index.py"))
    (tmp_path / "app.py").write_text(doc_file("app.py"))
    with_functions_of_its_own(tmp_path)
    assert json.loads(doc_file("cdk.json")) == {"app": ".venv/bin/python app.py"}
    installed.run(tmp_path)
    template = json.loads((tmp_path / "cdk.out" / "Reports.template.json").read_text())
    assert len(resources_of(template, "Custom::PunctualJob")) == 2
    assert set(template["Outputs"]) >= {"ApiUrl", "JobsOwnerRoleArn", "NightlyJobId"}


def test_given_the_installed_package_when_the_app_imports_it_then_it_comes_from_the_wheel(user_app):
    assert user_app["punctual_file"].is_relative_to(user_app["venv"])


def test_given_a_user_app_when_synthesized_then_cdk_nag_finds_nothing_unsuppressed(user_app):
    findings = [row for row in user_app["nag"] if row["Compliance"] not in ("Compliant", "Suppressed")]
    assert user_app["nag"], "cdk-nag wrote no report"
    assert findings == []


def test_given_two_jobs_when_synthesized_then_the_worker_may_do_exactly_what_their_targets_need(user_app):
    template = user_app["template"]
    report = logical_id_of(template, "AWS::Lambda::Function", "Report")
    inbox = logical_id_of(template, "AWS::SQS::Queue", "Inbox")
    key = logical_id_of(template, "AWS::KMS::Key", "InboxKey")
    statements = policy_statements(template, "PunctualFunctionsWorkerRoleDefaultPolicy")
    statements += [s for grant in target_grants(template).values() for s in grant]
    on_users_resources = [
        (statement["Action"], statement["Resource"])
        for statement in statements
        if any(name in json.dumps(statement["Resource"]) for name in (report, inbox, key))
    ]
    assert sorted(on_users_resources, key=json.dumps) == sorted(
        [
            ("lambda:InvokeFunction", {"Fn::GetAtt": [report, "Arn"]}),
            ("sqs:SendMessage", {"Fn::GetAtt": [inbox, "Arn"]}),
            (["kms:Decrypt", "kms:GenerateDataKey*"], {"Fn::GetAtt": [key, "Arn"]}),
        ],
        key=json.dumps,
    )


def test_given_two_jobs_when_synthesized_then_the_api_allows_exactly_their_targets(user_app):
    template = user_app["template"]
    report = logical_id_of(template, "AWS::Lambda::Function", "Report")
    inbox = logical_id_of(template, "AWS::SQS::Queue", "Inbox")
    assert allowed_target_patterns(template) == [
        {"Fn::GetAtt": [report, "Arn"]},
        {"Fn::GetAtt": [inbox, "Arn"]},
    ]


def test_given_two_jobs_when_synthesized_then_only_their_owner_may_deliver_to_their_targets(user_app):
    """allow_target (which each Job calls) gives the app's jobs owner, as the API names it (the role's
    ARN without a path), a right to the target, and nobody else."""
    template = user_app["template"]
    report = logical_id_of(template, "AWS::Lambda::Function", "Report")
    inbox = logical_id_of(template, "AWS::SQS::Queue", "Inbox")
    owner_role = logical_id_of(template, "AWS::IAM::Role", "PunctualJobsJobsOwner")
    owner = [
        "arn:",
        {"Ref": "AWS::Partition"},
        ":iam::",
        {"Ref": "AWS::AccountId"},
        ":role/",
        {"Ref": owner_role},
    ]
    assert delivery_rights_written(template) == {
        "rights": [
            {"owners": [owner], "targets": [{"Fn::GetAtt": [report, "Arn"]}], "hosts": []},
            {"owners": [owner], "targets": [{"Fn::GetAtt": [inbox, "Arn"]}], "hosts": []},
        ],
        "hosts_per_owner": False,
    }


def test_given_two_jobs_when_synthesized_then_each_is_a_custom_resource_with_its_body(user_app):
    template = user_app["template"]
    jobs = resources_of(template, "Custom::PunctualJob")
    assert sorted(jobs) == sorted(
        [
            logical_id_of(template, "Custom::PunctualJob", "NightlyReport"),
            logical_id_of(template, "Custom::PunctualJob", "HourlyDigest"),
        ]
    )
    nightly = next(value for name, value in jobs.items() if name.startswith("NightlyReport"))
    parts = nightly["Properties"]["Job"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else "ARN" for part in parts)
    assert json.loads(text) == {
        "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Berlin"},
        "target": {"type": "lambda", "function": "ARN"},
        "payload": {"report": "daily"},
        "name": "nightly-report",
        "retry": {"max_attempts": 5},
        "tags": {"team": "reports"},
    }
    # Created after the service is whole; deleted (cancelled) before it goes.
    assert any(name.startswith("PunctualFunctionsWorker") for name in nightly["DependsOn"])
    assert nightly["Properties"]["ServiceToken"]["Fn::GetAtt"][0].startswith("PunctualJobsProvider")


def test_given_jobs_when_synthesized_then_their_owner_role_may_call_the_api_and_only_the_provider_assumes_it(
    user_app,
):
    template = user_app["template"]
    owner = logical_id_of(template, "AWS::IAM::Role", "PunctualJobsJobsOwner")
    on_event_role = logical_id_of(template, "AWS::IAM::Role", "PunctualJobsOnEventRole")
    trust = template["Resources"][owner]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"AWS": {"Fn::GetAtt": [on_event_role, "Arn"]}},
        }
    ]
    (statement,) = policy_statements(template, "PunctualJobsJobsOwnerDefaultPolicy")
    assert statement["Action"] == "execute-api:Invoke"
    assert json.dumps(statement["Resource"]).endswith('/v1/*"]]}')
    actions = {
        action
        for statement in policy_statements(template, "PunctualJobsOnEventRoleDefaultPolicy")
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    assert "sts:AssumeRole" in actions
    assert not any(action.startswith(("dynamodb:", "sqs:", "execute-api:")) for action in actions)


def test_given_the_wheel_when_read_then_it_is_punctual_aws_and_ships_only_packages_the_project_owns(
    installed: Installed,
) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = archive.namelist()
        (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        message = email.message_from_bytes(archive.read(metadata))
    assert message["Name"] == "punctual-aws"
    assert "cdk" in message.get_all("Provides-Extra", [])
    requires = message.get_all("Requires-Dist", [])
    assert any(r.startswith("aws-cdk-lib") and 'extra == "cdk"' in r for r in requires), requires
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"punctual", "punctual_functions"}, top_level


def test_given_a_user_app_with_its_own_functions_package_when_synthesized_then_the_lambda_code_is_ours(
    user_app: dict[str, Any],
) -> None:
    template = user_app["template"]
    handlers = {
        resource["Properties"].get("Handler")
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    assert {
        f"punctual_functions.{role}.handler.handler" for role in ("api", "dispatcher", "worker")
    } <= handlers
    staged = [path for path in user_app["assembly"].glob("asset.*") if (path / "punctual_functions").is_dir()]
    assert staged, "the Lambda code asset holds punctual_functions"
    assert all(sorted(p.name for p in path.iterdir()) == ["punctual_functions"] for path in staged)


def test_given_jobs_when_synthesized_then_every_function_logs_to_a_group_with_a_retention(user_app) -> None:
    """The jobs' provider framework's function too: left to itself it logs to a group kept forever."""
    template = user_app["template"]
    groups = resources_of(template, "AWS::Logs::LogGroup")
    assert all("RetentionInDays" in group["Properties"] for group in groups.values()), groups
    functions = resources_of(template, "AWS::Lambda::Function")
    ours = {name: f for name, f in functions.items() if "Report" not in name}
    assert len(ours) >= 5, sorted(functions)  # api, dispatcher, worker, the jobs' function, the framework's
    for name, function in ours.items():
        logging = function["Properties"].get("LoggingConfig", {})
        assert logging.get("LogGroup", {}).get("Ref") in groups, name


def test_given_two_wheel_builds_at_once_when_both_end_then_both_succeed_with_the_same_files(
    installed: Installed, tmp_path: Path
) -> None:
    # Both once built in the checkout's build/ and collided there (EEXIST on the dist-info, or ENOENT
    # when one cleared build/lib under the other): make wheel now builds from a fresh copy each time.
    builds = [
        subprocess.Popen(
            ["make", "--no-print-directory", "wheel", f"DIST={tmp_path / str(n)}"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(2)
    ]
    outputs = [build.communicate(timeout=600)[0] for build in builds]
    assert [build.returncode for build in builds] == [0, 0], outputs
    with zipfile.ZipFile(installed.wheel) as archive:
        expected = sorted(archive.namelist())
    for n in range(2):
        (wheel,) = (tmp_path / str(n)).glob("punctual_aws-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            assert sorted(archive.namelist()) == expected


def test_given_the_installed_package_when_planning_with_simulate_then_the_simulator_runs_from_the_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    # The simulator was a top-level sim/ beside the package, reached from a checkout only.
    environment = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")
    }

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            check=False,
            cwd=tmp_path,  # not the checkout: nothing of it on the path
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )

    where = run(str(installed.python), "-c", "import punctual.sim; print(punctual.sim.__file__)")
    assert where.stdout.startswith(str(installed.venv)), where.stdout + where.stderr
    result = run(
        str(installed.venv / "bin" / "punctual"), "plan", "--jobs-per-minute", "300", "--simulate", "--json"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    simulated = json.loads(result.stdout)["simulated"]
    assert simulated["expected"] > 0 and simulated["started"] == simulated["expected"], simulated
    assert simulated["lost"] == simulated["early"] == simulated["duplicated"] == 0, simulated

"""The three functions, their assets, their settings, and what triggers them."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from packaging.requirements import Requirement
from pydantic import ValidationError

from punctual.cdk.assets import (
    EXCHANGE_REQUIREMENTS,
    LAMBDA_PYTHON_VERSION,
    LAYER_REQUIREMENTS,
    UNZIPPED_LIMIT_BYTES,
    tree_size,
)
from punctual.cdk.config import WORKER_RECURSIVE_LOOP, DeploymentConfig
from punctual_functions.core.settings import Settings
from tests.infrastructure.conftest import (
    PRODUCTION_CONTEXT,
    REPO_ROOT,
    Synthesized,
    allowed_target_patterns,
    synthesize,
)

pytestmark = pytest.mark.xdist_group("infrastructure")

ROLES = ("api", "dispatcher", "worker")
HANDLERS = {
    "api": "punctual_functions.api.handler.handler",
    "dispatcher": "punctual_functions.dispatcher.handler.handler",
    "worker": "punctual_functions.worker.handler.handler",
}


def _settings_of(function: dict[str, Any]) -> Settings:
    """The settings the function will read at start-up (resource references stand in as names)."""
    variables = function["Properties"]["Environment"]["Variables"]
    environ = {name: value if isinstance(value, str) else f"<{name}>" for name, value in variables.items()}
    return Settings.from_env(environ)


def test_given_each_role_when_synthesized_then_its_function_runs_python_3_12_or_newer_on_arm64(
    default_stack: Synthesized,
) -> None:
    for role in ROLES:
        properties = default_stack.function(role)["Properties"]
        runtime = properties["Runtime"]
        assert re.fullmatch(r"python3\.(\d+)", runtime), runtime
        assert int(runtime.split(".")[1]) >= 12
        assert runtime == f"python{LAMBDA_PYTHON_VERSION}", "layer wheels and runtime must match"
        assert properties["Architectures"] == ["arm64"]
        assert properties["Handler"] == HANDLERS[role]


def test_given_each_role_when_synthesized_then_it_traces_with_xray_and_logs_json_to_its_own_group(
    default_stack: Synthesized,
) -> None:
    log_groups = set()
    for role in ROLES:
        properties = default_stack.function(role)["Properties"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert properties["LoggingConfig"]["LogFormat"] == "JSON"
        log_groups.add(properties["LoggingConfig"]["LogGroup"]["Ref"])
    assert len(log_groups) == 3
    for logical_id in log_groups:
        assert default_stack.raw["Resources"][logical_id]["Properties"]["RetentionInDays"] == 30


def test_given_each_role_when_synthesized_then_it_has_a_role_of_its_own(default_stack: Synthesized) -> None:
    roles = {role: default_stack.function(role)["Properties"]["Role"]["Fn::GetAtt"][0] for role in ROLES}
    assert len(set(roles.values())) == 3, roles
    for logical_id in roles.values():
        role = default_stack.raw["Resources"][logical_id]["Properties"]
        assert "ManagedPolicyArns" not in role, "no AWS managed policies on the function roles"
        assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
            "Service": "lambda.amazonaws.com"
        }


def _layers(stack: Synthesized) -> dict[str, str]:
    """The layers by what they hold: "dependencies" (every function's) and "exchange" (the API's)."""
    found = {}
    for layer_id in stack.resources("AWS::Lambda::LayerVersion"):
        description = stack.raw["Resources"][layer_id]["Properties"]["Description"]
        found["exchange" if "exchange-calendars" in description else "dependencies"] = layer_id
    return found


def _layer_packages(stack: Synthesized, layer_id: str) -> Any:
    layer_key = stack.raw["Resources"][layer_id]["Properties"]["Content"]["S3Key"]
    return stack.assembly_dir / f"asset.{layer_key.removesuffix('.zip')}" / "python"


def test_given_each_role_when_synthesized_then_powertools_and_dependencies_come_from_the_built_layer(
    default_stack: Synthesized,
) -> None:
    layers = _layers(default_stack)
    assert set(layers) == {"dependencies", "exchange"}, "two layers: every function's, and the API's"
    for layer_id in layers.values():
        layer = default_stack.raw["Resources"][layer_id]["Properties"]
        assert layer["CompatibleArchitectures"] == ["arm64"]
        assert layer["CompatibleRuntimes"] == [f"python{LAMBDA_PYTHON_VERSION}"]
    for role in ROLES:
        assert default_stack.function(role)["Properties"]["Layers"][0] == {"Ref": layers["dependencies"]}


def test_given_the_functions_when_synthesized_then_only_the_api_has_the_exchange_calendars_layer(
    default_stack: Synthesized,
) -> None:
    # The dispatcher and the worker never import pandas: their cold starts must not pay for it.
    exchange = {"Ref": _layers(default_stack)["exchange"]}
    assert default_stack.function("api")["Properties"]["Layers"][1:] == [exchange]
    for role in ("dispatcher", "worker"):
        assert default_stack.function(role)["Properties"]["Layers"] == [
            {"Ref": _layers(default_stack)["dependencies"]}
        ]
    packages = _layer_packages(default_stack, exchange["Ref"])
    for package in (
        "exchange_calendars",
        "pandas",
        "numpy",
        "pytz",
        "pyluach",
        "toolz",
        "korean_lunar_calendar",
    ):
        assert (packages / package).is_dir(), f"{package} missing from the exchange layer"
    shared = {path.name for path in packages.iterdir()} & {
        path.name for path in _layer_packages(default_stack, _layers(default_stack)["dependencies"]).iterdir()
    }
    assert shared == set(), f"in both layers (the API has both; one would overwrite the other): {shared}"


def test_given_the_api_function_when_synthesized_then_its_code_and_layers_fit_lambdas_unzipped_limit(
    default_stack: Synthesized,
) -> None:
    properties = default_stack.function("api")["Properties"]
    code = default_stack.assembly_dir / f"asset.{properties['Code']['S3Key'].removesuffix('.zip')}"
    layers = [_layer_packages(default_stack, layer["Ref"]).parent for layer in properties["Layers"]]
    total = tree_size(code) + sum(tree_size(layer) for layer in layers)
    # Measured: about 152 MB (code 1.4, dependencies 26, exchange-calendars with pandas and numpy 125).
    assert total < UNZIPPED_LIMIT_BYTES * 0.8, f"{total / 2**20:.0f} MB of Lambda's 250 MB: little room left"


def test_given_the_layer_when_built_without_docker_then_it_holds_arm64_wheels_for_the_runtime(
    default_stack: Synthesized,
) -> None:
    packages = _layer_packages(default_stack, _layers(default_stack)["dependencies"])
    assert packages.is_dir(), "the uploaded layer must hold its packages under python/"
    for package in ("aws_lambda_powertools", "pydantic", "pydantic_core", "croniter", "dateutil", "tzdata"):
        assert (packages / package).is_dir(), f"{package} missing from the layer"
    version = LAMBDA_PYTHON_VERSION.replace(".", "")
    extensions = [path.name for path in (packages / "pydantic_core").glob("*.so")]
    assert extensions == [f"_pydantic_core.cpython-{version}-aarch64-linux-gnu.so"], extensions
    assert not (packages / "boto3").exists(), "boto3 comes with the Lambda runtime"
    exchange = _layer_packages(default_stack, _layers(default_stack)["exchange"])
    for root in (packages, exchange):
        foreign = [pyc.name for pyc in root.rglob("*.pyc") if f".cpython-{version}." not in pyc.name]
        assert foreign == [], f"bytecode for another Python than the runtime's: {foreign[:5]}"
        for record in root.glob("*.dist-info/RECORD"):
            assert "../../bin/" not in record.read_text(), f"{record}: console scripts are machine-specific"
    numpy_extensions = [path.name for path in (exchange / "numpy" / "_core").glob("_multiarray_umath*.so")]
    assert numpy_extensions == [f"_multiarray_umath.cpython-{version}-aarch64-linux-gnu.so"], numpy_extensions


def test_given_the_code_asset_when_staged_then_it_holds_the_functions_package_and_nothing_else(
    default_stack: Synthesized,
) -> None:
    (code_key,) = {default_stack.function(role)["Properties"]["Code"]["S3Key"] for role in ROLES}
    asset = default_stack.assembly_dir / f"asset.{code_key.removesuffix('.zip')}"
    assert sorted(path.name for path in asset.iterdir()) == ["punctual_functions"], (
        "only punctual_functions/ is uploaded"
    )
    for role in ROLES:
        assert (asset / "punctual_functions" / role / "handler.py").is_file()
    version = LAMBDA_PYTHON_VERSION.replace(".", "")
    foreign = [pyc.name for pyc in asset.rglob("*.pyc") if f".cpython-{version}." not in pyc.name]
    assert foreign == [], f"bytecode for another Python than the runtime's: {foreign[:5]}"
    assert (
        asset / "punctual_functions" / "worker" / "__pycache__" / f"handler.cpython-{version}.pyc"
    ).is_file()


def test_given_pyproject_dependencies_when_the_layer_is_pinned_then_every_pin_satisfies_them() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    wanted = {
        Requirement(text).name.lower(): Requirement(text) for text in pyproject["project"]["dependencies"]
    }
    pins = {
        Requirement(line).name.lower().replace("_", "-"): Requirement(line)
        for requirements in (LAYER_REQUIREMENTS, EXCHANGE_REQUIREMENTS)
        for line in requirements.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    # boto3 ships with the Lambda runtime; click is the CLI's alone.
    for name in set(wanted) - {"boto3", "click"}:
        assert name in pins, f"{name} is a runtime dependency but not in {LAYER_REQUIREMENTS.name}"
        (version,) = [spec.version for spec in pins[name].specifier]
        assert wanted[name].specifier.contains(version, prereleases=True), (
            f"{name}=={version} does not satisfy pyproject's {wanted[name]}"
        )


def test_given_the_default_context_when_synthesized_then_every_function_reads_the_same_settings(
    default_stack: Synthesized,
) -> None:
    for role in ROLES:
        settings = _settings_of(default_stack.function(role))
        assert settings.table_name == "<PUNCTUAL_TABLE_NAME>"
        assert settings.queue_url == "<PUNCTUAL_QUEUE_URL>"
        assert settings.dlq_url == "<PUNCTUAL_DLQ_URL>"
        assert settings.shard_count == 8
        assert settings.lookahead_seconds == 120
        assert settings.http_allow_loopback is False
        assert settings.allowed_target_arns == ()
        # The API describes SigV4 as its authentication; IAM callers own jobs per role.
        assert (settings.api_auth, settings.owner_mode) == ("iam", "role")
    variables = default_stack.function("api")["Properties"]["Environment"]["Variables"]
    assert variables["PUNCTUAL_TABLE_NAME"] == {"Ref": default_stack.logical_id("AWS::DynamoDB::Table")}
    # Targets named by bare name resolve in the deployment's own account and partition.
    assert variables["PUNCTUAL_ACCOUNT_ID"] == {"Ref": "AWS::AccountId"}
    assert variables["PUNCTUAL_PARTITION"] == {"Ref": "AWS::Partition"}


def test_given_operator_context_when_synthesized_then_the_functions_get_those_settings(
    production_stack: Synthesized,
) -> None:
    for role in ROLES:
        settings = _settings_of(production_stack.function(role))
        assert settings.shard_count == PRODUCTION_CONTEXT["shard_count"]
        assert settings.lookahead_seconds == PRODUCTION_CONTEXT["lookahead_seconds"]
        assert settings.min_interval_seconds == PRODUCTION_CONTEXT["min_interval_seconds"]
        assert settings.run_retention_days == PRODUCTION_CONTEXT["run_retention_days"]
        assert settings.run_trace_percent == PRODUCTION_CONTEXT["run_trace_percent"]
        assert settings.http_allow_list == tuple(PRODUCTION_CONTEXT["http_allow_list"])
        # The allow-list is the table's item, written by the deploy: not a variable (4 KB in all).
        assert settings.allowed_target_arns == ()
        assert (
            "PUNCTUAL_ALLOWED_TARGET_ARNS"
            not in production_stack.function(role)["Properties"]["Environment"]["Variables"]
        )
        assert (settings.api_auth, settings.owner_mode) == ("api_key", "session")
    assert allowed_target_patterns(production_stack.raw) == PRODUCTION_CONTEXT["allowed_target_arns"]


def test_given_the_worker_when_synthesized_then_its_sqs_source_batches_and_reports_partial_failures(
    default_stack: Synthesized,
) -> None:
    work_queue = next(
        logical_id
        for logical_id, resource in default_stack.resources("AWS::SQS::Queue").items()
        if "RedrivePolicy" in resource["Properties"]
    )
    default_stack.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [work_queue, "Arn"]},
            "FunctionName": {"Ref": default_stack.logical_id_of_function("worker")},
            "BatchSize": 10,
            # none: records are handed over as soon as they are there (a batch of 10 needs no window)
            "MaximumBatchingWindowInSeconds": Match.absent(),
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "ScalingConfig": {"MaximumConcurrency": 50},
        },
    )


def test_given_the_worker_when_synthesized_then_it_allows_the_recursive_loops_it_bounds_itself(
    default_stack: Synthesized,
) -> None:
    """The worker continues its own chains on its own queue: Lambda's default (Terminate) would stop a
    buffered backfill or a target limit's hand-overs after 16 invocations. The local stack's event
    source reads the same setting (tests/e2e/test_recursive_loops.py)."""
    assert WORKER_RECURSIVE_LOOP == "Allow"
    assert default_stack.function("worker")["Properties"]["RecursiveLoop"] == "Allow"
    for role in ("api", "dispatcher"):
        assert default_stack.function(role)["Properties"]["RecursiveLoop"] == "Terminate", role


def test_given_the_dispatcher_when_synthesized_then_a_rule_invokes_it_every_minute_without_a_singleton(
    default_stack: Synthesized,
) -> None:
    dispatcher_id = default_stack.logical_id_of_function("dispatcher")
    rule = default_stack.only("AWS::Events::Rule")["Properties"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["State"] == "ENABLED"
    assert [target["Arn"] for target in rule["Targets"]] == [{"Fn::GetAtt": [dispatcher_id, "Arn"]}]
    dispatcher = default_stack.function("dispatcher")["Properties"]
    # Correctness never assumes a single dispatcher, so concurrency is not pinned to one.
    assert dispatcher["Timeout"] >= 60
    default_stack.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": dispatcher_id}, "MaximumRetryAttempts": 0},
    )


def test_given_a_new_account_when_synthesized_by_default_then_no_function_reserves_concurrency(
    default_stack: Synthesized,
) -> None:
    # A new account's concurrency quota is 10, and Lambda refuses any reservation that leaves fewer
    # than 10 unreserved: a default reservation, however small, fails the first `cdk deploy` there.
    for role in ROLES:
        assert "ReservedConcurrentExecutions" not in default_stack.function(role)["Properties"], role
    assert DeploymentConfig.from_mapping({"sweep_invocations": 8}).dispatcher_concurrency is None


def _dispatcher_of(context: dict[str, Any]) -> dict[str, Any]:
    from infra.app import build_app

    _app, stack = build_app(context, nag=False)
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    return next(
        f["Properties"] for f in functions.values() if f["Properties"]["FunctionName"].endswith("-dispatcher")
    )


def test_given_a_reservation_asked_for_when_synthesized_then_the_dispatcher_keeps_exactly_that() -> None:
    assert _dispatcher_of({"dispatcher_reserved_concurrency": 6})["ReservedConcurrentExecutions"] == 6
    # 0 means no reservation, not a reservation of 0: that would throttle every tick.
    none = DeploymentConfig.from_mapping({"dispatcher_reserved_concurrency": 0})
    assert none.dispatcher_concurrency is None
    assert "ReservedConcurrentExecutions" not in _dispatcher_of({"dispatcher_reserved_concurrency": 0})


def test_given_a_reservation_smaller_than_one_fanned_out_tick_when_configured_then_synth_refuses_it() -> None:
    # A tick and each of its fanned-out sweeps run at once: fewer would throttle the tick's own sweeps.
    with pytest.raises(ValidationError, match="dispatcher_reserved_concurrency"):
        DeploymentConfig.from_mapping({"sweep_invocations": 4, "dispatcher_reserved_concurrency": 4})
    config = DeploymentConfig.from_mapping({"sweep_invocations": 4, "dispatcher_reserved_concurrency": 5})
    assert config.dispatcher_concurrency == 5


def test_given_a_batch_above_ten_when_configured_then_it_needs_and_gets_a_batching_window() -> None:
    # Only a batch above 10 needs records held back to fill it: with the window, it is in the template
    # (and the queue's visibility timeout grows by it).
    with pytest.raises(ValidationError, match="worker_batching_window_seconds"):
        DeploymentConfig.from_mapping({"worker_batch_size": 100})
    synthesized = synthesize({"worker_batch_size": 100, "worker_batching_window_seconds": 2})
    (source,) = synthesized.resources("AWS::Lambda::EventSourceMapping").values()
    assert source["Properties"]["BatchSize"] == 100
    assert source["Properties"]["MaximumBatchingWindowInSeconds"] == 2


def test_given_provisioned_pollers_when_synthesized_then_the_event_source_has_no_maximum_concurrency() -> (
    None
):
    """Provisioned mode and a maximum concurrency are exclusive on AWS: the pollers bound the
    invocations, and the template carries no ScalingConfig beside them."""
    synthesized = synthesize({"worker_minimum_pollers": 20, "worker_maximum_pollers": 300})
    (source,) = synthesized.resources("AWS::Lambda::EventSourceMapping").values()
    assert source["Properties"]["ProvisionedPollerConfig"] == {"MinimumPollers": 20, "MaximumPollers": 300}
    assert "ScalingConfig" not in source["Properties"]
    only_maximum = DeploymentConfig.from_mapping({"worker_maximum_pollers": 50})
    assert only_maximum.worker_provisioned_pollers == (2, 50), "AWS's own minimum"


def test_given_both_maximum_concurrency_and_pollers_when_configured_then_synth_refuses_them() -> None:
    with pytest.raises(ValidationError, match="not both"):
        DeploymentConfig.from_mapping({"worker_max_concurrency": 100, "worker_minimum_pollers": 10})
    with pytest.raises(ValidationError, match="must not exceed"):
        DeploymentConfig.from_mapping({"worker_minimum_pollers": 100, "worker_maximum_pollers": 50})


def test_given_provisioned_capacity_when_synthesized_then_the_table_and_its_index_scale_on_utilization() -> (
    None
):
    synthesized = synthesize(
        {
            "table_capacity_mode": "provisioned",
            "table_max_write_units": 90_000,
            "index_max_write_units": 12_000,
        }
    )
    (table,) = synthesized.resources("AWS::DynamoDB::Table").values()
    # CloudFormation's default mode is PROVISIONED: the template may leave it out.
    assert table["Properties"].get("BillingMode", "PROVISIONED") == "PROVISIONED"
    assert table["Properties"]["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    (index,) = table["Properties"]["GlobalSecondaryIndexes"]
    assert index["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    targets = synthesized.resources("AWS::ApplicationAutoScaling::ScalableTarget").values()
    bounds = {
        (t["Properties"]["ScalableDimension"], t["Properties"]["MinCapacity"], t["Properties"]["MaxCapacity"])
        for t in targets
    }
    assert ("dynamodb:table:WriteCapacityUnits", 5, 90_000) in bounds
    assert ("dynamodb:index:WriteCapacityUnits", 5, 12_000) in bounds and len(bounds) == 4
    policies = synthesized.resources("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    assert {p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] for p in policies} == {
        70
    }
    on_demand = synthesize()
    (default,) = on_demand.resources("AWS::DynamoDB::Table").values()
    assert default["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert not on_demand.resources("AWS::ApplicationAutoScaling::ScalableTarget")


def test_given_capacity_bounds_the_wrong_way_round_when_configured_then_synth_refuses_them() -> None:
    with pytest.raises(ValidationError, match="table_min_write_units"):
        DeploymentConfig.from_mapping({"table_min_write_units": 100, "table_max_write_units": 50})

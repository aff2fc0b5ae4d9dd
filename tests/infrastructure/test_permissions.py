"""Least privilege: named actions only, each role on the resources it uses, targets from configuration."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from punctual.cdk.config import DeploymentConfig
from punctual.cdk.permissions import SCOPED_ITEM_ACTIONS, TABLE_ITEM_ACTIONS, target_statements
from tests.infrastructure.conftest import (
    PRODUCTION_TARGET_KEYS,
    PRODUCTION_TARGETS,
    REPO_ROOT,
    Synthesized,
    delivery_rights_written,
)

pytestmark = pytest.mark.xdist_group("infrastructure")

# Services whose actions read or change data; a wildcard action on any of them is never granted.
DATA_SERVICES = {"dynamodb", "sqs", "sns", "lambda", "events", "s3", "kms", "logs", "secretsmanager", "ssm"}
# Actions that support no resource-level permissions and touch no data.
RESOURCE_STAR_ALLOWED = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# The one wildcard action granted, because AWS documents it by that name: a publisher to an SNS topic
# encrypted with a customer-managed key needs kms:GenerateDataKey* (with kms:Decrypt) on the key. It
# only ever names keys, never "*" (test_given_target_keys_...).
DOCUMENTED_WILDCARDS = {"kms:GenerateDataKey*"}
# What the worker may do with the key of an encrypted target: what publishing to it needs.
TARGET_KEY_ACTIONS = {"kms:Decrypt", "kms:GenerateDataKey*"}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def policy_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every statement that grants something: identity policies, inline role policies, resource policies."""
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        documents = []
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents.append(properties["PolicyDocument"])
        elif resource["Type"] == "AWS::IAM::Role":
            documents.extend(policy["PolicyDocument"] for policy in properties.get("Policies", []))
        elif "PolicyDocument" in properties:  # queue, topic, bucket policies
            documents.append(properties["PolicyDocument"])
        elif resource["Type"] == "AWS::KMS::Key":
            documents.append(_key_policy(logical_id, properties["KeyPolicy"]))
        elif resource["Type"] == "AWS::Lambda::Permission":
            documents.append({"Statement": [{"Effect": "Allow", "Action": properties["Action"]}]})
        for document in documents:
            for statement in _as_list(document["Statement"]):
                if statement["Effect"] == "Allow":
                    yield logical_id, statement


def _text(value: Any) -> str:
    """A template value as text: Fn::Join joined, a Ref as ${name}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    return json.dumps(value)


def _key_policy(logical_id: str, policy: dict[str, Any]) -> dict[str, Any]:
    """A key policy as the grants it makes: its "*" resource is the key itself, and the statement
    giving the account (root) the key hands its use to the account's IAM policies, which these tests
    check themselves: it grants no principal anything."""
    statements = []
    for statement in _as_list(policy["Statement"]):
        principal = statement.get("Principal", {})
        if isinstance(principal, dict) and _text(principal.get("AWS", "")).endswith(":root"):
            continue
        resource = statement.get("Resource")
        statements.append({**statement, "Resource": {"Ref": logical_id} if resource == "*" else resource})
    return {"Statement": statements}


def wildcard_data_grants(template: dict[str, Any]) -> list[str]:
    """'<resource>: <action>' for each Allow of a wildcard (or NotAction) on a data service."""
    found = []
    for logical_id, statement in policy_statements(template):
        if "NotAction" in statement:
            found.append(f"{logical_id}: NotAction {statement['NotAction']}")
        for action in _as_list(statement.get("Action", [])):
            service = action.split(":")[0] if ":" in action else "*"
            if action in DOCUMENTED_WILDCARDS:
                continue
            if "*" in action and (
                service == "*" or service.replace("*", "") in DATA_SERVICES or "*" in service
            ):
                found.append(f"{logical_id}: {action}")
    return found


def _statements_of(synthesized: Synthesized, role: str) -> list[dict[str, Any]]:
    function = synthesized.function(role)
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    policies = [*synthesized.resources("AWS::IAM::Policy").values()]
    policies += synthesized.resources("AWS::IAM::ManagedPolicy").values()  # the targets' grants
    for policy in policies:
        if {"Ref": role_id} in policy["Properties"].get("Roles", []):
            statements.extend(_as_list(policy["Properties"]["PolicyDocument"]["Statement"]))
    return statements


def _actions_on(statements: list[dict[str, Any]], resource_fragment: str) -> set[str]:
    return {
        action
        for statement in statements
        if resource_fragment in str(statement["Resource"])
        for action in _as_list(statement["Action"])
    }


def test_given_a_policy_granting_a_wildcard_data_action_when_checked_then_it_is_reported() -> None:
    template = {
        "Resources": {
            "Bad": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyDocument": {
                        "Statement": [
                            {"Effect": "Allow", "Action": ["dynamodb:*"], "Resource": "*"},
                            {"Effect": "Allow", "Action": "s3:Get*", "Resource": "*"},
                            {"Effect": "Deny", "Action": "sqs:*", "Resource": "*"},
                            {"Effect": "Allow", "Action": "xray:PutTraceSegments", "Resource": "*"},
                        ]
                    }
                },
            }
        }
    }
    account = ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"]
    root = {"Fn::Join": ["", account]}
    template["Resources"]["Key"] = {
        "Type": "AWS::KMS::Key",
        "Properties": {
            "KeyPolicy": {
                "Statement": [
                    # the usual first statement: the account's IAM policies decide who uses the key
                    {"Effect": "Allow", "Action": "kms:*", "Principal": {"AWS": root}, "Resource": "*"},
                    {"Effect": "Allow", "Action": "kms:*", "Principal": {"AWS": "arn:aws:iam::1:role/x"}},
                ]
            }
        },
    }
    assert wildcard_data_grants(template) == ["Bad: dynamodb:*", "Bad: s3:Get*", "Key: kms:*"]


def test_given_any_configuration_when_synthesized_then_no_statement_grants_a_wildcard_data_action(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for synthesized in (default_stack, production_stack):
        offenders = wildcard_data_grants(synthesized.raw)
        assert offenders == [], (
            f"wildcard data actions granted in {synthesized.stack.stack_name}: {offenders}"
        )


def test_given_no_allow_all_targets_when_synthesized_then_only_xray_is_granted_on_every_resource(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    for synthesized in (default_stack, production_stack):
        for logical_id, statement in policy_statements(synthesized.raw):
            if "*" in _as_list(statement.get("Resource", [])):
                assert set(_as_list(statement["Action"])) <= RESOURCE_STAR_ALLOWED, (logical_id, statement)


def test_given_the_api_role_when_synthesized_then_it_reads_writes_items_queries_the_owner_index_and_queues(
    default_stack: Synthesized,
) -> None:
    statements = _statements_of(default_stack, "api")
    table = default_stack.logical_id("AWS::DynamoDB::Table")

    table_statements = [s for s in statements if s["Resource"] == {"Fn::GetAtt": [table, "Arn"]}]
    assert {a for s in table_statements for a in _as_list(s["Action"])} == set(TABLE_ITEM_ACTIONS["api"])
    index_statements = [s for s in statements if "/index/gsi1" in str(s["Resource"])]
    assert [_as_list(s["Action"]) for s in index_statements] == [["dynamodb:Query"]]
    assert not any("dynamodb:Scan" in _as_list(s["Action"]) for s in statements)
    assert _actions_on(statements, "WorkQueue") == {"sqs:SendMessage", "sqs:GetQueueAttributes"}
    assert _actions_on(statements, "DeadLetterQueue") == {"sqs:GetQueueAttributes"}


def test_given_the_dispatcher_role_when_synthesized_then_it_writes_items_and_sends_to_the_work_queue_only(
    default_stack: Synthesized,
) -> None:
    statements = _statements_of(default_stack, "dispatcher")
    assert _actions_on(statements, "WorkQueue") == {"sqs:SendMessage"}
    assert _actions_on(statements, "DeadLetterQueue") == set()
    assert not any("/index/" in str(s["Resource"]) for s in statements), "the dispatcher never lists jobs"
    assert not any(
        a.startswith(("lambda:", "sns:", "events:")) for s in statements for a in _as_list(s["Action"])
    )


def test_given_the_worker_role_when_synthesized_then_it_consumes_the_work_queue_and_feeds_the_dlq(
    default_stack: Synthesized,
) -> None:
    statements = _statements_of(default_stack, "worker")
    assert _actions_on(statements, "WorkQueue") >= {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
    }
    # a run's last delivery renews the message of a run another worker still holds
    assert "sqs:SendMessage" in _actions_on(statements, "WorkQueue")
    assert _actions_on(statements, "DeadLetterQueue") == {"sqs:SendMessage"}
    assert not any(
        a.startswith(("lambda:", "sns:", "events:")) for s in statements for a in _as_list(s["Action"])
    ), "with no allowed_target_arns the worker may reach no AWS target"


def test_given_allowed_target_arns_when_synthesized_then_the_worker_may_deliver_to_exactly_those(
    production_stack: Synthesized,
) -> None:
    statements = _statements_of(production_stack, "worker")
    granted = {
        (action, resource)
        for statement in statements
        for action in _as_list(statement["Action"])
        if action.split(":")[0] in ("lambda", "sns", "events") or action == "sqs:SendMessage"
        for resource in _as_list(statement["Resource"])
        if isinstance(resource, str)
    }
    lambda_arn, queue_arn, topic_arn, bus_arn = PRODUCTION_TARGETS
    assert granted == {
        ("lambda:InvokeFunction", lambda_arn),
        ("sqs:SendMessage", queue_arn),
        ("sns:Publish", topic_arn),
        ("events:PutEvents", bus_arn),
    }
    for role in ("api", "dispatcher"):
        assert not any(
            resource in PRODUCTION_TARGETS
            for statement in _statements_of(production_stack, role)
            for resource in _as_list(statement["Resource"])
        ), f"only the worker delivers to targets, not the {role}"


@pytest.mark.parametrize(
    "patterns",
    [
        "my-function",  # a name, not an ARN: IAM needs ARNs
        "arn:aws:s3:::bucket",  # not a kind of target
        "arn:aws:lambda:us-east-1:123456789012:function:job-[ab]",  # IAM has no character classes
    ],
)
def test_given_a_target_pattern_iam_cannot_express_when_configured_then_synth_refuses_it(
    patterns: str,
) -> None:
    with pytest.raises(ValidationError, match="allowed_target_arns"):
        DeploymentConfig.from_mapping({"allowed_target_arns": patterns})


def test_given_context_from_the_command_line_when_read_then_strings_become_lists_and_numbers() -> None:
    config = DeploymentConfig.from_mapping(
        {
            "shard_count": "16",
            "allowed_target_arns": "arn:aws:sns:us-east-1:123456789012:a, "
            "arn:aws:sqs:us-east-1:123456789012:b",
            "http_allow_list": '["10.0.0.0/8"]',
            "api_gateway_cloudwatch_role": "false",
        }
    )
    assert config.shard_count == 16
    assert config.allowed_target_arns == (
        "arn:aws:sns:us-east-1:123456789012:a",
        "arn:aws:sqs:us-east-1:123456789012:b",
    )
    assert config.http_allow_list == ("10.0.0.0/8",)
    assert config.api_gateway_cloudwatch_role == "never"


def test_given_a_setting_the_functions_would_refuse_when_configured_then_synth_refuses_it() -> None:
    with pytest.raises(ValidationError, match="shard_count"):
        DeploymentConfig.from_mapping({"shard_count": 0})
    with pytest.raises(ValidationError, match="lookahead_seconds"):
        DeploymentConfig.from_mapping({"lookahead_seconds": 5})
    with pytest.raises(ValidationError, match="log_retention_days"):
        DeploymentConfig.from_mapping({"log_retention_days": 31})


def test_given_allow_all_targets_when_granted_then_the_worker_gets_the_four_delivery_actions_by_name() -> (
    None
):
    (statement,) = target_statements(["*", "arn:aws:sns:us-east-1:123456789012:ignored"])
    document = statement.to_statement_json()
    assert document["Resource"] == "*"
    assert sorted(document["Action"]) == [
        "events:PutEvents",
        "lambda:InvokeFunction",
        "sns:Publish",
        "sqs:SendMessage",
    ]


def test_given_a_fanned_out_sweep_when_synthesized_then_the_dispatcher_may_invoke_itself_only() -> None:
    from tests.infrastructure.conftest import synthesize

    synthesized = synthesize({"sweep_invocations": 70, "dispatch_concurrency": 8})
    statements = _statements_of(synthesized, "dispatcher")
    invokes = [s for s in statements if "lambda:InvokeFunction" in _as_list(s["Action"])]
    assert len(invokes) == 1
    assert _as_list(invokes[0]["Action"]) == ["lambda:InvokeFunction"]
    resource = json.dumps(invokes[0]["Resource"])
    assert ":function:punctual-dev-dispatcher" in resource, resource
    assert "*" not in resource
    from aws_cdk.assertions import Annotations, Match

    annotations = Annotations.from_stack(synthesized.stack)
    findings = annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    findings += annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [str(finding.entry.data) for finding in findings] == []
    environment = synthesized.function("dispatcher")["Properties"]["Environment"]["Variables"]
    assert environment["PUNCTUAL_SWEEP_INVOCATIONS"] == "70"
    assert environment["PUNCTUAL_DISPATCH_CONCURRENCY"] == "8"


@pytest.mark.parametrize("role", ["api", "dispatcher", "worker"])
def test_given_each_role_when_synthesized_then_it_gets_exactly_its_own_item_actions(
    default_stack: Synthesized, role: str
) -> None:
    table = default_stack.logical_id("AWS::DynamoDB::Table")
    statements = _statements_of(default_stack, role)
    granted = {
        a
        for s in statements
        if s["Resource"] == {"Fn::GetAtt": [table, "Arn"]} and "Condition" not in s
        for a in _as_list(s["Action"])
    }
    assert granted == set(TABLE_ITEM_ACTIONS[role])
    scoped = [s for s in statements if s["Resource"] == {"Fn::GetAtt": [table, "Arn"]} and "Condition" in s]
    if role in SCOPED_ITEM_ACTIONS:
        actions, leading = SCOPED_ITEM_ACTIONS[role]
        assert [(set(_as_list(s["Action"])), s["Condition"]) for s in scoped] == [
            (set(actions), {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [leading]}})
        ], "only within the partitions of target limits' slots"
    else:
        assert scoped == []
    if role == "worker":  # it dispatches nothing and deletes triggers one by one at most
        assert not granted & {"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"}


def _kms_grants(statements: list[dict[str, Any]]) -> list[tuple[set[str], list[Any]]]:
    """(actions, resources) of each statement granting a kms: action."""
    return [
        ({str(a) for a in _as_list(s["Action"])}, _as_list(s["Resource"]))
        for s in statements
        if any(str(a).startswith("kms:") for a in _as_list(s["Action"]))
    ]


def test_given_target_keys_when_synthesized_then_the_worker_may_encrypt_for_exactly_those_keys(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    # SNS and SQS encrypt what the worker publishes or sends with the target's key, as the worker:
    # without the key, a job targeting an encrypted topic or queue fails with KMS.AccessDenied.
    assert _kms_grants(_statements_of(production_stack, "worker")) == [
        (TARGET_KEY_ACTIONS, list(PRODUCTION_TARGET_KEYS))
    ]
    for role in ("api", "dispatcher"):
        assert _kms_grants(_statements_of(production_stack, role)) == [], role
    for role in ("api", "dispatcher", "worker"):
        assert _kms_grants(_statements_of(default_stack, role)) == [], f"no key was named: {role}"


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:kms:eu-west-1:123456789012:alias/orders",  # IAM authorises a key's use by its key ARN
        "arn:aws:kms:eu-west-1:123456789012:key/*",
        "*",
        "1234abcd-12ab-34cd-56ef-1234567890ab",
        "arn:aws:sns:eu-west-1:123456789012:alerts",
    ],
)
def test_given_a_target_key_that_is_no_key_arn_when_configured_then_synth_refuses_it(arn: str) -> None:
    with pytest.raises(ValidationError, match="target_kms_key_arns"):
        DeploymentConfig.from_mapping({"target_kms_key_arns": [arn]})


def test_given_target_keys_from_the_command_line_when_read_then_they_become_a_list() -> None:
    config = DeploymentConfig.from_mapping({"target_kms_key_arns": ",".join(PRODUCTION_TARGET_KEYS)})
    assert config.target_kms_key_arns == PRODUCTION_TARGET_KEYS


def test_given_sns_targets_when_the_stack_owns_the_alarm_topic_then_the_worker_may_use_its_key() -> None:
    from aws_cdk.assertions import Annotations, Match

    from tests.infrastructure.conftest import synthesize

    # The stack's alarm topic (its ARN is the output AlarmTopicArn) may be a job's alert target
    # once allowed_target_arns names it; its key is the stack's own, so no setting can name it.
    synthesized = synthesize({"allowed_target_arns": ["arn:aws:sns:eu-west-1:123456789012:*"]})
    key_id = synthesized.logical_id("AWS::KMS::Key")
    assert _kms_grants(_statements_of(synthesized, "worker")) == [
        (TARGET_KEY_ACTIONS, [{"Fn::GetAtt": [key_id, "Arn"]}])
    ]
    # The worker's IAM grant takes effect because the key policy hands the key to the account's IAM
    # policies (the account root's statement), as CloudWatch's statement does not.
    key_policy = synthesized.only("AWS::KMS::Key")["Properties"]["KeyPolicy"]
    delegating = [
        s
        for s in _as_list(key_policy["Statement"])
        if s["Effect"] == "Allow"
        and isinstance(s.get("Principal"), dict)
        and _text(s["Principal"].get("AWS", "")).endswith(":root")
    ]
    assert delegating, "the key policy must let IAM policies of the account grant the key"
    annotations = Annotations.from_stack(synthesized.stack)
    findings = annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    findings += annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [str(finding.entry.data) for finding in findings] == []
    assert wildcard_data_grants(synthesized.raw) == []


def test_given_no_sns_target_or_an_operators_alarm_topic_when_synthesized_then_no_alarm_key_is_granted(
    default_stack: Synthesized, production_stack: Synthesized
) -> None:
    # No SNS target: the worker cannot publish to the alarm topic, so it needs none of its key.
    assert _kms_grants(_statements_of(default_stack, "worker")) == []
    # An operator's topic (alarm_topic_arn): the stack has no key; a key of theirs goes in
    # target_kms_key_arns like any target's.
    assert not production_stack.resources("AWS::KMS::Key")


def test_given_the_deploy_guide_when_it_names_the_table_actions_then_they_are_exactly_those_granted() -> None:
    # An operator reviewing the roles reads docs/deploy.md: it must name no action that is not
    # granted (ConditionCheckItem, BatchWriteItem) and leave out none that is.
    text = (REPO_ROOT / "docs" / "deploy.md").read_text()
    start = text.index("- Least privilege:")
    bullet = " ".join(text[start : text.index("\n\n", start)].split())

    def named_for(who: str) -> set[str]:
        found = re.search(rf"{who} ((?:`[A-Za-z]+`(?:, | and )?)+)", bullet)
        assert found, f"docs/deploy.md does not list the table actions of {who}"
        return {f"dynamodb:{name}" for name in re.findall(r"`([A-Za-z]+)`", found.group(1))}

    assert named_for("the api and the dispatcher") == set(TABLE_ITEM_ACTIONS["api"])
    assert set(TABLE_ITEM_ACTIONS["dispatcher"]) == set(TABLE_ITEM_ACTIONS["api"])
    assert named_for("the worker") == set(TABLE_ITEM_ACTIONS["worker"])
    for role, actions in TABLE_ITEM_ACTIONS.items():
        assert not {"dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem"} & set(actions), role


@pytest.mark.parametrize(
    ("role", "calendar_actions"),
    [
        # the API manages calendars: lists an owner's (Query), reads, creates or replaces, deletes
        ("api", {"dynamodb:Query", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}),
        # a dispatch reads the calendars its jobs name (one BatchGetItem; GetItem for keys left over)
        ("dispatcher", {"dynamodb:GetItem", "dynamodb:BatchGetItem"}),
    ],
)
def test_given_calendar_items_when_synthesized_then_the_roles_that_use_them_may_whatever_their_key(
    default_stack: Synthesized, role: str, calendar_actions: set[str]
) -> None:
    # Calendars are items of the table (CAL#<owner>): a grant narrowed by key (dynamodb:LeadingKeys)
    # would refuse them on AWS while moto, which checks no IAM, never does.
    table = default_stack.logical_id("AWS::DynamoDB::Table")
    on_items = [
        s for s in _statements_of(default_stack, role) if s["Resource"] == {"Fn::GetAtt": [table, "Arn"]}
    ]
    granted = {a for s in on_items if "Condition" not in s for a in _as_list(s["Action"])}
    assert calendar_actions <= granted


def test_given_delivery_rights_in_the_context_when_synthesized_then_the_deploy_writes_them() -> None:
    from tests.infrastructure.conftest import synthesize

    rights = [
        {
            "owners": ["arn:aws:iam::123456789012:role/reports"],
            "targets": ["arn:aws:sqs:*:123456789012:reports-*"],
        },
        {"owners": ["*"], "hosts": ["hooks.example.com"]},
    ]
    synthesized = synthesize(
        {
            "delivery_rights": json.dumps(rights),
            "webhook_hosts_per_owner": True,
            "delivery_rights_mode": "owner",
        }
    )
    written = delivery_rights_written(synthesized.raw)
    assert written == {
        "rights": [{**rights[0], "hosts": []}, {**rights[1], "targets": []}],
        "hosts_per_owner": True,
    }
    for role in ("api", "worker"):
        variables = synthesized.function(role)["Properties"]["Environment"]["Variables"]
        assert variables.get("PUNCTUAL_DELIVERY_RIGHTS_MODE", "owner") == "owner"


@pytest.mark.parametrize(
    ("rights", "field"),
    [
        ('[{"targets": ["*"]}]', "delivery_rights.rights[0].owners"),
        ('[{"owners": ["a"], "hosts": ["https://x/"]}]', "delivery_rights.rights[0].hosts"),
        ("[{", "delivery_rights: not a JSON list"),
    ],
)
def test_given_delivery_rights_that_cannot_be_read_when_configured_then_the_synth_names_the_field(
    rights: str, field: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(field)):
        DeploymentConfig.from_mapping({"delivery_rights": rights})

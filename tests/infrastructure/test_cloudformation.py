"""The synthesized template, created by (moto's) CloudFormation: the resources it models come up.

The file assets are packaged and uploaded to the CDK bootstrap bucket as ``cdk deploy`` would, the
bootstrap version parameter exists, and the stack is created. What moto cannot do, and what checks
it instead (the same list is in docs/deploy.md):

- CloudWatch alarms: no CloudFormation support. They are left out, with the dashboard that embeds
  them; test_monitoring.py checks both in the template.
- The allow-list's custom resource (CDK's AwsCustomResource): moto runs a Lambda function only in
  Docker. It is left out; test_target_grants.py makes its PutItem against moto and reads it back as
  the API does. So is API-key mode's custom resource that names the account's CloudWatch role
  (tests/unit/test_apigateway_account.py drives its handler); the stage is created without waiting
  for it.
- Accepted but not modelled (moto warns and creates nothing): the queue and topic policies, the
  metric filter, API Gateway's stage, account settings, API keys and usage plans, the dispatcher's
  event invoke config. The template tests check them.
- Deleted in part: moto's DeleteStack never deletes a managed policy (the worker's grants on
  targets), so never detaches it from its role; the test deletes the policies first, as
  CloudFormation's order does.
- Modelled in part: the table's TimeToLiveSpecification is not applied; a KMS key's Tags fail
  (moto passes them in CloudFormation's form to its KMS, which wants TagKey/TagValue), so the key is
  created without them, and its key policy is kept in a form moto's KMS API cannot read back.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.kms.models import kms_backends

from punctual_functions.core.resources import WORK_QUEUE_MAX_RECEIVE_COUNT
from tests.infrastructure.conftest import Synthesized

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's
NOT_MODELLED = {
    "AWS::CloudWatch::Alarm",
    "AWS::CloudWatch::Dashboard",
    "Custom::AWS",
    "Custom::PunctualApiGatewayAccount",
}
# moto warns of each resource type it accepts without modelling (listed above).
pytestmark = [
    pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning"),
    pytest.mark.xdist_group("infrastructure"),  # the synthesized stacks are the other tests' too
]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield


def _template_for_moto(template: dict[str, Any]) -> dict[str, Any]:
    """The template less what moto cannot model and what refers to it (transitively).

    moto's CloudFormation hands a KMS key's Tags to KMS in CloudFormation's form (Key, Value), where
    its KMS expects TagKey and TagValue, and fails; the key is created without its tags.
    """
    resources = dict(template["Resources"])
    gone = {name for name, resource in resources.items() if resource["Type"] in NOT_MODELLED}
    # A resource made after a custom resource (the REST stage after the account's role is named)
    # is kept, without that order.
    for name, resource in resources.items():
        waits_for = resource.get("DependsOn", [])
        if any(other in gone for other in waits_for):
            kept_order = [other for other in waits_for if other not in gone]
            resources[name] = {k: v for k, v in resource.items() if k != "DependsOn"}
            if kept_order:
                resources[name]["DependsOn"] = kept_order
    while True:
        referring = {
            name
            for name, resource in resources.items()
            if name not in gone and any(f'"{other}"' in json.dumps(resource) for other in gone)
        }
        if not referring:
            break
        gone |= referring
    kept = {}
    for name, resource in resources.items():
        if name in gone:
            continue
        if resource["Type"] == "AWS::KMS::Key":
            properties = {k: v for k, v in resource["Properties"].items() if k != "Tags"}
            kept[name] = {**resource, "Properties": properties}
        else:
            kept[name] = resource
    return {**template, "Resources": kept}


def _publish_assets(synthesized: Synthesized, stack_name: str) -> None:
    """Put the assets where the template expects them, as cdk deploy does after the bootstrap."""
    bucket = f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    manifest = json.loads((synthesized.assembly_dir / f"{stack_name}.assets.json").read_text())
    for spec in manifest["files"].values():
        (destination,) = spec["destinations"].values()
        source = synthesized.assembly_dir / spec["source"]["path"]
        if spec["source"].get("packaging") == "zip":
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(source.rglob("*")):
                    if path.is_file():
                        archive.write(path, path.relative_to(source))
            body = buffer.getvalue()
        else:
            body = source.read_bytes()
        s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String"
    )


def _delete_stack(stack_name: str) -> None:
    """DeleteStack, after doing what moto's CloudFormation leaves out: it never deletes a managed policy
    (the worker's grants on targets), so never detaches it, and then cannot delete the role. Deleting
    the policy first is CloudFormation's own order (the policy depends on the role)."""
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    iam = boto3.client("iam", region_name=REGION)
    resources = cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
    for resource in resources:
        if resource.get("ResourceType") != "AWS::IAM::ManagedPolicy":
            continue
        arn = resource["PhysicalResourceId"]
        for role in iam.list_entities_for_policy(PolicyArn=arn)["PolicyRoles"]:
            iam.detach_role_policy(RoleName=role["RoleName"], PolicyArn=arn)
        iam.delete_policy(PolicyArn=arn)
    cloudformation.delete_stack(StackName=stack_name)


def _create(synthesized: Synthesized, stack_name: str) -> dict[str, Any]:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(
        StackName=stack_name,
        TemplateBody=json.dumps(_template_for_moto(synthesized.raw)),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
    )
    (stack,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


def test_given_the_default_template_when_cloudformation_creates_it_then_its_resources_come_up(
    aws: None, default_stack: Synthesized
) -> None:
    _publish_assets(default_stack, "punctual-dev")
    outputs = _create(default_stack, "punctual-dev")
    assert {"ApiUrl", "TableName", "WorkQueueUrl", "DeadLetterQueueUrl", "AlarmTopicArn"} <= set(outputs)

    # The table: keys and the owner index, under a generated name (moto's CloudFormation does not
    # apply TimeToLiveSpecification; test_storage_and_queues.py checks it in the template)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    table = dynamodb.describe_table(TableName=outputs["TableName"])["Table"]
    assert [key["AttributeName"] for key in table["KeySchema"]] == ["pk", "sk"]
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["gsi1"]

    # The queues: the work queue redrives to the DLQ
    sqs = boto3.client("sqs", region_name=REGION)
    attributes = sqs.get_queue_attributes(QueueUrl=outputs["WorkQueueUrl"], AttributeNames=["All"])
    redrive = json.loads(attributes["Attributes"]["RedrivePolicy"])
    assert redrive["maxReceiveCount"] == WORK_QUEUE_MAX_RECEIVE_COUNT
    assert redrive["deadLetterTargetArn"].endswith(outputs["DeadLetterQueueUrl"].rsplit("/", 1)[1])

    # The functions: runtime, handler and the settings that name this stack's table and queue
    functions = {
        f["FunctionName"]: f for f in boto3.client("lambda", region_name=REGION).list_functions()["Functions"]
    }
    for role in ("api", "dispatcher", "worker"):
        function = functions[f"punctual-dev-{role}"]
        assert function["Runtime"] == "python3.13"
        assert function["Handler"] == f"punctual_functions.{role}.handler.handler"
        variables = function["Environment"]["Variables"]
        assert variables["PUNCTUAL_TABLE_NAME"] == outputs["TableName"]
        assert variables["PUNCTUAL_QUEUE_URL"] == outputs["WorkQueueUrl"]
    mappings = boto3.client("lambda", region_name=REGION).list_event_source_mappings()["EventSourceMappings"]
    assert [m["FunctionArn"].rsplit(":", 1)[1] for m in mappings] == ["punctual-dev-worker"]

    # The tick and the API
    events = boto3.client("events", region_name=REGION)
    (rule,) = events.list_rules()["Rules"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    (tick,) = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
    assert tick["Arn"] == functions["punctual-dev-dispatcher"]["FunctionArn"]
    # The default API is an HTTP API (AWS::ApiGatewayV2::*), which moto's CloudFormation does not
    # model: tests/infrastructure/test_api.py holds its routes, authorizer and stage to the template.
    assert not boto3.client("apigateway", region_name=REGION).get_rest_apis()["items"]
    assert default_stack.only("AWS::ApiGatewayV2::Api")["Properties"]["Name"] == "punctual-dev"

    # The alarm topic, encrypted with its own key
    topic = boto3.client("sns", region_name=REGION).get_topic_attributes(TopicArn=outputs["AlarmTopicArn"])
    key_arn = topic["Attributes"]["KmsMasterKeyId"]
    keys = boto3.client("kms", region_name=REGION).list_keys()["Keys"]
    assert key_arn in [key["KeyArn"] for key in keys]
    # (moto keeps a key policy from CloudFormation as an object, which its KMS API then fails to
    # parse: the key is read from its backend.)
    key = kms_backends[ACCOUNT][REGION].keys[key_arn.rsplit("/", 1)[1]]
    assert key.enabled and key.key_rotation_status


def test_given_a_deleted_prod_stack_when_it_is_deployed_again_then_its_retained_table_does_not_block_it(
    aws: None, production_stack: Synthesized
) -> None:
    _publish_assets(production_stack, "punctual-prod")
    first = _create(production_stack, "punctual-prod")
    _delete_stack("punctual-prod")
    tables = boto3.client("dynamodb", region_name=REGION).list_tables()["TableNames"]
    assert tables == [first["TableName"]], "prod keeps its table (and its jobs) when the stack is deleted"
    # With a fixed name this create failed on the table still being there.
    second = _create(production_stack, "punctual-prod")
    assert second["TableName"] != first["TableName"], "the new stack gets a table of its own"
    # API-key mode keeps the REST API (HTTP APIs have no API keys): it comes up with each stack.
    apis = boto3.client("apigateway", region_name=REGION).get_rest_apis()["items"]
    assert [api["name"] for api in apis][-1:] == ["punctual-prod"]

"""Least-privilege IAM statements: named actions only, on the resources each function uses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs

from punctual.cdk.config import ALLOW_ALL_TARGETS, TARGET_ACTIONS, target_service
from punctual_functions.core.resources import PK
from punctual_functions.core.store.keys import allowed_targets_key

# Item-level reads and writes each function makes. IAM authorises a TransactWriteItems item by item,
# through the action of each: the code's transactions hold Put, Update and Delete items only, so
# they need nothing beyond these (no ConditionCheck item, hence no ConditionCheckItem). No
# BatchWriteItem (deletes go one by one), no Scan, no table administration, no streams.
# tests/integration/test_table_permissions.py records what each role's code paths call and checks
# that each role is granted exactly that. The grants are on the table's items, whatever their key:
# the API's on business calendars (CAL#<owner>: Query, GetItem, PutItem, DeleteItem) and the
# dispatcher's reads of the calendars its jobs name (GetItem, BatchGetItem) are among them.
_READS: Final = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
_WRITES: Final = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
TABLE_ITEM_ACTIONS: Final[dict[str, tuple[str, ...]]] = {
    # Runs written once (PutItem), next occurrences, stale and sent-retry triggers deleted one by one,
    # a job whose schedule ran out completed (UpdateItem in a transaction with its name's Delete).
    "dispatcher": (*_READS, *_WRITES),
    # Everything the dispatcher does (a job due soon is dispatched at once), and the jobs themselves.
    "api": (*_READS, *_WRITES),
    # Runs: start, lease, outcome (on the run alone; a long retry's trigger with it); the runs before
    # one (a Query) when its job skips overlapping runs; target limits' slots and waiters (below). It
    # deletes no other item.
    "worker": (*_READS, "dynamodb:PutItem", "dynamodb:UpdateItem"),
}


# Item actions a role may make in some partitions only (IAM's dynamodb:LeadingKeys): the worker
# deletes the slots it releases and the waiters of target limits (``SLOT#...``), and nothing else.
SCOPED_ITEM_ACTIONS: Final[dict[str, tuple[tuple[str, ...], str]]] = {
    "worker": (("dynamodb:DeleteItem",), "SLOT#*"),
}


def scoped_table_items(table: dynamodb.ITable, role: str) -> iam.PolicyStatement:
    actions, leading_keys = SCOPED_ITEM_ACTIONS[role]
    return iam.PolicyStatement(
        actions=list(actions),
        resources=[table.table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [leading_keys]}},
    )


def deployment_item(table: dynamodb.ITable) -> iam.PolicyStatement:
    """The deploy's write of the allow-list of targets (its custom resource): that one item alone."""
    partition = str(allowed_targets_key()[PK]["S"])
    return iam.PolicyStatement(
        actions=["dynamodb:PutItem"],
        resources=[table.table_arn],
        conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [partition]}},
    )


def table_items(table: dynamodb.ITable, role: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=list(TABLE_ITEM_ACTIONS[role]), resources=[table.table_arn])


def index_query(table: dynamodb.ITable, index_name: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        actions=["dynamodb:Query"], resources=[f"{table.table_arn}/index/{index_name}"]
    )


def queue_actions(actions: Iterable[str], *queues: sqs.IQueue) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=sorted(actions), resources=[queue.queue_arn for queue in queues])


# What SNS and SQS need of the sender to a topic or queue encrypted with a customer-managed key: a data
# key to encrypt the message with, and kms:Decrypt, which both services document for senders too. The
# SNS documentation names the first as the wildcard kms:GenerateDataKey*.
TARGET_KEY_ACTIONS: Final = ("kms:Decrypt", "kms:GenerateDataKey*")


def target_key_statement(key_arns: Iterable[str]) -> iam.PolicyStatement:
    """The worker's use of the keys of encrypted targets, by their key ARNs."""
    return iam.PolicyStatement(actions=list(TARGET_KEY_ACTIONS), resources=list(dict.fromkeys(key_arns)))


def target_statements(patterns: Iterable[str]) -> list[iam.PolicyStatement]:
    """What the worker may do to job targets: one statement per service, on exactly these ARN patterns.

    ``*`` (allow every target) grants the four delivery actions on every resource; nothing else ever
    does.
    """
    patterns = list(dict.fromkeys(patterns))
    if ALLOW_ALL_TARGETS in patterns:
        return [iam.PolicyStatement(actions=sorted(TARGET_ACTIONS.values()), resources=["*"])]
    by_service: dict[str, list[str]] = {}
    for pattern in patterns:
        service = target_service(pattern)
        if service is None or service not in TARGET_ACTIONS:
            raise ValueError(f"not a supported target ARN: {pattern!r}")
        by_service.setdefault(service, []).append(pattern)
    return [
        iam.PolicyStatement(actions=[TARGET_ACTIONS[service]], resources=resources)
        for service, resources in sorted(by_service.items())
    ]

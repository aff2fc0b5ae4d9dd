"""The contract of ``DeploymentStore``: the allow-list of targets reads back as written, replaced whole
by each write, none before the first."""

from __future__ import annotations

from punctual_functions.core.ports import Tables

ARNS = [
    "arn:aws:sqs:eu-west-1:123456789012:reports-*",
    "arn:aws:lambda:eu-west-1:123456789012:function:billing",
    "arn:aws:events:eu-west-1:123456789012:event-bus/default",
]


def test_no_allow_list_before_the_deployment_writes_one(tables: Tables) -> None:
    assert tables.allowed_targets() == ()


def test_the_allow_list_reads_back_in_order_and_each_write_replaces_it(tables: Tables) -> None:
    tables.put_allowed_targets(ARNS)
    assert tables.allowed_targets() == tuple(ARNS)
    tables.put_allowed_targets(["*"])
    assert tables.allowed_targets() == ("*",)
    tables.put_allowed_targets([])
    assert tables.allowed_targets() == ()


def test_two_hundred_patterns_fit_the_item(tables: Tables) -> None:
    many = [f"arn:aws:sqs:eu-west-1:123456789012:team-{index:03d}-reports-queue" for index in range(200)]
    tables.put_allowed_targets([*many, many[0]])
    assert tables.allowed_targets() == tuple(many)

"""The contract of ``DeploymentStore``: the allow-list of targets and the delivery rights read back as
written, replaced whole by each write, none before the first."""

from __future__ import annotations

from punctual_functions.core.ports import Tables
from punctual_functions.core.rights import DeliveryRight, DeliveryRights

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


def test_no_delivery_rights_before_the_deployment_writes_them(tables: Tables) -> None:
    assert tables.delivery_rights() == DeliveryRights()


def test_delivery_rights_read_back_as_written_and_each_write_replaces_them(tables: Tables) -> None:
    rights = DeliveryRights(
        rights=(
            DeliveryRight(owners=("arn:aws:iam::123456789012:role/a",), targets=tuple(ARNS)),
            DeliveryRight(owners=("*",), hosts=("*.example.com",)),
        ),
        hosts_per_owner=True,
    )
    tables.put_delivery_rights(rights)
    assert tables.delivery_rights() == rights
    tables.put_delivery_rights(DeliveryRights.for_every_owner())
    assert tables.delivery_rights() == DeliveryRights.for_every_owner()
    assert tables.allowed_targets() == (), "apart from the allow-list"


def test_a_thousand_rights_fit_the_item(tables: Tables) -> None:
    many = tuple(
        DeliveryRight(
            owners=(f"arn:aws:iam::123456789012:role/team-{index:04d}",),
            targets=(f"arn:aws:sqs:eu-west-1:123456789012:team-{index:04d}-*",),
        )
        for index in range(1000)
    )
    tables.put_delivery_rights(DeliveryRights(rights=many))
    assert tables.delivery_rights().rights == many

"""The deployment's delivery rights (docs/security.md): which owners may deliver to which targets,
written into the table's ``DEPLOYMENT`` item at deploy time, as the allow-list is
(``functions.py``), and read by the API and the worker (``punctual_functions/core/rights.py``).

The rights are the setting's (``delivery_rights``) and those ``Scheduler.allow_target`` gives, joined
when the template is written: a right given after this construct was made counts too. An owner may
be a token (a role's ARN), resolved by CloudFormation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jsii
from aws_cdk import IStableStringProducer, Lazy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.deployment_items import item_writer
from punctual_functions.core.store.deployment import delivery_rights_item

# Owners known only when the template is written (the jobs' owner role, made with the first Job).
Owners = Callable[[], Sequence[str]]


class DeliveryRightsItem(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: SchedulerProps, table: dynamodb.ITable
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._given: list[tuple[Owners, str]] = []
        rights = Lazy.string(_Produced(self._json))
        self.writer = item_writer(
            self,
            "Writer",
            config=config,
            table=table,
            item=delivery_rights_item(rights),
            physical_id="punctual-delivery-rights",
        )

    def give(self, owners: Owners, target_arn: str) -> None:
        """Give ``owners`` (asked for when the template is written) a right to ``target_arn``."""
        self._given.append((owners, target_arn))

    def _json(self) -> str:
        rights: list[dict[str, Any]] = [dict(right) for right in self._config.delivery_rights]
        for owners, arn in self._given:
            named = list(dict.fromkeys(owners()))
            if named:
                rights.append({"owners": named, "targets": [arn]})
        value = {"rights": rights, "hosts_per_owner": self._config.webhook_hosts_per_owner}
        return Stack.of(self).to_json_string(value)


@jsii.implements(IStableStringProducer)
class _Produced:
    """A string CDK asks for when the template is written."""

    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()

"""The Punctual stack: one ``Scheduler`` and the outputs a client needs.

Its resources keep the logical ids they had before the ``Scheduler`` construct held them
(``_allocate_logical_id``, CDK's ``allocateLogicalId``, leaves the Scheduler's own segment out of
each path): an existing deployment updates in place rather than replacing its table.
``tests/infrastructure/test_logical_ids.py`` holds the ids to a record."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from aws_cdk import CfnElement, CfnOutput, Stack
from constructs import Construct

from punctual.cdk.assets import LambdaAssets
from punctual.cdk.config import SchedulerProps
from punctual.cdk.scheduler import Scheduler

# The Scheduler's id in the stack: left out of the logical ids (see the module's text).
SCHEDULER_ID = "Punctual"


class PunctualStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: SchedulerProps,
        assets: LambdaAssets,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.scheduler = Scheduler(self, SCHEDULER_ID, props=props, assets=assets)
        scheduler = self.scheduler
        CfnOutput(self, "ApiUrl", value=scheduler.api_url, description="Base URL of the API (append v1/...)")
        CfnOutput(self, "TableName", value=scheduler.table.table_name)
        CfnOutput(self, "WorkQueueUrl", value=scheduler.queues.work_queue.queue_url)
        CfnOutput(self, "DeadLetterQueueUrl", value=scheduler.queues.dead_letter_queue.queue_url)
        CfnOutput(
            self,
            "AlarmTopicArn",
            value=scheduler.alarm_topic.topic_arn,
            description="Every alarm notifies this SNS topic (alarm_email subscribes to it)",
        )
        for index, key in enumerate(scheduler.api.api_keys):
            CfnOutput(
                self,
                f"ApiKeyId{index}",
                value=key.key_id,
                description="aws apigateway get-api-key --include-value --api-key <id> shows the key",
            )

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        """CDK's own rule (a readable prefix and a hash of the path below the stack), applied to the
        path without the Scheduler's segment, in which the ids that name another construct by its
        unique id (an event source's, a permission's) name it as it was without the segment too."""
        path = cfn_element.node.path  # asked again at every reference to the element: remembered
        known: dict[str, str] = self.__dict__.setdefault("_logical_ids", {})
        if path not in known:
            scopes = cfn_element.node.scopes
            below = [scope.node.id for scope in scopes[scopes.index(self) + 1 :]]
            if below[:1] == [SCHEDULER_ID]:
                below = [self._as_before(part) for part in below[1:]]
            known[path] = _unique_id(below)
        return known[path]

    def _as_before(self, part: str) -> str:
        """``part`` with every construct's unique id under the Scheduler (CDK puts one in an event
        source's or a permission's id) replaced by the one it had without the Scheduler. The tree as
        built so far holds the construct it names: it was made first."""
        if _alphanumeric(self.node.id) + SCHEDULER_ID not in part:
            return part
        for construct in self.node.find_all():
            scopes = construct.node.scopes
            path = [scope.node.id for scope in scopes[scopes.index(self) :]]  # the stack's id first
            if len(path) < 3 or path[1] != SCHEDULER_ID or "".join(map(_alphanumeric, path)) not in part:
                continue
            unique_id = _unique_id(path)
            if unique_id in part:
                part = part.replace(unique_id, _unique_id([path[0], *path[2:]]))
        return part


def _alphanumeric(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


# CDK's makeUniqueId (aws-cdk-lib/core/lib/private/uniqueid.ts), which it does not export: a readable
# prefix of the path and an MD5 hash of it. ``tests/infrastructure/test_logical_ids.py`` holds it to
# ``Names.unique_id`` (CDK's own) and the stack's logical ids to their record.
_HIDDEN_ID = "Default"
_HIDDEN_FROM_HUMAN_ID = "Resource"
_HASH_LENGTH = 8
_MAX_HUMAN_LENGTH = 240
_MAX_ID_LENGTH = 255


def _unique_id(path: list[str]) -> str:
    components = [part for part in path if part != _HIDDEN_ID]
    if not components:
        raise ValueError("a unique id needs a path")
    if len(components) == 1 and len(_alphanumeric(components[0])) <= _MAX_ID_LENGTH:
        return _alphanumeric(components[0])
    digest = hashlib.md5("/".join(components).encode()).hexdigest()[:_HASH_LENGTH].upper()
    kept: list[str] = []
    for part in components:
        if not kept or not kept[-1].endswith(part):
            kept.append(part)
    human = "".join(_alphanumeric(part) for part in kept if part != _HIDDEN_FROM_HUMAN_ID)
    return human[:_MAX_HUMAN_LENGTH] + digest

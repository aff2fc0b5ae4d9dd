"""The worker's grants on job targets: customer-managed IAM policies named by what they grant.

Two AWS rules shape them:

* **Size.** A role's inline policies share 10,240 characters, a managed policy holds 6,144, and a role
  takes 10 managed policies (20 on request). A few dozen targets in the worker's inline policy would
  pass the first: the grants are packed into managed policies instead, each under 6,144 characters
  (an ARN that is only known at deploy time is counted at its service's longest), at most
  ``MAX_POLICIES`` of them, so that a deploy that replaces every one of them (below) still attaches
  at most 10 to the role. More than that is refused at synth, naming the quota: allow such targets by
  ARN pattern (``allowed_target_arns``) instead of one by one.
* **Order.** CloudFormation updates resources before it deletes the ones a template no longer has,
  and deletes a resource before those it depends on. A policy whose statements changed in place
  would lose a target's grant in the update phase, while the ``Job`` that still uses it is cancelled
  only in the cleanup phase (or updated after the policy, which it depends on): runs in between would
  be refused. So a policy never changes: its logical ID is a digest of what it grants. A grant that a
  deploy removes goes with its policy, deleted in the cleanup phase, after every ``Job`` that
  depended on it (a ``Job`` depends on its whole ``Scheduler``); the new grants are created before
  any ``Job`` is updated to use them.

Targets fall into the policies by a digest of each (with as few policies as the sizes allow), so a
deploy that adds or removes one target replaces one policy, not all of them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Final

import jsii
from aws_cdk import Aspects, IAspect, Stack, Token
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct, IConstruct

from punctual.cdk.config import TARGET_ACTIONS

# IAM's quotas (IAM and AWS STS quotas, "IAM object quotas" and "character limits").
MANAGED_POLICY_CHARACTERS: Final = 6_144
MANAGED_POLICIES_PER_ROLE: Final = 10
# Half the role's quota: a deploy may attach each new policy before it deletes the one it replaces.
MAX_POLICIES: Final = MANAGED_POLICIES_PER_ROLE // 2
# The policy's own characters ({"Version": ..., "Statement": [...]}) and a statement's (Effect, Action).
_POLICY_OVERHEAD: Final = 60
_STATEMENT_OVERHEAD: Final = 70
# An ARN known only at deploy time, at its longest: partition, region, account and the longest name
# (a function 64 characters, a queue 80, a topic or a bus 256).
_LONGEST_ARN: Final = {"lambda": 125, "sqs": 130, "sns": 310, "events": 320}


@dataclass(frozen=True)
class _Grant:
    service: str
    arn: str
    key: str  # the ARN as the template writes it (a token resolved to its expression)
    characters: int  # in the policy: the ARN, quoted, and a comma


class TargetGrants(Construct):
    """``add(service, arn)`` for each target; the policies are made when the app is synthesized,
    once every ``Job`` has added its own."""

    def __init__(self, scope: Construct, construct_id: str, *, role: iam.IRole, reason: str) -> None:
        super().__init__(scope, construct_id)
        self._role = role
        self._reason = reason
        self._grants: dict[str, _Grant] = {}
        self.policies: list[iam.ManagedPolicy] = []
        Aspects.of(self).add(_MakePolicies(self))

    def add(self, service: str, arn: str) -> None:
        if service not in TARGET_ACTIONS:
            raise ValueError(f"not a supported target ARN: {arn!r}")
        key = json.dumps(Stack.of(self).resolve(arn), sort_keys=True)
        if key in self._grants:
            return
        length = _LONGEST_ARN[service] if Token.is_unresolved(arn) else len(arn)
        self._grants[key] = _Grant(service, arn, key, length + 3)

    def make_policies(self) -> None:
        if self.policies or not self._grants:
            return
        for bucket in _packed(list(self._grants.values())):
            digest = hashlib.sha256("\n".join(g.key for g in bucket).encode()).hexdigest()[:16]
            by_service: dict[str, list[str]] = {}
            for grant in bucket:
                by_service.setdefault(grant.service, []).append(grant.arn)
            policy = iam.ManagedPolicy(
                self,
                f"Grants{digest}",
                description="Punctual worker: delivery to these job targets (named by what it grants)",
                statements=[
                    iam.PolicyStatement(actions=[TARGET_ACTIONS[service]], resources=arns)
                    for service, arns in sorted(by_service.items())
                ],
                roles=[self._role],
            )
            wildcards = sorted(
                {f"Resource::{g.arn}" for g in bucket if not Token.is_unresolved(g.arn) and "*" in g.arn}
            )
            if wildcards:
                suppression = NagPackSuppression(
                    id="AwsSolutions-IAM5", reason=self._reason, applies_to=wildcards
                )
                NagSuppressions.add_resource_suppressions(policy, [suppression])
            self.policies.append(policy)


def _size(grants: list[_Grant]) -> int:
    services = {grant.service for grant in grants}
    return _POLICY_OVERHEAD + _STATEMENT_OVERHEAD * len(services) + sum(g.characters for g in grants)


def _packed(grants: list[_Grant]) -> list[list[_Grant]]:
    """The grants in as few policies as fit (at most MAX_POLICIES), each target in the policy its
    digest names, in the template's order."""
    grants = sorted(grants, key=lambda grant: grant.key)
    for count in range(1, MAX_POLICIES + 1):
        buckets: list[list[_Grant]] = [[] for _ in range(count)]
        for grant in grants:
            buckets[int(hashlib.sha256(grant.key.encode()).hexdigest(), 16) % count].append(grant)
        if all(_size(bucket) <= MANAGED_POLICY_CHARACTERS for bucket in buckets):
            return [bucket for bucket in buckets if bucket]
    total = _size(grants)
    raise ValueError(
        f"the worker's grants on {len(grants)} job targets take about {total} characters of IAM policy: "
        f"more than {MAX_POLICIES} managed policies of {MANAGED_POLICY_CHARACTERS} characters (IAM "
        f"attaches at most {MANAGED_POLICIES_PER_ROLE} to a role, and a deploy may replace each). Allow "
        "such targets by ARN pattern instead (allowed_target_arns, e.g. "
        "arn:aws:sqs:<region>:<account>:reports-*) rather than one by one"
    )


@jsii.implements(IAspect)
class _MakePolicies:
    def __init__(self, grants: TargetGrants) -> None:
        self._grants = grants

    def visit(self, node: IConstruct) -> None:
        if node.node.path == self._grants.node.path:
            self._grants.make_policies()

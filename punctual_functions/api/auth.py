"""Who is calling: the owner of the jobs a request may see, from API Gateway's request context."""

from __future__ import annotations

import re
from typing import Any

from punctual_functions.api.errors import Unauthorized
from punctual_functions.core.trail import Caller

_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/[^/]+$"
)


def owner_of(event: dict[str, Any], owner_mode: str) -> str:
    """The authenticated caller: a Lambda/local authorizer's principal, the IAM caller (a role, or a
    role's session, per the deployment's owner mode), or an API key.

    An HTTP API (payload 2.0) puts the IAM caller under ``authorizer.iam``; a REST API (1.0) under
    ``identity``, beside the API key's id."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    if event.get("version") == "2.0":
        iam = owner_of_arn((authorizer.get("iam") or {}).get("userArn") or None, owner_mode)
        if not iam:
            raise Unauthorized("missing or invalid credentials")
        return iam
    identity = context.get("identity") or {}
    principal = authorizer.get("principalId")
    owner = principal or owner_of_arn(identity.get("userArn"), owner_mode) or identity.get("apiKeyId")
    if not owner:
        raise Unauthorized("missing or invalid credentials")
    return str(owner)


def caller_of(event: dict[str, Any], owner: str) -> Caller:
    """Who is calling, for the audit trail: the principal as API Gateway saw it (an assumed role with
    its session, an IAM user, a Lambda or local authorizer's principal, an API key's id) and the
    request's id."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    identity = context.get("identity") or {}
    principal = (
        (authorizer.get("iam") or {}).get("userArn")
        or authorizer.get("principalId")
        or identity.get("userArn")
        or identity.get("apiKeyId")
        or owner
    )
    return Caller(owner=owner, principal=str(principal), request_id=str(context.get("requestId") or ""))


def owner_of_arn(arn: str | None, mode: str = "role") -> str | None:
    """The owner for an IAM caller.

    ``role`` (the default): a role's sessions (Lambda, ECS, SSO logins) all act as the role, so jobs
    created in one session stay visible in the next, and every SSO user of one permission set shares
    them. ``session``: the assumed-role ARN as it is, with the session name (for SSO, the user), so
    people sharing a role are told apart; a service's sessions then need a stable session name.
    """
    if not arn:
        return None
    match = _ASSUMED_ROLE.match(arn)
    if match and mode == "role":
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return arn

"""How the local roles find each other: one environment built by the supervisor."""

from __future__ import annotations

from collections.abc import Mapping

from punctual_functions.core.rights import DeliveryRights, RightsError
from punctual_functions.core.settings import Settings

DEFAULT_TOKEN = "local-dev-token"
DEFAULT_OWNER = "local"
LOCAL_CREDENTIALS = {
    # moto accepts any credentials; fixed ones keep a developer's real AWS credentials out of it.
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def parse_tokens(raw: str | None) -> dict[str, str]:
    """``PUNCTUAL_TOKENS="token1=alice,token2=bob"`` → {token: owner}; unset → the dev token."""
    if not raw:
        return {DEFAULT_TOKEN: DEFAULT_OWNER}
    tokens: dict[str, str] = {}
    for pair in raw.split(","):
        token, sep, owner = pair.strip().partition("=")
        if not sep or not token or not owner:
            raise ValueError(f"PUNCTUAL_TOKENS entry {pair!r} is not token=owner")
        tokens[token] = owner
    return tokens


def parse_rights(raw: str | None) -> DeliveryRights:
    """``PUNCTUAL_DELIVERY_RIGHTS``: the local stack's delivery rights as JSON (docs/security.md),
    ``[{"owners": ["alice"], "targets": ["arn:aws:sqs:*:*:alice-*"]}]``; unset: every owner may
    deliver to every target (one developer's tokens)."""
    if not raw:
        return DeliveryRights.for_every_owner()
    try:
        return DeliveryRights.from_json(raw, "PUNCTUAL_DELIVERY_RIGHTS")
    except RightsError as error:
        raise ValueError(str(error)) from error


def local_settings(
    endpoint: str, *, prefix: str = "punctual", overrides: Mapping[str, object] | None = None
) -> Settings:
    """Settings for the local stack; queue URLs follow moto's URL scheme."""
    account = "123456789012"
    values: dict[str, object] = {
        "table_name": prefix,
        "queue_url": f"{endpoint}/{account}/{prefix}-work",
        "dlq_url": f"{endpoint}/{account}/{prefix}-dlq",
        "aws_endpoint_url": endpoint,
        "region": "us-east-1",
        "account_id": account,
        "shard_count": 4,
        "http_allow_loopback": True,
        "allowed_target_arns": ("*",),
    }
    values.update(overrides or {})
    return Settings.from_values(values)

"""Whether an owner may deliver to a target: the target's names (as given, and the ARN it resolves
to), checked against the deployment's delivery rights (``core/rights.py``). The API checks a job's
target when it is created or changed, the worker before each call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from punctual_functions.core.rights import RightsReader
from punctual_functions.core.settings import Settings
from punctual_functions.core.targets.validation import target_region


def target_identifiers(target: dict[str, Any], settings: Settings) -> list[str]:
    """The names under which an AWS target may be allowed: as given, and as the ARN it resolves to.

    A bare name (a function name, the bus ``default``) means a resource of the deployment's own
    account, partition and region, which is how Lambda and EventBridge resolve it when delivering.
    """
    kind = target["type"]
    partition, region, account = settings.partition, settings.region, settings.account_id
    if kind == "lambda":
        name = str(target["function"])
        if name.startswith("arn:") or not account:
            return [name]
        return [name, f"arn:{partition}:lambda:{region}:{account}:function:{name}"]
    if kind == "sqs":
        url = str(target["queue_url"])
        parts = urlsplit(url)
        path = parts.path.strip("/").split("/")
        # The region the worker delivers in (a legacy, FIPS or VPC-endpoint host names it too).
        host_region = target_region(target) or region
        if len(path) == 2:
            return [url, f"arn:{partition}:sqs:{host_region}:{path[0]}:{path[1]}"]
        return [url]
    if kind == "sns":
        return [str(target["topic_arn"])]
    bus = str(target.get("bus", "default"))
    if bus.startswith("arn:") or not account:
        return [bus]
    return [bus, f"arn:{partition}:events:{region}:{account}:event-bus/{bus}"]


def delivery_refusal(
    rights: RightsReader, owner: str, target: Mapping[str, Any], settings: Settings
) -> str | None:
    """Why ``owner`` may not deliver to ``target`` (a validated target), naming the target and the
    rule; None when it may. The allow-list (the outer fence) is checked apart."""
    if settings.delivery_rights_mode == "deployment":
        return None
    if target["type"] == "http":
        url = str(target["url"])
        if rights.allows_host(owner, url):
            return None
        host = urlsplit(url).hostname or url
        return (
            f"owner {owner} has no delivery right to the host {host}: this deployment gives webhook"
            f" hosts per owner{_rights_held(rights, owner)}"
        )
    identifiers = target_identifiers(dict(target), settings)
    if rights.allows_resource(owner, identifiers):
        return None
    return f"owner {owner} has no delivery right to {identifiers[-1]}{_rights_held(rights, owner)}"


def _rights_held(rights: RightsReader, owner: str) -> str:
    held = rights.current().of_owner(owner)
    if not held:
        return " (the deployment gives it none)"
    return " (its rights: " + "; ".join(", ".join((*r.targets, *r.hosts)) for r in held) + ")"

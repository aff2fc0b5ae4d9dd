"""Delivery rights: which owners may deliver to which AWS resources and webhook hosts.

The allow-list (``allow_list.py``) is the deployment's outer fence, what the worker's role may reach
at all; inside it a job delivers only where its owner has a right (docs/architecture.md, "Delivery
rights"). The deploying team writes the rights (the CDK stack, the local stack's provisioning) into
one item of the table; the API checks a job's target against them when it is created or changed, the
worker again before each call, so that a right withdrawn after the create stops the deliveries.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from punctual_functions.core.allow_list import RefreshedItem
from punctual_functions.core.clock import Monotonic

EVERY_OWNER: Final = "*"


class RightsError(ValueError):
    """Delivery rights that cannot be read: the field and the reason."""

    def __init__(self, reason: str, field: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.reason = reason
        self.field = field


@dataclass(frozen=True)
class DeliveryRight:
    """``owners`` (exact, ``*`` for every owner, or a pattern with ``*``) may deliver to the AWS
    resources matching ``targets`` (ARN patterns, as the allow-list's) and the webhook hosts matching
    ``hosts`` (host name patterns, ``*.example.com``)."""

    owners: tuple[str, ...]
    targets: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()

    def covers(self, owner: str) -> bool:
        return any(fnmatch.fnmatchcase(owner, pattern) for pattern in self.owners)

    def describe(self) -> str:
        owners = "every owner" if self.owners == (EVERY_OWNER,) else ", ".join(self.owners)
        return f"{owners}: {', '.join((*self.targets, *self.hosts)) or 'nothing'}"


@dataclass(frozen=True)
class DeliveryRights:
    """The deployment's rights. ``hosts_per_owner``: webhooks need a right naming their host too
    (otherwise any host the SSRF guard lets through)."""

    rights: tuple[DeliveryRight, ...] = ()
    hosts_per_owner: bool = False

    @classmethod
    def for_every_owner(cls, targets: Sequence[str] = ("*",)) -> DeliveryRights:
        """Every owner may deliver to ``targets`` (a deployment that trusts all its callers alike:
        the local stack's default)."""
        return cls(rights=(DeliveryRight(owners=(EVERY_OWNER,), targets=tuple(targets)),))

    def allows_resource(self, owner: str, identifiers: Iterable[str]) -> bool:
        """Whether ``owner`` may deliver to the AWS resource known by ``identifiers`` (its name as
        given and the ARN it resolves to)."""
        names = tuple(identifiers)
        return any(right.covers(owner) and _matches(names, right.targets) for right in self.rights)

    def allows_host(self, owner: str, url: str) -> bool:
        """Whether ``owner`` may deliver to the webhook ``url``."""
        if not self.hosts_per_owner:
            return True
        host = (urlsplit(url).hostname or "").lower()
        return any(right.covers(owner) and _matches((host,), right.hosts) for right in self.rights)

    def of_owner(self, owner: str) -> list[DeliveryRight]:
        return [right for right in self.rights if right.covers(owner)]

    def to_json(self) -> str:
        return json.dumps(
            {
                "rights": [
                    {"owners": list(r.owners), "targets": list(r.targets), "hosts": list(r.hosts)}
                    for r in self.rights
                ],
                "hosts_per_owner": self.hosts_per_owner,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str, field: str = "delivery_rights") -> DeliveryRights:
        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as error:
            raise RightsError(f"not JSON: {error.msg}", field) from error
        return cls.from_value(value, field)

    @classmethod
    def from_value(cls, value: Any, field: str = "delivery_rights") -> DeliveryRights:
        """From ``{"rights": [...], "hosts_per_owner": false}`` or the list of rights alone."""
        if isinstance(value, list):
            value = {"rights": value}
        if not isinstance(value, Mapping):
            raise RightsError("must be an object with `rights` or a list of rights", field)
        unknown = set(value) - {"rights", "hosts_per_owner"}
        if unknown:
            raise RightsError(f"unknown field {sorted(unknown)[0]!r}", field)
        hosts_per_owner = value.get("hosts_per_owner", False)
        if not isinstance(hosts_per_owner, bool):
            raise RightsError("must be true or false", f"{field}.hosts_per_owner")
        raw = value.get("rights", [])
        if not isinstance(raw, list):
            raise RightsError("must be a list", f"{field}.rights")
        rights = tuple(_right(item, f"{field}.rights[{index}]") for index, item in enumerate(raw))
        return cls(rights=rights, hosts_per_owner=hosts_per_owner)


def _right(value: Any, field: str) -> DeliveryRight:
    if not isinstance(value, Mapping):
        raise RightsError("must be an object with owners, targets and hosts", field)
    unknown = set(value) - {"owners", "targets", "hosts"}
    if unknown:
        raise RightsError(f"unknown field {sorted(unknown)[0]!r}", field)
    owners = _strings(value.get("owners"), f"{field}.owners")
    if not owners:
        raise RightsError("name at least one owner (`*`: every owner)", f"{field}.owners")
    targets = _strings(value.get("targets", []), f"{field}.targets")
    hosts = tuple(host.lower() for host in _strings(value.get("hosts", []), f"{field}.hosts"))
    for host in hosts:
        if "/" in host or ":" in host:
            raise RightsError(
                f"{host!r} is not a host name pattern (no scheme, port or path)", f"{field}.hosts"
            )
    if not targets and not hosts:
        raise RightsError("name at least one target or host", field)
    return DeliveryRight(owners=owners, targets=targets, hosts=hosts)


def _strings(value: Any, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise RightsError("must be a list of non-empty strings", field)
    return tuple(item.strip() for item in value)


def _matches(names: Sequence[str], patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


class RightsReader:
    """The deployment's rights as last read from its item (``load``), refreshed as the allow-list is:
    at the first check, once ``max_age_seconds`` old, and at once (at most every
    ``refresh_on_miss_seconds``) before refusing, so a right given by the deploy that just ran is
    never refused for an old copy, and one withdrawn stops within ``max_age_seconds``."""

    def __init__(self, load: Callable[[], DeliveryRights], clock: Monotonic, **timing: float) -> None:
        self._item: RefreshedItem[DeliveryRights] = RefreshedItem(load, clock, **timing)

    def allows_resource(self, owner: str, identifiers: Iterable[str]) -> bool:
        names = tuple(identifiers)
        return self._item.check(lambda rights: rights.allows_resource(owner, names))

    def allows_host(self, owner: str, url: str) -> bool:
        return self._item.check(lambda rights: rights.allows_host(owner, url))

    def current(self) -> DeliveryRights:
        return self._item.current()

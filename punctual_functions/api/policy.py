"""What a job may deliver to: its target, its alerts' target and its dead-letter queue, checked by the
domain's ``validate_target`` (shape, the SSRF guard) and, for AWS resources, against the deployment's
allow-list (``Settings.allowed_target_arns`` and the deployment's item: ``core/allow_list.py``); refused
naming the field."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from punctual_functions.api.errors import InvalidInput
from punctual_functions.core.allow_list import AllowedTargets
from punctual_functions.core.model import AlertKind, Alerts
from punctual_functions.core.settings import Settings
from punctual_functions.core.targets.validation import TargetError, target_region, validate_target
from punctual_functions.core.templating import TemplateError, check_templates

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import AlertsIn
    from punctual_functions.api.targets import SqsTargetIn

# The field of each AWS target type that names its resource.
_RESOURCE_FIELD = {"lambda": "function", "sqs": "queue_url", "sns": "topic_arn", "eventbridge": "bus"}


def checked_target(deps: Deps, spec: dict[str, Any]) -> dict[str, Any]:
    """The target as stored (its defaults filled in), or the refusal naming its field."""
    try:
        target = validate_target(spec, deps.policy)
    except TargetError as error:
        raise InvalidInput(error.reason, error.field) from error
    if target["type"] != "http" and not target_allowed(target, deps.settings, deps.allowed_targets):
        raise InvalidInput(
            "this deployment does not allow jobs to target this resource",
            f"target.{_RESOURCE_FIELD[target['type']]}",
        )
    return target


def checked_alerts(deps: Deps, request: AlertsIn | None) -> Alerts | None:
    """The job's alerts, validated: an SNS topic of the allow-list or a webhook the SSRF guard
    lets through, and at least one kind."""
    if request is None:
        return None
    if request.target.spec().get("type") not in ("http", "sns"):
        raise InvalidInput("alerts go to an SNS topic or a webhook (type sns or http)", "alerts.target.type")
    try:
        target = checked_target(deps, request.target.spec())
    except InvalidInput as error:
        raise InvalidInput(error.reason, f"alerts.{error.field}") from error
    alerts = Alerts(
        target=target,
        failed=request.failed,
        missed=request.missed,
        late_seconds=request.late_seconds,
        running_seconds=request.running_seconds,
        limited_seconds=request.limited_seconds,
    )
    if not any(alerts.wants(kind) for kind in AlertKind):
        raise InvalidInput(
            "name at least one alert: failed, missed, late_seconds, running_seconds or limited_seconds",
            "alerts",
        )
    return alerts


def checked_dead_letter(deps: Deps, request: SqsTargetIn | None) -> dict[str, Any] | None:
    """The job's dead-letter queue, validated like a target (the deployment's allow-list)."""
    if request is None:
        return None
    try:
        return checked_target(deps, request.spec())
    except InvalidInput as error:
        field = (error.field or "target").removeprefix("target")
        raise InvalidInput(error.reason, f"dead_letter{field}") from error


def checked_templates(target: dict[str, Any], payload: Any) -> None:
    """The ``{{...}}`` names of the target and the payload: the four the worker fills in, no others."""
    try:
        check_templates(target, payload)
    except TemplateError as error:
        raise InvalidInput(error.reason, error.field) from error


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


def target_allowed(target: dict[str, Any], settings: Settings, allowed: AllowedTargets | None = None) -> bool:
    """Whether the deployment lets jobs target this AWS resource: ``allowed``, or without it the
    settings' ``allowed_target_arns`` alone."""
    identifiers = target_identifiers(target, settings)
    if allowed is None:
        return any(
            fnmatch.fnmatchcase(identifier, pattern)
            for pattern in settings.allowed_target_arns
            for identifier in identifiers
        )
    return allowed.allows(identifiers)

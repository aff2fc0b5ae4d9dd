"""What a job may deliver to: its target, its alerts' target and its dead-letter queue, checked by the
domain's ``validate_target`` (shape, the SSRF guard) and, for AWS resources, against the deployment's
allow-list (``Settings.allowed_target_arns`` and the deployment's item: ``core/allow_list.py``); refused
naming the field."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from punctual_functions.api.errors import Forbidden, InvalidInput
from punctual_functions.core.allow_list import AllowedTargets
from punctual_functions.core.model import AlertKind, Alerts
from punctual_functions.core.settings import Settings
from punctual_functions.core.targets.rights import delivery_refusal, target_identifiers
from punctual_functions.core.targets.validation import TargetError, validate_target
from punctual_functions.core.templating import TemplateError, check_templates

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import AlertsIn
    from punctual_functions.api.targets import SqsTargetIn

# The field of each AWS target type that names its resource.
_RESOURCE_FIELD = {"lambda": "function", "sqs": "queue_url", "sns": "topic_arn", "eventbridge": "bus"}


def checked_target(deps: Deps, spec: dict[str, Any], owner: str) -> dict[str, Any]:
    """The target as stored (its defaults filled in), or the refusal naming its field: the shape
    and the SSRF guard, the deployment's allow-list (422), ``owner``'s delivery rights (403)."""
    try:
        target = validate_target(spec, deps.policy)
    except TargetError as error:
        raise InvalidInput(error.reason, error.field) from error
    field = "target.url" if target["type"] == "http" else f"target.{_RESOURCE_FIELD[target['type']]}"
    if target["type"] != "http" and not target_allowed(target, deps.settings, deps.allowed_targets):
        raise InvalidInput("this deployment does not allow jobs to target this resource", field)
    refusal = delivery_refusal(deps.rights, owner, target, deps.settings)
    if refusal is not None:
        raise Forbidden(refusal, field)
    return target


def checked_alerts(deps: Deps, request: AlertsIn | None, owner: str) -> Alerts | None:
    """The job's alerts, validated: an SNS topic of the allow-list or a webhook the SSRF guard
    lets through, and at least one kind."""
    if request is None:
        return None
    if request.target.spec().get("type") not in ("http", "sns"):
        raise InvalidInput("alerts go to an SNS topic or a webhook (type sns or http)", "alerts.target.type")
    try:
        target = checked_target(deps, request.target.spec(), owner)
    except (InvalidInput, Forbidden) as error:
        raise type(error)(error.reason, f"alerts.{error.field}") from error
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


def checked_dead_letter(deps: Deps, request: SqsTargetIn | None, owner: str) -> dict[str, Any] | None:
    """The job's dead-letter queue, validated like a target (the allow-list, the owner's rights)."""
    if request is None:
        return None
    try:
        return checked_target(deps, request.spec(), owner)
    except (InvalidInput, Forbidden) as error:
        field = (error.field or "target").removeprefix("target")
        raise type(error)(error.reason, f"dead_letter{field}") from error


def checked_templates(target: dict[str, Any], payload: Any) -> None:
    """The ``{{...}}`` names of the target and the payload: the four the worker fills in, no others."""
    try:
        check_templates(target, payload)
    except TemplateError as error:
        raise InvalidInput(error.reason, error.field) from error


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

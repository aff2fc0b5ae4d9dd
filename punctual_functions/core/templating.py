"""Delivery templates: ``{{scheduled_for}}``, ``{{run_id}}``, ``{{attempt}}`` and ``{{job_id}}`` in a
job's payload, its HTTP target's headers and its URL, filled in for each attempt (as EventBridge
Scheduler's context attributes are).

Four names and nothing else: no expressions, no filters, no other variables. A ``{{...}}`` naming
anything else is refused when the job is created or changed, so a typo never reaches a target as text.
Values are filled in as text: in the payload, inside the JSON strings that hold them (``"{{attempt}}"``
becomes ``"2"``, a string); in a URL, percent-encoded; in a header, as they are. A URL may carry them in
its path, query and fragment, never in its scheme, host or port, so the address the SSRF guard checked
when the job was created is the address every delivery goes to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from punctual_functions.core.targets.outcome import Delivery, format_timestamp

NAMES: Final = ("scheduled_for", "run_id", "attempt", "job_id")
_PLACEHOLDER: Final = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_AUTHORITY_END: Final = re.compile(r"[/?#]")


class TemplateError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def check_templates(target: Mapping[str, Any], payload: Any) -> None:
    """Refuse a ``{{...}}`` that is not one of the four names, or one in a URL's scheme, host or port;
    raises ``TemplateError`` naming the field (``payload``, ``target.url``, ``target.headers.<name>``)."""
    for path, text in _strings(payload, "payload"):
        _check(text, "payload", f" (at {path})" if path != "payload" else "")
    if target.get("type") != "http":
        return
    url = str(target.get("url", ""))
    _check(url, "target.url", "")
    scheme_end = url.find("://")
    rest = url[scheme_end + 3 :] if scheme_end >= 0 else url
    end = _AUTHORITY_END.search(rest)
    head = url[: (scheme_end + 3 if scheme_end >= 0 else 0) + (end.start() if end else len(rest))]
    if "{{" in head:
        raise TemplateError(
            "target.url",
            "templates may fill the path, query or fragment of a URL, not its scheme, host or port",
        )
    for name, value in (target.get("headers") or {}).items():
        _check(str(value), f"target.headers.{name}", "")


def has_templates(target: Mapping[str, Any], payload: Any) -> bool:
    texts = [text for _, text in _strings(payload, "payload")]
    if target.get("type") == "http":
        texts += [str(target.get("url", "")), *map(str, (target.get("headers") or {}).values())]
    return any("{{" in text for text in texts)


def values_of(delivery: Delivery) -> dict[str, str]:
    return {
        "scheduled_for": format_timestamp(delivery.scheduled_for),
        "run_id": delivery.run_id,
        "attempt": str(delivery.attempt),
        "job_id": delivery.job_id,
    }


def render(target: Mapping[str, Any], payload: Any, values: Mapping[str, str]) -> tuple[dict[str, Any], Any]:
    """The target and payload of one attempt, their templates filled in."""
    rendered = dict(target)
    if rendered.get("type") == "http":
        rendered["url"] = _fill(
            str(rendered["url"]), {name: quote(value, safe="") for name, value in values.items()}
        )
        if rendered.get("headers"):
            rendered["headers"] = {
                name: _fill(str(value), values) for name, value in rendered["headers"].items()
            }
    return rendered, _render_payload(payload, values)


def _render_payload(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _fill(value, values)
    if isinstance(value, list):
        return [_render_payload(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _render_payload(item, values) for key, item in value.items()}
    return value


def _fill(text: str, values: Mapping[str, str]) -> str:
    if "{{" not in text:
        return text
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1).strip(), match.group(0)), text)


def _check(text: str, field: str, where: str) -> None:
    for match in _PLACEHOLDER.finditer(text):
        name = match.group(1).strip()
        if name not in NAMES:
            shown = match.group(0) if len(match.group(0)) <= 40 else match.group(0)[:37] + "..."
            raise TemplateError(
                field,
                f"{shown}{where} is not a template value; use {{{{scheduled_for}}}}, {{{{run_id}}}}, "
                "{{attempt}} or {{job_id}} (no expressions)",
            )


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    """Every string value in a JSON value, with where it is (``payload.items[0].note``)."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _strings(item, f"{path}[{index}]")]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _strings(item, f"{path}.{key}")]
    return []

"""How the API refuses: the errors its code raises, and the one place each becomes an HTTP answer.

The service and the guards raise these by meaning (not found, conflict, invalid input...); the HTTP
status of each is decided here only (``HTTP_STATUS``), as is turning pydantic's validation errors into
the body every refusal has: ``{"error", "reason", "field"}`` naming the field that was refused.
"""

from __future__ import annotations

from typing import Any

from punctual_functions.core.targets.validation import TARGET_TYPES

# The tags of the target union: pydantic puts them in an error's location (target.http.url); fields
# leave them out.
TARGET_TAGS = frozenset(TARGET_TYPES)


class ApiError(Exception):
    code = "bad_request"

    def __init__(self, reason: str, field: str | None = None, **extra: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.extra = extra

    @property
    def status_code(self) -> int:
        return status_of(self)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "reason": self.reason}
        if self.field is not None:
            body["field"] = self.field
        return {**body, **self.extra}


class BadRequest(ApiError):
    code = "bad_request"


class Unauthorized(ApiError):
    code = "unauthorized"


class Forbidden(ApiError):
    """The caller may not do this (its owner has no right to it); nothing was written."""

    code = "forbidden"


class NotFound(ApiError):
    code = "not_found"


class Conflict(ApiError):
    code = "conflict"


class PayloadTooLarge(ApiError):
    code = "payload_too_large"


class UnsupportedMediaType(ApiError):
    code = "unsupported_media_type"


class InvalidInput(ApiError):
    code = "invalid_input"


class InternalError(ApiError):
    code = "internal_error"


class Throttled(ApiError):
    """The table refused the request's reads or writes past the SDK's retries (more than a partition
    or the table takes at once: docs/scale.md); nothing of it is lost, retry after a second."""

    code = "throttled"


HTTP_STATUS: dict[type[ApiError], int] = {
    BadRequest: 400,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    InvalidInput: 422,
    Throttled: 429,
    InternalError: 500,
}


def status_of(error: ApiError) -> int:
    for kind in type(error).__mro__:
        if kind in HTTP_STATUS:
            return HTTP_STATUS[kind]
    return 400


def from_validation(problems: list[dict[str, Any]]) -> ApiError:
    """Pydantic's validation errors of a body as one refusal naming the first field, with all
    of them under ``problems``."""
    named = []
    for problem in problems:
        if problem.get("type") == "json_invalid":
            return BadRequest("the body is not valid JSON", "body")
        location = [str(part) for part in problem.get("loc", ())]
        if location[:1] == ["target"]:
            location = target_location(location, problem)
        elif location[:2] == ["alerts", "target"]:
            location = ["alerts", *target_location(location[1:], problem)]
        named.append({"field": ".".join(location) or "body", "reason": problem.get("msg", "invalid")})
    first = named[0] if named else {"field": "body", "reason": "invalid request"}
    return InvalidInput(first["reason"], first["field"], problems=named)


def target_location(location: list[str], problem: dict[str, Any]) -> list[str]:
    """``target.url`` for a field of the target: pydantic puts the discriminator's tag in the location
    (``target.http.url``), and an error about the target's type names it in its context."""
    if len(location) > 1 and location[1] in TARGET_TAGS:
        location = [location[0], *location[2:]]
    context = problem.get("ctx")
    if isinstance(context, dict) and isinstance(context.get("field"), str):
        location = [*location, context["field"]]
    return location

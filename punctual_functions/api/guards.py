"""Checks of a request's body made before routing: size, media type, strict JSON, one object."""

from __future__ import annotations

import base64
import json
from typing import Any

from punctual_functions.api.errors import BadRequest, InvalidInput, PayloadTooLarge, UnsupportedMediaType

MAX_BODY_BYTES = 64 * 1024
# POST /v1/jobs/batch: up to 100 jobs; each job is held to MAX_BODY_BYTES on its own.
MAX_BATCH_BODY_BYTES = 1024 * 1024
BATCH_PATH = "/v1/jobs/batch"


def check_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """Size, media type and strict JSON; raises the refusal, or returns the body's object (None
    without a body).

    JSON bodies must be one object of standard JSON (no NaN/Infinity, no unpaired surrogates) in
    UTF-8. curl's default form content type is accepted, since curl -d users send JSON that way.
    """
    raw = event.get("body")
    if not raw:
        return None
    data = (
        base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode("utf-8", "surrogatepass")
    )
    # REST (1.0) events name the resource path; HTTP API (2.0) ones the raw path, which starts with
    # the stage unless it is $default.
    batch = str(event.get("path") or event.get("rawPath") or "").endswith(BATCH_PATH)
    if len(data) > (MAX_BATCH_BODY_BYTES if batch else MAX_BODY_BYTES):
        raise PayloadTooLarge("the body exceeds 1 MiB" if batch else "the body exceeds 64 KiB", "body")
    headers = {key.lower(): value for key, value in (event.get("headers") or {}).items()}
    media_type = headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if media_type not in ("application/json", "application/x-www-form-urlencoded", ""):
        raise UnsupportedMediaType("send the body as application/json", "Content-Type")
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_refuse_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeError, ValueError) as error:
        raise BadRequest(f"the body is not valid JSON: {error}", "body") from error
    if not isinstance(value, dict):
        raise InvalidInput("the body must be a JSON object", "body")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")

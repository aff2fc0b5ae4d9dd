"""Pagination: opaque cursors, and reading a filtered listing a page at a time."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from punctual_functions.core.ports import BadCursorError, PageFull
from punctual_functions.core.store.keys import key_of

T = TypeVar("T")


def encode_cursor(key: Mapping[str, Any] | None) -> str | None:
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str | None) -> dict[str, Any] | None:
    if not cursor:
        return None
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError) as error:
        raise BadCursorError("not a cursor this API returned") from error
    if not isinstance(decoded, dict) or not all(
        isinstance(value, dict) and set(value) == {"S"} and isinstance(value["S"], str)
        for value in decoded.values()
    ):
        raise BadCursorError("not a cursor this API returned")
    return decoded


def read_page(
    query: Callable[..., Any],
    request: dict[str, Any],
    limit: int,
    cursor: str | None,
    convert: Callable[[Mapping[str, Any]], T],
    belongs: Callable[[dict[str, Any]], bool],
    keep: Callable[[T], bool] | None = None,
) -> tuple[list[T], str | None]:
    """Read until ``limit`` matching items (a filter, or ``keep``, may drop items from a page) or the end,
    or until ``keep`` raises ``PageFull`` (the page's answer would be too large).

    ``belongs`` checks that a cursor points into this very listing: DynamoDB refuses a start key
    from elsewhere, and a forged one must not read another owner's items.
    """
    start = decode_cursor(cursor)
    if start is not None and not belongs(start):
        raise BadCursorError("not a cursor of this listing")
    found: list[T] = []
    last_key: dict[str, Any] = {}
    while True:
        if start:
            request["ExclusiveStartKey"] = start
        filtered = "FilterExpression" in request or keep is not None
        request["Limit"] = max(limit, 25) if filtered else limit - len(found)
        response = query(**request)
        for item in response.get("Items", []):
            converted = convert(item)
            try:
                if keep is not None and not keep(converted):
                    continue
            except PageFull:
                if found:
                    return found, encode_cursor(last_key)
            found.append(converted)
            last_key = key_of(item, request.get("IndexName"))
            if len(found) == limit:
                return found, encode_cursor(last_key)
        start = response.get("LastEvaluatedKey")
        if not start:
            return found, None

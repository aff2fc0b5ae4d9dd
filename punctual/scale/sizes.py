"""DynamoDB's item size, by its documented rules (attribute names and values, in bytes): what a
write's units and a read's units are counted from. The simulator and the benchmarks' request
recorder (``bench/timed_role.py``) both size items with it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def value_size(value: Mapping[str, Any]) -> int:
    """Approximately how DynamoDB sizes an attribute value (its documented item-size rules)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        digits = len(str(inner).lstrip("-").replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if kind == "B":
        return len(inner) if isinstance(inner, bytes | bytearray) else math.ceil(len(str(inner)) * 3 / 4)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in inner)
    return 0


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())

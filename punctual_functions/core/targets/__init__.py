"""How a run is delivered to its target, one module per job:

- :mod:`.validation`: what a target spec may say (``validate_target``), no network, no AWS;
- :mod:`.outcome`: ``Delivery``, ``TargetOutcome``, the delivery headers and the outcome helpers;
- :mod:`.http`: the HTTP exchange (urllib3), abortable at any point;
- :mod:`.aws`: Lambda, SQS, SNS and EventBridge deliveries and botocore error classification;
- :mod:`.executor`: ``TargetExecutor``, which dispatches by target type within the time budget.

Target kinds: ``http`` (webhook), ``lambda`` (synchronous invoke), ``sqs``, ``sns`` and ``eventbridge``.
Every delivery carries the same identifying headers (see ``delivery_headers``): for HTTP as request
headers, for SQS and SNS as message attributes, for Lambda and EventBridge as fields of the event.

The names below load their module on first use, so importing one module of the package (the API imports
only :mod:`.validation`) does not import urllib3, botocore and the delivery code with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from punctual_functions.core.ssrf_guard import NetworkPolicy, TargetError
    from punctual_functions.core.targets.executor import TargetExecutor
    from punctual_functions.core.targets.outcome import (
        EXCERPT_BYTES,
        Delivery,
        TargetOutcome,
        delivery_headers,
        format_timestamp,
    )
    from punctual_functions.core.targets.validation import HTTP_METHODS, TARGET_TYPES, validate_target

__all__ = [
    "EXCERPT_BYTES",
    "HTTP_METHODS",
    "TARGET_TYPES",
    "Delivery",
    "NetworkPolicy",
    "TargetError",
    "TargetExecutor",
    "TargetOutcome",
    "delivery_headers",
    "format_timestamp",
    "validate_target",
]

_MODULES = {
    "EXCERPT_BYTES": "outcome",
    "HTTP_METHODS": "validation",
    "TARGET_TYPES": "validation",
    "Delivery": "outcome",
    "NetworkPolicy": "validation",
    "TargetError": "validation",
    "TargetExecutor": "executor",
    "TargetOutcome": "outcome",
    "delivery_headers": "outcome",
    "format_timestamp": "outcome",
    "validate_target": "validation",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

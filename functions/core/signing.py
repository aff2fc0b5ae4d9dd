"""Delivery signatures, so a receiver can tell a genuine Punctual delivery from a forged or replayed one.

When a job has a signing secret, every delivery carries (the scheme follows Stripe's webhooks, so
existing verification code and habits carry over)::

    Punctual-Signature: t=1795348805,v1=5f1c...e9a0

* ``t`` is the Unix time (seconds) at which the delivery was signed. It is part of the MAC, so an attacker
  who captured a delivery cannot replay it once the receiver's tolerance (default 5 minutes) has passed.
* ``v1`` is the lowercase hex HMAC-SHA256, keyed with the UTF-8 secret, over the bytes
  ``f"{t}.".encode() + body``, where ``body`` is exactly the bytes sent (HTTP request body, SQS / SNS
  message). A receiver must verify the raw bytes it received, before parsing the JSON: re-serialising it
  would not reproduce the same bytes.

Each attempt is signed afresh (new ``t``), so a retry is not mistaken for a replay. A header may carry
several ``v1`` entries (for example while a secret is rotated); it verifies if any of them matches.
Unknown schemes are ignored so that new ones can be added without breaking receivers.

Receivers in Python can use :func:`verify_signature`; in other languages, the recipe is: split the header
on ``,``, split each item on the first ``=``, recompute the HMAC for ``t`` and compare in constant time
with every ``v1``, then check ``|now - t| <= tolerance``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime
from typing import Final

SIGNATURE_HEADER: Final = "Punctual-Signature"
SCHEME: Final = "v1"
DEFAULT_TOLERANCE_SECONDS: Final = 300

_MAX_HEADER_LENGTH: Final = 4096
_TIMESTAMP: Final = re.compile(r"[0-9]{1,12}")
_HEX_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def _unix_seconds(now: datetime | float) -> float:
    if isinstance(now, datetime):
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        return now.timestamp()
    return float(now)


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``v1`` value: hex HMAC-SHA256 over ``f"{timestamp}.".encode() + body``."""
    if not secret:
        raise ValueError("secret must not be empty")
    signed = f"{timestamp}.".encode("ascii") + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, now: datetime | float) -> str:
    """The ``Punctual-Signature`` header value for ``body`` signed at ``now``."""
    timestamp = int(_unix_seconds(now))
    return f"t={timestamp},{SCHEME}={compute_signature(secret, timestamp, body)}"


def parse_signature_header(header: str) -> tuple[int, tuple[str, ...]] | None:
    """``(t, v1 signatures)`` from a header value, or None when it is malformed."""
    if not isinstance(header, str) or len(header) > _MAX_HEADER_LENGTH:
        return None
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            return None
        if key == "t":
            if timestamp is not None or not _TIMESTAMP.fullmatch(value):
                return None
            timestamp = int(value)
        elif key == SCHEME:
            signatures.append(value.lower())
    if timestamp is None or not signatures:
        return None
    return timestamp, tuple(signatures)


def verify_signature(
    secret: str,
    header: str,
    body: bytes,
    now: datetime | float,
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """True if ``header`` validly signs ``body`` with ``secret`` within ``tolerance_seconds`` of ``now``.

    ``now`` is an aware datetime or Unix seconds. Never raises for bad input: anything malformed is simply
    not a valid signature. The tolerance applies both ways, so a sender's clock running ahead is accepted
    as long as it is within the same window.
    """
    if not secret:
        return False
    parsed = parse_signature_header(header)
    if parsed is None:
        return False
    timestamp, signatures = parsed
    if abs(_unix_seconds(now) - timestamp) > tolerance_seconds:
        return False
    expected = compute_signature(secret, timestamp, body)
    # Every candidate is compared (no early exit) so timing reveals nothing about which one matched.
    matched = False
    for candidate in signatures:
        if _HEX_DIGEST.fullmatch(candidate) and hmac.compare_digest(candidate, expected):
            matched = True
    return matched

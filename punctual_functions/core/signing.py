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

This module is the sender's side. Receivers verify with ``punctual/verify.py`` (standard library only,
copied into a receiver or installed with ``punctual``), or in other languages as ``docs/targets.md``
shows; ``tests/unit/test_verify.py`` holds the two sides to one scheme.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Final

SIGNATURE_HEADER: Final = "Punctual-Signature"
SCHEME: Final = "v1"


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

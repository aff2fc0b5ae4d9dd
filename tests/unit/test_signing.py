"""Stripe-style delivery signatures, the sender's side: ``Punctual-Signature: t=<unix>,v1=<hex hmac-sha256>``.
The receiver's side (``punctual.verify``) is held to the same scheme in ``test_verify.py``."""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import UTC, datetime

import pytest

from punctual_functions.core.signing import SIGNATURE_HEADER, compute_signature, sign

SECRET = "whsec_test_secret"
BODY = b'{"report":"sales"}'
NOW = datetime(2026, 11, 22, 12, 0, 5, 250_000, tzinfo=UTC)


def test_header_has_the_documented_format() -> None:
    # When a body is signed
    header = sign(SECRET, BODY, NOW)
    # Then the header is t=<whole unix seconds>,v1=<64 lowercase hex>
    assert SIGNATURE_HEADER == "Punctual-Signature"
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert header.startswith(f"t={int(NOW.timestamp())},")


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    # Given the recipe from the module docstring, computed independently
    timestamp = int(NOW.timestamp())
    expected = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + BODY, hashlib.sha256).hexdigest()
    # Then the library agrees with it
    assert compute_signature(SECRET, timestamp, BODY) == expected
    assert sign(SECRET, BODY, NOW) == f"t={timestamp},v1={expected}"


def test_empty_secret_cannot_sign() -> None:
    with pytest.raises(ValueError, match="secret"):
        sign("", BODY, NOW)


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        sign(SECRET, BODY, datetime(2026, 11, 22, 12, 0, 5))

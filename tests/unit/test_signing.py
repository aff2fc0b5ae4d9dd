"""Stripe-style delivery signatures: ``Punctual-Signature: t=<unix>,v1=<hex hmac-sha256>``."""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import UTC, datetime, timedelta

import pytest

from functions.core.signing import (
    SIGNATURE_HEADER,
    compute_signature,
    parse_signature_header,
    sign,
    verify_signature,
)

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


def test_round_trip_verifies() -> None:
    header = sign(SECRET, BODY, NOW)
    assert verify_signature(SECRET, header, BODY, NOW)
    assert verify_signature(SECRET, header, BODY, NOW.timestamp() + 10)


def test_tampered_body_does_not_verify() -> None:
    header = sign(SECRET, BODY, NOW)
    assert not verify_signature(SECRET, header, b'{"report":"salez"}', NOW)
    assert not verify_signature(SECRET, header, BODY + b" ", NOW)


def test_wrong_secret_does_not_verify() -> None:
    header = sign(SECRET, BODY, NOW)
    assert not verify_signature("another-secret", header, BODY, NOW)
    assert not verify_signature("", header, BODY, NOW)


def test_stale_timestamp_is_rejected_outside_the_tolerance() -> None:
    # Given a delivery signed six minutes ago (a replay)
    header = sign(SECRET, BODY, NOW - timedelta(minutes=6))
    # Then the default 5-minute tolerance rejects it, and a wider one accepts it
    assert not verify_signature(SECRET, header, BODY, NOW)
    assert verify_signature(SECRET, header, BODY, NOW, tolerance_seconds=600)


def test_timestamp_far_in_the_future_is_rejected() -> None:
    header = sign(SECRET, BODY, NOW + timedelta(minutes=10))
    assert not verify_signature(SECRET, header, BODY, NOW)


def test_changing_the_timestamp_breaks_the_signature() -> None:
    # Given an attacker who refreshes t on a captured delivery to get past the tolerance
    timestamp, (signature,) = parse_signature_header(sign(SECRET, BODY, NOW - timedelta(hours=1))) or (0, ())
    forged = f"t={int(NOW.timestamp())},v1={signature}"
    # Then the MAC no longer matches
    assert timestamp < int(NOW.timestamp())
    assert not verify_signature(SECRET, forged, BODY, NOW)


def test_any_matching_v1_among_several_verifies_for_secret_rotation() -> None:
    timestamp = int(NOW.timestamp())
    header = f"t={timestamp},v1={'0' * 64},v1={compute_signature(SECRET, timestamp, BODY)},v0=legacy"
    assert verify_signature(SECRET, header, BODY, NOW)


@pytest.mark.parametrize(
    "header",
    [
        "",
        "garbage",
        "v1=abc",
        f"t={int(NOW.timestamp())}",
        f"t=notanumber,v1={'a' * 64}",
        f"t=+{int(NOW.timestamp())},v1={'a' * 64}",
        f"t={int(NOW.timestamp())},t={int(NOW.timestamp())},v1={'a' * 64}",
        f"t={int(NOW.timestamp())},v1=zz",
        f"t={int(NOW.timestamp())},v1={'é' * 64}",
        "t=1," + "v1=" + "a" * 5000,
    ],
)
def test_malformed_headers_never_verify_and_never_raise(header: str) -> None:
    assert not verify_signature(SECRET, header, BODY, NOW)


def test_empty_secret_cannot_sign() -> None:
    with pytest.raises(ValueError, match="secret"):
        sign("", BODY, NOW)


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        sign(SECRET, BODY, datetime(2026, 11, 22, 12, 0, 5))

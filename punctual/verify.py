"""Verify that a delivery came from Punctual: for receivers, with nothing but the standard library.

Copy this file into a receiver, or install ``punctual-aws`` (docs/client.md) and
``from punctual.verify import verify``.
A job with a ``signing_secret`` signs every delivery (the scheme follows Stripe's webhooks)::

    Punctual-Signature: t=1795348805,v1=5f1c...e9a0

``v1`` is the lowercase hex HMAC-SHA256, keyed with the UTF-8 secret, over ``f"{t}."`` followed by the
body exactly as received (the HTTP request body; an SQS or SNS message's body, whose message attribute
``Punctual-Signature`` carries the header). Verify the raw bytes before parsing them: re-serialised JSON
would not be the same bytes. ``t`` is the Unix time of the signature: a delivery more than
``tolerance`` seconds (default 300) from your clock is refused, so a captured delivery cannot be replayed
later. Each attempt is signed afresh; a header may carry several ``v1`` values (while a secret is
rotated) and schemes this module does not know, which are ignored.

    from punctual.verify import InvalidSignature, verify_request

    @app.post("/hook")                                 # Flask, as an example
    def hook():
        try:
            verify_request(SECRET, request.headers, request.get_data())
        except InvalidSignature as refused:
            return {"error": str(refused)}, 401
        ...

``verify`` answers True or False; ``check`` and ``verify_request`` raise ``InvalidSignature`` saying why
(for your logs, not for the caller). The same check in Node and Go: ``docs/targets.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Mapping

__all__ = ["DEFAULT_TOLERANCE", "HEADER", "InvalidSignature", "check", "sign", "verify", "verify_request"]

HEADER = "Punctual-Signature"
DEFAULT_TOLERANCE = 300

_MAX_HEADER = 4096
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class InvalidSignature(ValueError):
    """The delivery is not signed by the secret, is malformed, or is outside the tolerance."""


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """A ``Punctual-Signature`` value for ``body``, as Punctual sends it: for a receiver's own tests."""
    stamp = int(time.time()) if timestamp is None else timestamp
    return f"t={stamp},v1={_digest(secret, stamp, body)}"


def check(
    secret: str,
    header: str | None,
    body: bytes,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> int:
    """The signature's timestamp if ``header`` signs ``body`` with ``secret`` within ``tolerance``
    seconds of ``now`` (default: this machine's clock); else ``InvalidSignature`` saying why."""
    if not secret:
        raise InvalidSignature("no secret to verify with")
    if not header:
        raise InvalidSignature(f"no {HEADER} header")
    if not isinstance(body, bytes | bytearray):
        raise TypeError("body must be the raw bytes received, not parsed or decoded text")
    stamp, candidates = _parse(header)
    clock = time.time() if now is None else now
    if abs(clock - stamp) > tolerance:
        raise InvalidSignature(
            f"signed {clock - stamp:+.0f} s from now, outside the tolerance of {tolerance:.0f} s"
        )
    expected = _digest(secret, stamp, bytes(body))
    matched = False
    for candidate in candidates:  # every one compared, so timing tells nothing about which matched
        if _HEX_DIGEST.fullmatch(candidate) and hmac.compare_digest(candidate, expected):
            matched = True
    if not matched:
        raise InvalidSignature("no v1 signature matches the body and the secret")
    return stamp


def verify(
    secret: str,
    header: str | None,
    body: bytes,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> bool:
    """True if ``header`` validly signs ``body`` with ``secret`` within ``tolerance`` seconds of ``now``."""
    try:
        check(secret, header, body, tolerance=tolerance, now=now)
    except InvalidSignature:
        return False
    return True


def verify_request(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> int:
    """``check`` with the header found in ``headers`` by any capitalisation (a dict, or a framework's
    headers object), or in SQS / SNS message attributes given as ``{name: value}``."""
    header = headers.get(HEADER)
    if header is None:
        wanted = HEADER.lower()
        header = next((value for name, value in headers.items() if name.lower() == wanted), None)
    return check(secret, header, body, tolerance=tolerance, now=now)


def _digest(secret: str, stamp: int, body: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), f"{stamp}.".encode("ascii") + body, hashlib.sha256).hexdigest()


def _parse(header: str) -> tuple[int, list[str]]:
    if len(header) > _MAX_HEADER:
        raise InvalidSignature(f"the {HEADER} header is too long")
    stamp: int | None = None
    candidates: list[str] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")  # what is not t or v1 is a scheme we do not know
        if key == "t":
            if stamp is not None or not _TIMESTAMP.fullmatch(value):
                raise InvalidSignature(f"malformed {HEADER} header: one t=<unix seconds> is expected")
            stamp = int(value)
        elif key == "v1":
            candidates.append(value.lower())
    if stamp is None:
        raise InvalidSignature(f"malformed {HEADER} header: no t=<unix seconds>")
    if not candidates:
        raise InvalidSignature(f"no v1 signature in the {HEADER} header")
    return stamp, candidates

"""The console's static files, as answers: the local stack's API server and ``punctual console`` both
serve ``/console`` from here, with the same headers.

The page is plain files (``static/``): ES modules that import Preact, its hooks and htm through an
import map, and uPlot as a classic script, all vendored under ``static/vendor/`` (docs/console.md).
Nothing is loaded from anywhere else: the Content-Security-Policy allows scripts from this origin
only, plus the one inline import map by its hash.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CONSOLE_PREFIX", "ConsoleAnswer", "console_answer", "is_console_path"]

CONSOLE_PREFIX = "/console"
STATIC_DIR = Path(__file__).parent / "static"

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_IMPORT_MAP = re.compile(rb'<script type="importmap">(.*?)</script>', re.DOTALL)


@dataclass(frozen=True)
class ConsoleAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def is_console_path(path: str) -> bool:
    return path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")


@functools.cache
def _security_headers() -> dict[str, str]:
    index = (STATIC_DIR / "index.html").read_bytes()
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(match.group(1)).digest()).decode()}'"
        for match in _IMPORT_MAP.finditer(index)
    )
    policy = "; ".join(
        [
            "default-src 'self'",
            f"script-src 'self' {hashes}",
            "style-src 'self'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
    }


def console_answer(path: str, method: str = "GET") -> ConsoleAnswer:
    """The answer to ``method path`` for a path under ``/console`` (``is_console_path``)."""
    if method not in ("GET", "HEAD"):
        return _not_found(405)
    relative = path[len(CONSOLE_PREFIX) :].lstrip("/") or "index.html"
    if relative == "session":
        # The page asks whether a `punctual console` holds a session for it (server.py answers that
        # itself); served from here, there is none: the page asks for a bearer token. An empty answer,
        # not a 404, so the browser's log stays clean.
        return ConsoleAnswer(204, {"Cache-Control": "no-store"}, b"")
    # Only files that exist under static/, by name: no "..", no directories, no hidden files.
    parts = relative.split("/")
    if any(not part or part.startswith(".") for part in parts):
        return _not_found()
    file = STATIC_DIR.joinpath(*parts)
    content_type = _CONTENT_TYPES.get(file.suffix) or (
        "text/plain; charset=utf-8" if "LICENSE" in file.name else None
    )
    if content_type is None or not file.is_file():
        return _not_found()
    # The page and the app's own modules change with the code; the vendored libraries with a pinned version.
    cache = "public, max-age=86400" if parts[0] == "vendor" else "no-cache"
    headers = {"Content-Type": content_type, "Cache-Control": cache, **_security_headers()}
    return ConsoleAnswer(200, headers, file.read_bytes())


def _not_found(status: int = 404) -> ConsoleAnswer:
    error, reason = (
        ("not_found", "no such file in the console")
        if status == 404
        else ("method_not_allowed", "the console's files can only be read (GET)")
    )
    body = json.dumps({"error": error, "field": "path", "reason": reason}).encode()
    return ConsoleAnswer(status, {"Content-Type": "application/json", **_security_headers()}, body)

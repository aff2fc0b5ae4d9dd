"""The console's static files, as the local stack and ``punctual console`` serve them."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import urllib.error
import urllib.request

import pytest

from punctual.console.assets import STATIC_DIR, console_answer, is_console_path
from punctual.local.gateway import make_handler_class
from punctual.local.httpserver import LocalHTTPServer


def test_the_page_is_served_at_console_with_and_without_a_slash() -> None:
    for path in ("/console", "/console/"):
        answer = console_answer(path)
        assert answer.status == 200
        assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
        assert b'<script type="module" src="/console/app.js">' in answer.body


def test_scripts_come_from_this_origin_only_and_the_import_map_is_allowed_by_its_hash() -> None:
    policy = console_answer("/console").headers["Content-Security-Policy"]
    import_map = re.search(
        rb'<script type="importmap">(.*?)</script>', console_answer("/console").body, re.DOTALL
    )
    assert import_map
    digest = base64.b64encode(hashlib.sha256(import_map.group(1)).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}'" in policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_the_page_loads_nothing_from_another_site() -> None:
    for file in STATIC_DIR.glob("*"):
        if file.suffix in (".html", ".js", ".css"):
            loads = re.search(
                r"""(?:src|href)=["']?(?:https?:)?//|from\s+["'](?:https?:)?//|import\(["'](?:https?:)?//|url\(["']?(?:https?:)?//""",
                file.read_text(),
            )
            assert not loads, f"{file.name} loads {loads.group(0)!r} from another site"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/preact.mjs", "text/javascript; charset=utf-8"),
        ("/console/vendor/uPlot.min.css", "text/css; charset=utf-8"),
        ("/console/vendor/LICENSE.preact", "text/plain; charset=utf-8"),
    ],
)
def test_assets_have_their_content_type(path: str, content_type: str) -> None:
    answer = console_answer(path)
    assert (answer.status, answer.headers["Content-Type"]) == (200, content_type)
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        "/console/../pyproject.toml",
        "/console/vendor/../../assets.py",
        "/console/nope.js",
        "/console/.hidden",
        "/console/vendor",
        "/console/assets.py",
    ],
)
def test_nothing_outside_the_static_files_is_served(path: str) -> None:
    assert console_answer(path).status == 404


def test_the_files_are_read_only() -> None:
    assert console_answer("/console/app.js", "POST").status == 405


def test_served_by_the_local_stack_the_page_is_told_it_has_no_session_without_an_error() -> None:
    answer = console_answer("/console/session")
    assert (answer.status, answer.body) == (204, b"")
    assert answer.headers["Cache-Control"] == "no-store"


def test_only_console_paths_are_the_consoles() -> None:
    assert is_console_path("/console") and is_console_path("/console/app.js")
    assert not is_console_path("/consoles") and not is_console_path("/v1/jobs")


def test_the_local_stacks_api_server_serves_the_console_without_a_token_and_without_the_api() -> None:
    calls: list[object] = []

    def api_handler(event: object, context: object) -> dict[str, object]:
        calls.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    server = LocalHTTPServer(("127.0.0.1", 0), make_handler_class({"local-dev-token": "local"}, api_handler))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with urllib.request.urlopen(base + "/console", timeout=10) as response:
            assert response.status == 200 and b'<div id="app">' in response.read()
        # The page's data still needs the token, like any other client's.
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/v1/jobs", timeout=10)
        assert refused.value.code == 401
    finally:
        server.shutdown()
        server.server_close()
    assert calls == []


def test_the_apps_own_code_has_no_way_to_write_markup_from_text() -> None:
    for file in STATIC_DIR.glob("*.js"):
        code = file.read_text()
        for risky in (
            "dangerouslySetInnerHTML",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "eval(",
            "document.write",
            "new Function",
        ):
            assert risky not in code, f"{file.name} uses {risky}"

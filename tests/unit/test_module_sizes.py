"""A module that passes 500 lines is doing two jobs: the Lambda code stays below that."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def test_no_module_of_the_lambda_code_is_longer_than_500_lines() -> None:
    modules = sorted((ROOT / "punctual_functions").rglob("*.py"))
    assert len(modules) > 50  # the walk found the code
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text().splitlines())) > LIMIT
    }
    assert long == {}, f"split these along their seams: {long}"

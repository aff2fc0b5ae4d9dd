"""``punctual/sim/`` and ``bench/`` run the code Lambda runs, and the package ships without ``tests/``:
none of them imports from ``tests`` (what they share with the tests is ``punctual.testing``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# A line that imports from ``tests``: ``import tests...`` or ``from tests... import``. Lines, not
# ``ast``: Python 3.11's parser may fail ("AST constructor recursion depth mismatch") while other
# threads of the test process run.
_IMPORT_FROM_TESTS = re.compile(r"^\s*(?:from\s+tests(?:\.[\w.]+)?\s+import\b|import\s+tests(?:\.[\w.]+)?\b)")


def _imports_from_tests(path: Path) -> list[str]:
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{where}:{number} {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if _IMPORT_FROM_TESTS.match(line)
    ]


def test_sim_bench_and_the_package_import_nothing_from_tests() -> None:
    sources = [
        path
        for folder in ("bench", "punctual", "punctual_functions")
        for path in (ROOT / folder).rglob("*.py")
    ]
    assert len(sources) > 100
    offenders = [line for path in sorted(sources) for line in _imports_from_tests(path)]
    assert offenders == []


def test_the_check_sees_an_import_from_tests(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tests.fakes.queue import MemoryQueue\nimport tests.support\nfrom .tests import x\n"
    )
    assert len(_imports_from_tests(sample)) == 2

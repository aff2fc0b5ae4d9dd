"""``sim/`` and ``bench/`` run the code Lambda runs, and the package ships without ``tests/``: none of
them imports from ``tests`` (what they share with the tests is ``punctual.testing``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports_from_tests(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        found += [f"{where}:{node.lineno} {name}" for name in names if name.split(".")[0] == "tests"]
    return found


def test_sim_bench_and_the_package_import_nothing_from_tests() -> None:
    sources = [
        path
        for folder in ("sim", "bench", "punctual", "punctual_functions")
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

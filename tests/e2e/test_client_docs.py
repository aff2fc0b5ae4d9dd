"""docs/client.md's examples, run as its readers run them: every ```python block in order, in one
namespace, against a local stack of their own (the examples create named jobs and cancel every job
tagged team=reports, which the shared stack's other tests must not meet); each prints as many lines
as the output the page shows under it (ids, times and counts differ from run to run, the shape not)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from punctual.testing.stack import local_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("client-docs-stack")]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"
EXAMPLE = re.compile(r"```python\n(.*?)```\n```text\n(.*?)```", re.S)


def test_every_example_of_the_client_page_runs_and_prints_what_the_page_shows(
    tmp_path: Path, config_file: Path
) -> None:
    examples = EXAMPLE.findall(PAGE.read_text())
    assert len(examples) == len(re.findall(r"```python\n", PAGE.read_text())), "each shows its output"
    namespace: dict[str, object] = {"__name__": "client_docs"}
    with local_stack(tmp_path, workers=1) as stack:
        for number, (code, shown) in enumerate(examples, 1):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(
                    compile(
                        code.replace("http://127.0.0.1:8000", stack.base_url), f"example {number}", "exec"
                    ),
                    namespace,
                )
            lines = printed.getvalue().splitlines()
            assert len(lines) == len(shown.splitlines()), f"example {number} printed:\n{printed.getvalue()}"

"""The engine reads the time and waits only through its ``Clock`` port (``punctual_functions/core/clock.py``),
so that the same logic runs on the system's clock and in virtual time."""

from __future__ import annotations

import ast
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from punctual_functions.core.clock import SYSTEM_CLOCK, sleep_until
from tests.conftest import Clock

FUNCTIONS = Path(__file__).resolve().parents[2] / "punctual_functions"
# The port itself; the network edge (a delivery's deadlines and its signature's time are those of real
# sockets); the handlers around the logic (a Lambda invocation's own threads: the worker's batch, the
# dispatcher's groups) and the AWS adapter of the fan-out.
ALLOWED = (
    "core/clock.py",
    "core/targets/",
    "worker/handler.py",
    "worker/batch.py",
    "dispatcher/handler.py",
    "core/invoker.py",
)
FORBIDDEN = {
    ("time", "time"),
    ("time", "sleep"),
    ("time", "monotonic"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("threading", "Thread"),
    ("futures", "ThreadPoolExecutor"),
    ("concurrent.futures", "ThreadPoolExecutor"),
}


def _uses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in FORBIDDEN
        ):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "datetime", "concurrent.futures"):
            found += [
                f"from {node.module} import {alias.name} (line {node.lineno})"
                for alias in node.names
                if (node.module, alias.name) in FORBIDDEN
            ]
    return found


def test_no_logic_module_reads_the_time_sleeps_or_starts_a_thread_but_through_the_clock_port() -> None:
    offenders = {
        str(path.relative_to(FUNCTIONS)): uses
        for path in sorted(FUNCTIONS.rglob("*.py"))
        if not str(path.relative_to(FUNCTIONS)).startswith(ALLOWED) and (uses := _uses(path))
    }
    assert offenders == {}


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time\nfrom datetime import datetime\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "x = datetime.now()\ntime.sleep(1)\nthreading.Thread(target=print)\n"
    )
    assert _uses(sample) == [
        "from concurrent.futures import ThreadPoolExecutor (line 3)",
        "datetime.now (line 4)",
        "time.sleep (line 5)",
        "threading.Thread (line 6)",
    ]


def test_sleep_until_never_wakes_before_its_moment() -> None:
    start = datetime(2026, 11, 25, 12, tzinfo=UTC)
    clock = Clock(start)
    sleep_until(clock, start + timedelta(seconds=1.5))
    assert clock() >= start + timedelta(seconds=1.5)
    moment = SYSTEM_CLOCK() + timedelta(milliseconds=20)
    sleep_until(SYSTEM_CLOCK, moment)
    assert SYSTEM_CLOCK() >= moment and SYSTEM_CLOCK().tzinfo is UTC


def test_the_system_clock_maps_in_order_and_runs_background_work() -> None:
    assert SYSTEM_CLOCK.parallel(lambda n: n * n, [1, 2, 3, 4], 3, "square") == [1, 4, 9, 16]
    assert SYSTEM_CLOCK.parallel(lambda n: n, [], 3, "none") == []
    done = threading.Event()
    SYSTEM_CLOCK.start(done.set, "setter").join(1)
    assert SYSTEM_CLOCK.wait(done, 0.01) and not SYSTEM_CLOCK.wait(threading.Event(), 0.001)

"""Crash points fire only when configured, and then kill the process outright."""

from __future__ import annotations

import os
import subprocess
import sys

from punctual_functions.core import crash_points


def test_a_crash_point_exits_abruptly_when_configured_and_never_otherwise() -> None:
    code = (
        "from punctual_functions.core.crash_points import crash_point;"
        " crash_point('after_start_before_execute'); print('survived')"
    )
    unset = {k: v for k, v in os.environ.items() if k != "PUNCTUAL_CRASH_POINTS"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=unset, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and "survived" in result.stdout, "not configured: nothing happens"
    env = {**os.environ, "PUNCTUAL_CRASH_POINTS": "after_start_before_execute:1.0"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == crash_points.CRASH_EXIT_CODE and "survived" not in result.stdout
    env["PUNCTUAL_CRASH_POINTS"] = "after_start_before_execute:0"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and "survived" in result.stdout

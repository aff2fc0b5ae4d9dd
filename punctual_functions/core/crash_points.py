"""Crash points: tests make a process die at named places to prove that nothing is lost.

``PUNCTUAL_CRASH_POINTS="after_plan_before_send:0.2,after_start_before_execute:0.05"`` makes the
process exit abruptly (no cleanup, like SIGKILL) with the given probability each time it passes that
point. Unset, as in every deployment, a crash point costs one dictionary lookup.

The points: ``after_plan_before_send``, ``after_send_before_record``, ``before_cursor_advance``
(dispatcher); ``after_start_before_execute``, ``after_execute_before_record`` (worker).
"""

from __future__ import annotations

import os
import random
from functools import lru_cache

CRASH_EXIT_CODE = 137


@lru_cache(maxsize=1)
def _configured() -> dict[str, float]:
    points: dict[str, float] = {}
    for entry in os.environ.get("PUNCTUAL_CRASH_POINTS", "").split(","):
        name, _, probability = entry.strip().partition(":")
        if name:
            points[name] = float(probability or 1.0)
    return points


def crash_point(name: str) -> None:
    probability = _configured().get(name)
    if probability is not None and random.random() < probability:
        os._exit(CRASH_EXIT_CODE)

"""``ScriptedTargets``: the ``Targets`` port answering with outcomes a test scripts, recording every
delivery it was asked for (no network)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from punctual_functions.core.lifecycle import CANCELLED_ERROR
from punctual_functions.core.targets.outcome import Delivery, TargetOutcome

OK = TargetOutcome(True, False, 200, None, '{"ok": true}', 5)


CANCELLED = TargetOutcome(False, False, None, CANCELLED_ERROR, "", 0)


def failure(status_code: int, *, retriable: bool) -> TargetOutcome:
    return TargetOutcome(False, retriable, status_code, f"HTTP {status_code}", "", 5)


class ScriptedTargets:
    """Implements ``punctual_functions.core.ports.Targets``: answers ``outcomes`` in order, then ``OK``."""

    def __init__(self, *outcomes: TargetOutcome) -> None:
        self.outcomes = list(outcomes)
        self.deliveries: list[tuple[Mapping[str, Any], Delivery, float]] = []
        self.answers: list[TargetOutcome] = []  # what each of ``deliveries`` was answered
        self.prepared: list[Mapping[str, Any]] = []

    def prepare(self, spec: Mapping[str, Any], timeout_seconds: float) -> None:
        self.prepared.append(spec)

    def execute(
        self,
        spec: Mapping[str, Any],
        delivery: Delivery,
        timeout_seconds: float,
        cancel: threading.Event | None = None,
        *,
        wait: Callable[[], None] | None = None,
    ) -> TargetOutcome:
        if cancel is not None and cancel.is_set():  # as the executor: no call, and no retry of it
            return CANCELLED
        if wait is not None:
            wait()
        self.deliveries.append((spec, delivery, timeout_seconds))
        self.answers.append(self.outcomes.pop(0) if self.outcomes else OK)
        return self.answers[-1]

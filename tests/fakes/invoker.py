"""``RecordingInvoker``: the ``Invoker`` port recording the groups it was handed, refusing those a
test names (as a throttled ``lambda:Invoke`` would)."""

from __future__ import annotations

from datetime import datetime


class RecordingInvoker:
    """Implements ``punctual_functions.core.ports.Invoker``."""

    def __init__(self, refuse: list[list[int]] | None = None) -> None:
        self.refuse = refuse or []
        self.started: list[list[int]] = []
        self.starts: list[datetime] = []

    def start_sweeps(self, groups: list[list[int]], starts: list[datetime]) -> list[list[int]]:
        refused = [group for group in groups if group in self.refuse]
        self.started.extend(group for group in groups if group not in self.refuse)
        self.starts.extend(
            start for group, start in zip(groups, starts, strict=True) if group not in self.refuse
        )
        return refused

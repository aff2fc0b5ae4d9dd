"""``RecordingInvoker``: the ``Invoker`` port recording the groups it was handed, refusing those a
test names (as a throttled ``lambda:Invoke`` would)."""

from __future__ import annotations


class RecordingInvoker:
    """Implements ``functions.core.ports.Invoker``."""

    def __init__(self, refuse: list[list[int]] | None = None) -> None:
        self.refuse = refuse or []
        self.started: list[list[int]] = []

    def start_sweeps(self, groups: list[list[int]]) -> list[list[int]]:
        refused = [group for group in groups if group in self.refuse]
        self.started.extend(group for group in groups if group not in self.refuse)
        return refused

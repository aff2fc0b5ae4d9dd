"""The ``DeploymentStore`` port in memory, mixed into ``MemoryStore``: the allow-list of targets as
``punctual_functions/core/store/deployment.py`` keeps it (one item, replaced whole by each write,
read back without repeats)."""

from __future__ import annotations

import threading
from collections.abc import Sequence


class MemoryDeployment:
    """Implements ``punctual_functions.core.ports.DeploymentStore`` on ``self.allowed_patterns``
    under ``self.lock``."""

    lock: threading.RLock
    allowed_patterns: tuple[str, ...]

    def allowed_targets(self) -> tuple[str, ...]:
        with self.lock:
            return self.allowed_patterns

    def put_allowed_targets(self, patterns: Sequence[str]) -> None:
        with self.lock:
            cleaned = (pattern.strip() for pattern in patterns if pattern.strip())
            self.allowed_patterns = tuple(dict.fromkeys(cleaned))

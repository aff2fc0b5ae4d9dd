"""The ``DeploymentStore`` port in memory, mixed into ``MemoryStore``: the allow-list of targets and the
delivery rights as ``punctual_functions/core/store/deployment.py`` keeps them (one item each, replaced
whole by each write, the list read back without repeats)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from punctual_functions.core.rights import DeliveryRights


class MemoryDeployment:
    """Implements ``punctual_functions.core.ports.DeploymentStore`` on ``self.allowed_patterns``
    under ``self.lock``."""

    lock: threading.RLock
    allowed_patterns: tuple[str, ...]
    rights: DeliveryRights

    def allowed_targets(self) -> tuple[str, ...]:
        with self.lock:
            return self.allowed_patterns

    def put_allowed_targets(self, patterns: Sequence[str]) -> None:
        with self.lock:
            cleaned = (pattern.strip() for pattern in patterns if pattern.strip())
            self.allowed_patterns = tuple(dict.fromkeys(cleaned))

    def delivery_rights(self) -> DeliveryRights:
        with self.lock:
            return self.rights

    def put_delivery_rights(self, rights: DeliveryRights) -> None:
        with self.lock:
            self.rights = DeliveryRights.from_json(rights.to_json())  # as stored: through its JSON

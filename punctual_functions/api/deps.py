"""What the API's route functions work with: one small frozen object, built once per process.

Each route module (``create.py``, ``changes.py``, ``pausing.py``, ``cancel.py``, ``reads.py``,
``backfill.py``, ``bulk.py``, ``run_now.py``) takes it as its first argument, as
``punctual_functions/core/targets/`` takes its clients: the handler builds the real one
(``handler.deps``), the tests and the simulation build theirs on fakes, and ``service.JobService``
wraps one for callers that like methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from punctual_functions.core.allow_list import AllowedTargets
from punctual_functions.core.clock import SYSTEM_CLOCK, Clock
from punctual_functions.core.rights import RightsReader

if TYPE_CHECKING:
    from punctual_functions.core.dispatching import Dispatcher
    from punctual_functions.core.ports import Tables
    from punctual_functions.core.settings import Settings
    from punctual_functions.core.ssrf_guard import NetworkPolicy


@dataclass(frozen=True)
class Deps:
    store: Tables
    # Sends the occurrences a request makes due within the look-ahead, and reads the queue's depth.
    dispatcher: Dispatcher
    settings: Settings
    # The SSRF guard's rules for webhook targets.
    policy: NetworkPolicy
    clock: Clock = SYSTEM_CLOCK

    @cached_property
    def allowed_targets(self) -> AllowedTargets:
        """The AWS resources jobs may target: the settings' patterns and the deployment's item."""
        return AllowedTargets(self.settings.allowed_target_arns, self.store.allowed_targets, self.clock)

    @cached_property
    def rights(self) -> RightsReader:
        """Which owners may deliver where: the deployment's rights item, as last read."""
        return RightsReader(self.store.delivery_rights, self.clock)

"""The deployment's allow-list of AWS targets, as the API checks a job's target against it.

Two sources, one list: the patterns of the settings (``PUNCTUAL_ALLOWED_TARGET_ARNS``, what a test
or a one-off process is given) and the deployment's item in the table (``DeploymentStore``: what the
CDK stack writes at deploy time, every ``allowed_target_arns`` pattern and every ``allow_target``
ARN; the local stack writes its own there too). The item is read at the first check, again once it
is ``MAX_AGE`` old, and at once when a target is not on the list (at most every
``REFRESH_ON_MISS``): a target allowed by the deploy that just ran is never refused for a stale copy,
and one removed from the list is refused within ``MAX_AGE``.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Iterable
from typing import Final

from punctual_functions.core.clock import Clock

MAX_AGE_SECONDS: Final = 60.0
REFRESH_ON_MISS_SECONDS: Final = 1.0


class AllowedTargets:
    def __init__(
        self,
        configured: Iterable[str],
        load: Callable[[], tuple[str, ...]],
        clock: Clock,
        *,
        max_age_seconds: float = MAX_AGE_SECONDS,
        refresh_on_miss_seconds: float = REFRESH_ON_MISS_SECONDS,
    ) -> None:
        self._configured = tuple(configured)
        self._load = load
        self._clock = clock
        self._max_age = max_age_seconds
        self._refresh_on_miss = refresh_on_miss_seconds
        self._lock = threading.Lock()
        self._stored: tuple[str, ...] = ()
        self._read_at: float | None = None

    def allows(self, identifiers: Iterable[str]) -> bool:
        """Whether any of the names of one resource (``identifiers``) matches a pattern of the list."""
        names = tuple(identifiers)
        if _matches(names, self._configured):
            return True
        with self._lock:
            age = None if self._read_at is None else self._clock.monotonic() - self._read_at
            if (
                age is None
                or age >= self._max_age
                or (not _matches(names, self._stored) and age >= self._refresh_on_miss)
            ):
                self._read()
            return _matches(names, self._stored)

    def patterns(self) -> tuple[str, ...]:
        """Every pattern of the list, the item's as last read."""
        return (*self._configured, *self._stored)

    def _read(self) -> None:
        self._stored = self._load()
        self._read_at = self._clock.monotonic()


def _matches(names: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)

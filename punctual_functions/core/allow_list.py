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
from typing import Final, Generic, TypeVar

from punctual_functions.core.clock import Clock, Monotonic

MAX_AGE_SECONDS: Final = 60.0
REFRESH_ON_MISS_SECONDS: Final = 1.0

T = TypeVar("T")


class RefreshedItem(Generic[T]):
    """A deployment item as last read (``load``): read at the first check, again once
    ``max_age_seconds`` old, and at once (at most every ``refresh_on_miss_seconds``) when a check
    fails on the copy, before the failure counts."""

    def __init__(
        self,
        load: Callable[[], T],
        clock: Monotonic,
        *,
        max_age_seconds: float = MAX_AGE_SECONDS,
        refresh_on_miss_seconds: float = REFRESH_ON_MISS_SECONDS,
    ) -> None:
        self._load = load
        self._clock = clock
        self._max_age = max_age_seconds
        self._refresh_on_miss = refresh_on_miss_seconds
        self._lock = threading.Lock()
        self._value: T | None = None
        self._read_at: float | None = None

    def check(self, predicate: Callable[[T], bool]) -> bool:
        value, age = self._copy()
        if value is None or age is None or age >= self._max_age:
            return predicate(self._read())
        if predicate(value) or age < self._refresh_on_miss:
            return predicate(value)
        return predicate(self._read())  # refused on the copy: read again before it counts

    def current(self) -> T:
        value, age = self._copy()
        if value is None or age is None or age >= self._max_age:
            value = self._read()
        return value

    def _copy(self) -> tuple[T | None, float | None]:
        with self._lock:
            age = None if self._read_at is None else self._clock.monotonic() - self._read_at
            return self._value, age

    def _read(self) -> T:
        """Read the item outside the lock (a read may wait: in the simulator, on virtual time, where a
        lock held across it would stop every other reader for good); the last read wins."""
        value = self._load()
        with self._lock:
            self._value, self._read_at = value, self._clock.monotonic()
        return value


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
        self._stored = RefreshedItem(
            load, clock, max_age_seconds=max_age_seconds, refresh_on_miss_seconds=refresh_on_miss_seconds
        )

    def allows(self, identifiers: Iterable[str]) -> bool:
        """Whether any of the names of one resource (``identifiers``) matches a pattern of the list."""
        names = tuple(identifiers)
        if _matches(names, self._configured):
            return True
        return self._stored.check(lambda stored: _matches(names, stored))

    def patterns(self) -> tuple[str, ...]:
        """Every pattern of the list, the item's as last read."""
        return (*self._configured, *self._stored.current())


def _matches(names: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)

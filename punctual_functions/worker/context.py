"""What the parts of the worker share: the ports, the settings, the clock, and how a record says
"give my message back later"."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from punctual_functions.core.clock import Clock
from punctual_functions.core.ports import Queue, Tables, Targets
from punctual_functions.core.settings import Settings

T = TypeVar("T")


class ReturnLater(Exception):
    """Give the message back to SQS; it comes back after ``seconds`` (a batch item failure)."""

    def __init__(self, reason: str, seconds: int | None = None) -> None:
        super().__init__(reason)
        self.seconds = seconds


@dataclass
class WorkerContext:
    """One executor's ports and settings, read by its parts at each use: what a test or the runtime
    puts in their place (``executor.settings = ...``) reaches every part."""

    store: Tables
    queue: Queue
    targets: Targets
    settings: Settings
    clock: Clock
    crash_point: Callable[[str], None]
    rng: random.Random = field(default_factory=random.Random)


class Shared(Generic[T]):
    """An attribute of the executor that lives in its ``context``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Shared[T]: ...
    @overload
    def __get__(self, obj: Any, objtype: type | None = None) -> T: ...
    def __get__(self, obj: Any, objtype: type | None = None) -> T | Shared[T]:
        if obj is None:
            return self
        value: T = getattr(obj.context, self.name)
        return value

    def __set__(self, obj: Any, value: T) -> None:
        setattr(obj.context, self.name, value)

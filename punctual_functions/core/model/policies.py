"""What a job asks for when things go wrong or late: misfire, overlap, end, retries and alerts."""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from punctual_functions.core.model.status import Reason


class MisfirePolicy(StrEnum):
    RUN_ONCE = "run_once"
    SKIP = "skip"
    RUN_ALL = "run_all"


class OverlapPolicy(StrEnum):
    """What an occurrence does when it falls due while an earlier run of its job has not ended
    (Temporal's overlap policies)."""

    ALLOW = "allow"
    SKIP = "skip"
    BUFFER_ONE = "buffer_one"
    BUFFER_ALL = "buffer_all"
    CANCEL_OTHER = "cancel_other"

    @property
    def buffers(self) -> bool:
        return self in (OverlapPolicy.BUFFER_ONE, OverlapPolicy.BUFFER_ALL)


class OnComplete(StrEnum):
    """What becomes of a job that ends (a one-off run done, a schedule run out, ``max_runs`` reached)."""

    KEEP = "keep"
    DELETE = "delete"  # gone ``delete_after_days`` after its end, its history with it


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: spreads the retries of runs that failed together."""

    max_attempts: int = 3
    backoff_seconds: float = 5.0
    max_backoff_seconds: float = 600.0

    def has_attempts_left(self, attempts_made: int) -> bool:
        return attempts_made < self.max_attempts

    def delay_after(self, failed_attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt ``failed_attempt`` (1-based) before the next one."""
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (failed_attempt - 1))
        return (rng or random).uniform(0, ceiling)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_attempts": self.max_attempts,
            "backoff_seconds": self.backoff_seconds,
            "max_backoff_seconds": self.max_backoff_seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RetryPolicy:
        data = data or {}
        return cls(
            max_attempts=int(data.get("max_attempts", 3)),
            backoff_seconds=float(data.get("backoff_seconds", 5.0)),
            max_backoff_seconds=float(data.get("max_backoff_seconds", 600.0)),
        )


class AlertKind(StrEnum):
    """What a job's alerts tell of (docs/architecture.md, "Per-job alerts")."""

    FAILED = "failed"
    LATE = "late"
    RUNNING_LONG = "running_long"
    MISSED = "missed"
    LIMITED = "limited"


# The rows of occurrences that did not run which count as missed (a pause or a cancel was chosen).
MISSED_REASONS = frozenset({Reason.MISFIRE_SKIPPED, Reason.MISFIRE_COLLAPSED, Reason.OVERLAP})


@dataclass(frozen=True)
class Alerts:
    """A job's alerts: where they go (an SNS topic or a webhook, as a target) and on what."""

    target: dict[str, Any]
    failed: bool = False
    missed: bool = False
    late_seconds: int | None = None  # late: the first attempt started more than this after its due time
    running_seconds: int | None = None  # running_long: an attempt still running this long after its start
    limited_seconds: int | None = None  # limited: a run waited on a target limit longer than this

    def wants(self, kind: AlertKind) -> bool:
        return {
            AlertKind.FAILED: self.failed,
            AlertKind.MISSED: self.missed,
            AlertKind.LATE: self.late_seconds is not None,
            AlertKind.RUNNING_LONG: self.running_seconds is not None,
            AlertKind.LIMITED: self.limited_seconds is not None,
        }[kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "failed": self.failed,
            "missed": self.missed,
            "late_seconds": self.late_seconds,
            "running_seconds": self.running_seconds,
            "limited_seconds": self.limited_seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alerts:
        return cls(
            target=dict(data["target"]),
            failed=bool(data.get("failed")),
            missed=bool(data.get("missed")),
            late_seconds=data.get("late_seconds"),
            running_seconds=data.get("running_seconds"),
            limited_seconds=data.get("limited_seconds"),
        )

"""The misfire policy applied to an occurrence being dispatched: whether it runs and what comes next."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from functions.core.model.job import Job
from functions.core.model.policies import MisfirePolicy
from functions.core.model.trigger import jitter_of
from functions.core.schedule import Schedule


@dataclass(frozen=True)
class DispatchPlan:
    """What dispatching a trigger does: which occurrence runs (if any) and which one comes next."""

    run_scheduled_for: datetime | None  # None: nothing runs for this trigger
    skipped: datetime | None  # an occurrence recorded as SKIPPED
    next_occurrence: datetime | None


def plan_dispatch(
    job: Job, scheduled_for: datetime, now: datetime, misfire_threshold: timedelta
) -> DispatchPlan:
    """Apply the job's misfire policy to an occurrence being dispatched at ``now``; a jittered occurrence
    is missed only once its own due time is more than the threshold ago."""
    threshold = misfire_threshold + timedelta(milliseconds=jitter_of(job, scheduled_for))
    return plan_occurrence(job.schedule, job.misfire, job.catchup_seconds, scheduled_for, now, threshold)


def plan_occurrence(
    schedule: Schedule,
    misfire: MisfirePolicy,
    catchup_seconds: int | None,
    scheduled_for: datetime,
    now: datetime,
    misfire_threshold: timedelta,
) -> DispatchPlan:
    """Apply a misfire policy to an occurrence being dispatched at ``now``: the dispatcher's decision,
    and the schedule preview's replay of an outage (``functions/core/preview.py``).

    On time (not later than the threshold) the occurrence runs and the chain continues after it. A
    missed recurring occurrence is handled by the policy; one-off jobs always run.
    """
    if not schedule.is_recurring:
        return DispatchPlan(scheduled_for, None, None)
    if now - scheduled_for <= misfire_threshold:
        return DispatchPlan(scheduled_for, None, schedule.next_after(scheduled_for))
    horizon = now - timedelta(seconds=catchup_seconds) if catchup_seconds is not None else None
    in_window = horizon is None or scheduled_for >= horizon
    if misfire is MisfirePolicy.RUN_ALL:
        if in_window:
            return DispatchPlan(scheduled_for, None, schedule.next_after(scheduled_for))
        # Jump to the first occurrence still inside the catch-up window.
        assert horizon is not None
        return DispatchPlan(None, scheduled_for, schedule.next_after(horizon - timedelta(microseconds=1)))
    following = schedule.next_after(now)
    if misfire is MisfirePolicy.SKIP:
        return DispatchPlan(None, scheduled_for, following)
    # run_once: only the latest missed occurrence runs.
    latest = scheduled_for
    for occurrence in schedule.occurrences_between(scheduled_for, now, limit=100_000):
        latest = occurrence
    if horizon is not None and latest < horizon:
        return DispatchPlan(None, scheduled_for, following)
    return DispatchPlan(latest, None, following)

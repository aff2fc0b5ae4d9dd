"""A job: its schedule, target and policies, and how pausing and resuming change it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model.policies import (
    AlertKind,
    Alerts,
    MisfirePolicy,
    OnComplete,
    OverlapPolicy,
    RetryPolicy,
)
from punctual_functions.core.model.run import MAX_ROW_COVERS, Run, not_run_row
from punctual_functions.core.model.status import JobStatus, Reason, RunKind
from punctual_functions.core.schedule import Schedule
from punctual_functions.core.timing import FireTimes

# Who paused a job that Punctual paused itself (pause_on_failures).
PAUSED_BY_PUNCTUAL = "punctual"


@dataclass(frozen=True)
class Job:
    job_id: str
    owner: str
    schedule: Schedule
    target: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    name: str | None = None
    status: JobStatus = JobStatus.ACTIVE
    version: int = 1
    # One more at each change the API (or Punctual itself) writes to the job, 1 at its create; each
    # revision's definition is in the audit trail (core/trail.py). 0: made before the trail existed.
    revision: int = 0
    payload: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_seconds: int = 30
    tags: dict[str, str] = field(default_factory=dict)
    secret: str | None = None
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    catchup_seconds: int | None = None
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    next_trigger_at: datetime | None = None  # the chain's frontier: the latest occurrence with a trigger
    paused_at: datetime | None = None
    jitter_seconds: int = 0  # each scheduled occurrence fires up to this much after its time (jitter_of)
    pause_note: str | None = None  # why it is paused, as its pauser said
    paused_by: str | None = None  # who paused it: a caller, or "punctual" (pause_on_failures)
    pause_until: datetime | None = None  # active again from then on (Job.as_of); written so later
    pause_on_failures: int | None = None  # pause after this many consecutive FAILED runs
    max_concurrent: int | None = None  # at most this many of its attempts in flight at once (a limit)
    max_runs: int | None = None  # a recurring job ends once this many occurrences were set off
    on_complete: OnComplete = OnComplete.KEEP
    delete_after_days: int = 7  # on_complete delete: how long an ended job stays readable
    expires_at: datetime | None = None  # on_complete delete: gone from then on (the item's TTL)
    alerts: Alerts | None = None
    # An SQS target (of the allow-list) that receives each run that ended FAILED, with its error.
    dead_letter: dict[str, Any] | None = None
    # The owner's business calendar its schedule follows (docs/concepts.md, "Business calendars"),
    # and what becomes of an occurrence on a day the calendar excludes.
    calendar: str | None = None
    on_excluded: OnExcluded = OnExcluded.SKIP

    def alerts_on(self, kind: AlertKind) -> bool:
        """Whether this job wants an alert of ``kind``."""
        return self.alerts is not None and self.alerts.wants(kind)

    def gone(self, moment: datetime) -> bool:
        """Deleted by ``on_complete: delete`` (DynamoDB's TTL may not have removed the item yet)."""
        return self.expires_at is not None and self.expires_at <= moment

    def expiry_after_end(self, end: datetime) -> datetime | None:
        """When this job, ending at ``end``, is to be gone: None unless ``on_complete: delete``."""
        if self.on_complete is not OnComplete.DELETE:
            return None
        return end + timedelta(days=self.delete_after_days)

    def paused(self, now: datetime, by: str, note: str | None, until: datetime | None) -> Job:
        """This job paused at ``now`` (a new version: its triggers must not fire), or its pause
        re-noted (still at its first ``paused_at``)."""
        return replace(
            self,
            status=JobStatus.PAUSED,
            version=self.version + 1,
            paused_at=self.paused_at or now,
            pause_note=note,
            paused_by=by,
            pause_until=until,
            next_trigger_at=None,
            updated_at=now,
        )

    def resumed(self, now: datetime, first: datetime | None, *, new_version: bool = True) -> Job:
        """This job active again from ``first`` (COMPLETED when nothing is left to run)."""
        return replace(
            self,
            status=JobStatus.ACTIVE if first is not None else JobStatus.COMPLETED,
            version=self.version + 1 if new_version else self.version,
            paused_at=None,
            pause_note=None,
            paused_by=None,
            pause_until=None,
            next_trigger_at=first,
            updated_at=now,
        )

    def pause_ended(self, moment: datetime) -> bool:
        """Paused with an ``until`` that has come: active from then on, whether or not the dispatcher
        has written it so yet (it does when it next dispatches the job)."""
        return self.status is JobStatus.PAUSED and self.pause_until is not None and self.pause_until <= moment

    def as_of(self, moment: datetime) -> Job:
        """The job as it stands at ``moment``: a pause whose ``until`` has come has ended."""
        if not self.pause_ended(moment):
            return self
        return replace(
            self, status=JobStatus.ACTIVE, paused_at=None, pause_note=None, paused_by=None, pause_until=None
        )

    def first_after_pause(self, timing: FireTimes | None = None) -> datetime | None:
        """The first occurrence a pause with ``until`` resumes with: the first at or after ``until``
        (nothing due while it was paused runs); a one-off's own time (it runs at ``until`` if that was
        earlier)."""
        if self.pause_until is None:
            return None
        if self.schedule.is_recurring:
            return (timing or self.schedule).next_after(self.pause_until - timedelta(microseconds=1))
        return self.schedule.first_fire_time()

    def resume_point(self, now: datetime, timing: FireTimes | None = None) -> datetime | None:
        """The first occurrence a resume at ``now`` continues with: the first at or after it (nothing
        that fell due while paused runs: the pause's row in the history says what); a one-off's own
        time (it runs, however late). ``timing``: the schedule's fire times under the job's calendar."""
        if self.schedule.is_recurring:
            return (timing or self.schedule).next_after(now - timedelta(microseconds=1))
        return self.schedule.first_fire_time()

    def pause_row(
        self, end: datetime, now: datetime, own_rows: Collection[datetime] = frozenset()
    ) -> Run | None:
        """The history's row for this job's pause, from ``paused_at`` to ``end``: the occurrences due
        in it, which did not run, with the pause's note and who paused (None if it was not paused).
        ``own_rows``: the times of occurrences that have a row of their own (dispatched ahead before
        the pause, then skipped), which the span does not count again."""
        if self.paused_at is None:
            return None
        # After the pause began (one due at that very moment was dispatched already) and before its end;
        # a one-off's time that passed while paused still runs, so it is none of them.
        due: list[datetime] = []
        if self.schedule.is_recurring:
            before = end - timedelta(microseconds=1)
            due = self.schedule.occurrences_between(self.paused_at, before, limit=MAX_ROW_COVERS)
            due = [moment for moment in due if moment not in own_rows]
        return replace(
            not_run_row(
                self,
                self.paused_at,
                due,
                Reason.PAUSED,
                now,
                kind=RunKind.PAUSE,
                error="not run while paused",
                note=self.pause_note,
                by=self.paused_by,
            ),
            finished_at=end,
        )

    @property
    def is_live(self) -> bool:
        return self.status in (JobStatus.ACTIVE, JobStatus.PAUSED)

"""What the API does, one function per route, in domain terms (no HTTP here)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from functions.api.models import CreateJobIn
from functions.core.dispatching import Dispatcher
from functions.core.model import (
    Job,
    MisfirePolicy,
    OverlapPolicy,
    RetryPolicy,
    Run,
    RunStatus,
    from_ms,
    iso,
    make_trigger,
    new_job_id,
    utcnow,
)
from functions.core.netguard import NetworkPolicy
from functions.core.schedule import ScheduleError, parse_schedule
from functions.core.settings import Settings
from functions.core.store import ConflictError, Store
from functions.core.targets import TargetError, validate_target


class ApiError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "reason": self.reason}
        if self.field is not None:
            body["field"] = self.field
        return body


class InvalidInput(ApiError):
    status_code = 422
    code = "invalid_input"


class NotFound(ApiError):
    status_code = 404
    code = "not_found"


class Conflict(ApiError):
    status_code = 409
    code = "conflict"


class JobService:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        settings: Settings,
        policy: NetworkPolicy,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.settings = settings
        self.policy = policy
        self.clock = clock

    def create_job(self, owner: str, request: CreateJobIn) -> dict[str, Any]:
        now = self.clock()
        spec = request.schedule
        try:
            schedule = parse_schedule(
                at=spec.at,
                cron=spec.cron,
                rate=spec.rate,
                timezone=spec.timezone,
                start_at=spec.start_at,
                end_at=spec.end_at,
                now=now,
                min_interval_seconds=self.settings.min_interval_seconds,
            )
        except ScheduleError as error:
            raise InvalidInput(error.reason, error.field) from error
        try:
            target = validate_target(request.target, self.policy)
        except TargetError as error:
            raise InvalidInput(error.reason, error.field) from error
        first = schedule.next_after(now) if schedule.is_recurring else schedule.first_fire_time()
        if first is None:
            raise InvalidInput("the schedule has no fire time in the future", "schedule")
        job = Job(
            job_id=new_job_id(),
            owner=owner,
            name=request.name,
            schedule=schedule,
            target=target,
            payload=request.payload,
            retry=RetryPolicy(
                max_attempts=request.retry.max_attempts,
                backoff_seconds=request.retry.backoff_seconds,
                max_backoff_seconds=request.retry.max_backoff_seconds,
            ),
            timeout_seconds=request.timeout_seconds,
            tags=request.tags,
            secret=request.signing_secret,
            misfire=MisfirePolicy(spec.misfire),
            catchup_seconds=spec.catchup_seconds,
            overlap=OverlapPolicy(spec.overlap),
            created_at=now,
            updated_at=now,
            next_run_at=first,
        )
        trigger = make_trigger(job, first, now=now, shard_count=self.settings.shard_count)
        try:
            self.store.create_job(job, trigger)
        except ConflictError as error:
            raise Conflict(f"a live job named {request.name!r} exists already", "name") from error
        if first - now <= timedelta(seconds=self.settings.lookahead_seconds):
            # The sweep for this minute may have run already: dispatch now (the trigger is the safety
            # net if this process dies before the message is sent).
            self.dispatcher.dispatch([trigger], now)
        return self.job_view(job, now)

    def get_job(self, owner: str, job_id: str) -> dict[str, Any]:
        return self.job_view(self._owned_job(owner, job_id), self.clock())

    def list_runs(
        self, owner: str, job_id: str, *, limit: int, cursor: str | None, status: RunStatus | None
    ) -> dict[str, Any]:
        self._owned_job(owner, job_id)
        runs, next_cursor = self.store.list_runs(job_id, limit=limit, cursor=cursor, status=status)
        return {"items": [run_view(run) for run in runs], "next_cursor": next_cursor}

    def get_run(self, owner: str, job_id: str, run_id: str) -> dict[str, Any]:
        self._owned_job(owner, job_id)
        run = self.store.get_run(job_id, run_id)
        if run is None:
            raise NotFound(f"run {run_id} not found", "run_id")
        return run_view(run, with_attempts=True)

    def _owned_job(self, owner: str, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        # Another owner's job is indistinguishable from a missing one.
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found", "job_id")
        return job

    def job_view(self, job: Job, now: datetime) -> dict[str, Any]:
        upcoming: list[datetime] = []
        if job.status.value == "ACTIVE":
            if job.schedule.is_recurring:
                after = min(job.next_run_at, now) if job.next_run_at else now
                upcoming = job.schedule.upcoming(after - timedelta(microseconds=1), 5)
            elif job.next_run_at is not None:
                upcoming = [job.next_run_at]
        schedule: dict[str, Any] = dict(job.schedule.to_dict())
        schedule.pop("anchor", None)
        schedule.update(
            {
                "misfire": job.misfire.value,
                "overlap": job.overlap.value,
                "catchup_seconds": job.catchup_seconds,
            }
        )
        last_run = dict(job.last_run) if job.last_run else None
        if last_run:
            for key in ("scheduled_for", "finished_at"):
                if isinstance(last_run.get(key), int):
                    last_run[key] = iso(from_ms(last_run[key]))
        return {
            "job_id": job.job_id,
            "name": job.name,
            "status": job.status.value,
            "schedule": schedule,
            "target": job.target,
            "payload": job.payload,
            "retry": job.retry.to_dict(),
            "timeout_seconds": job.timeout_seconds,
            "tags": job.tags,
            "has_signing_secret": job.secret is not None,
            "next_run_at": iso(job.next_run_at),
            "upcoming": [iso(moment) for moment in upcoming],
            "last_run": last_run,
            "run_counts": job.run_counts,
            "version": job.version,
            "created_at": iso(job.created_at),
            "updated_at": iso(job.updated_at),
        }


def run_view(run: Run, *, with_attempts: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "run_id": run.run_id,
        "job_id": run.job_id,
        "status": run.status.value,
        "kind": run.kind.value,
        "scheduled_for": iso(run.scheduled_for),
        "queued_at": iso(run.queued_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "lateness_ms": run.lateness_ms,
        "attempt": run.attempt,
        "executions": run.executions,
        "next_attempt_at": iso(run.next_attempt_at) if run.status is RunStatus.RETRYING else None,
        "error": run.error,
    }
    if with_attempts:
        view["attempts"] = [attempt.to_dict() for attempt in run.attempts]
    return view

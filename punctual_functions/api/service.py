"""``JobService``: the API's route functions as methods of one object, for the callers that drive the
engine without HTTP (the tests, the simulation in ``punctual/sim/``, the benchmarks). The handler calls the
route modules itself; this adds nothing to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from punctual_functions.api import cancel, changes, create, pausing, reads, run_now
from punctual_functions.api.deps import Deps
from punctual_functions.api.jobs import settled
from punctual_functions.api.limit_views import LimitPageView, LimitView
from punctual_functions.api.views import (
    CreatedJobView,
    JobPageView,
    JobView,
    PendingRunView,
    RunPageView,
    RunView,
    StatsView,
)
from punctual_functions.core.model import Job, JobStatus, Reason, RunStatus

if TYPE_CHECKING:
    from punctual_functions.api.requests import CreateJobIn, LimitIn, PatchJobIn


@dataclass(frozen=True)
class JobService(Deps):
    def create_job(self, owner: str, request: CreateJobIn, idempotency_key: str | None = None) -> JobView:
        return create.create_job(self, owner, request, idempotency_key)

    def create_jobs(
        self, owner: str, requests: list[Any], idempotency_key: str | None = None
    ) -> list[CreatedJobView]:
        return create.create_jobs(self, owner, requests, idempotency_key)

    def get_job(self, owner: str, job_id: str) -> JobView:
        return reads.get_job(self, owner, job_id)

    def list_jobs(
        self,
        owner: str,
        *,
        limit: int,
        cursor: str | None,
        status: JobStatus | None,
        name: str | None,
        name_prefix: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> JobPageView:
        return reads.list_jobs(
            self,
            owner,
            limit=limit,
            cursor=cursor,
            status=status,
            name=name,
            name_prefix=name_prefix,
            tag=tag,
        )

    def list_runs(
        self,
        owner: str,
        job_id: str,
        *,
        limit: int,
        cursor: str | None,
        status: RunStatus | None,
        reason: Reason | None = None,
    ) -> RunPageView:
        return reads.list_runs(self, owner, job_id, limit=limit, cursor=cursor, status=status, reason=reason)

    def get_run(self, owner: str, job_id: str, run_id: str) -> RunView:
        return reads.get_run(self, owner, job_id, run_id)

    def stats(self, owner: str) -> StatsView:
        return reads.stats(self, owner)

    def patch_job(self, owner: str, job_id: str, request: PatchJobIn) -> JobView:
        return changes.patch_job(self, owner, job_id, request)

    def pause_job(
        self, owner: str, job_id: str, note: str | None = None, until: str | None = None
    ) -> JobView:
        return pausing.pause_job(self, owner, job_id, note, until)

    def resume_job(self, owner: str, job_id: str) -> JobView:
        return pausing.resume_job(self, owner, job_id)

    def run_now(self, owner: str, job_id: str) -> RunView | PendingRunView:
        return run_now.run_now(self, owner, job_id)

    def cancel_job(self, owner: str, job_id: str) -> JobView:
        return cancel.cancel_job(self, owner, job_id)

    def cancel_run(self, owner: str, job_id: str, run_id: str) -> RunView:
        return cancel.cancel_run(self, owner, job_id, run_id)

    def create_limit(self, owner: str, request: LimitIn) -> LimitView:
        from punctual_functions.api import limits

        return limits.create_limit(self, owner, request)

    def replace_limit(self, owner: str, name: str, request: LimitIn) -> LimitView:
        from punctual_functions.api import limits

        return limits.replace_limit(self, owner, name, request)

    def get_limit(self, owner: str, name: str) -> LimitView:
        from punctual_functions.api import limits

        return limits.get_limit(self, owner, name)

    def list_limits(self, owner: str) -> LimitPageView:
        from punctual_functions.api import limits

        return limits.list_limits(self, owner)

    def delete_limit(self, owner: str, name: str) -> LimitView:
        from punctual_functions.api import limits

        return limits.delete_limit(self, owner, name)

    def settled(self, job: Job) -> Job:
        """The job with its derived status (a one-off job's end is derived from its run)."""
        return settled(self, job)

"""The reads: ``GET /v1/jobs`` and ``/v1/jobs/{job_id}``, a job's runs (``/runs``, ``/runs/{run_id}``),
and ``GET /v1/stats``."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from punctual_functions.api.answer_size import AnswerBudget
from punctual_functions.api.errors import InvalidInput
from punctual_functions.api.jobs import owned_job, owned_run, recent_runs
from punctual_functions.api.views import (
    JobPageView,
    JobView,
    QueueStatsView,
    RunPageView,
    RunView,
    StatsView,
    job_view,
    run_view,
)
from punctual_functions.core.model import Job, JobStatus, Reason, Run, RunStatus, job_history
from punctual_functions.core.ports import BadCursorError
from punctual_functions.core.sweep import sweep_lag

if TYPE_CHECKING:
    from punctual_functions.api.deps import Deps


def get_job(deps: Deps, owner: str, job_id: str) -> JobView:
    return job_view(deps, owned_job(deps, owner, job_id), deps.clock())


def tag_filter(text: str | None) -> tuple[str, str] | None:
    """``key=value`` as (key, value) (the key may hold ``:``, the value ``=``); ``InvalidInput`` for
    text without ``=``."""
    if text is None:
        return None
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise InvalidInput("a tag filter is key=value", "tag")
    return key, value


def list_jobs(
    deps: Deps,
    owner: str,
    *,
    limit: int,
    cursor: str | None,
    status: JobStatus | None,
    name: str | None,
    name_prefix: str | None = None,
    tag: tuple[str, str] | None = None,
) -> JobPageView:
    # A one-off job's COMPLETED or FAILED is derived from its run: its item still says ACTIVE.
    stored = None if status is None else frozenset({status})
    if status in (JobStatus.COMPLETED, JobStatus.FAILED):
        stored = frozenset({status, JobStatus.ACTIVE})
    histories: dict[str, list[Run]] = {}
    now = deps.clock()
    budget = AnswerBudget()  # a page's answer stays within Lambda's 6 MB (answer_size.py)

    def keep(job: Job) -> bool:
        if job.gone(now):
            return False  # on_complete delete: gone (DynamoDB's TTL removes the item later)
        if tag is not None and job.tags.get(tag[0]) != tag[1]:
            return False
        histories[job.job_id] = recent_runs(deps, job)
        if status is not None and job_history(job, histories[job.job_id]).status is not status:
            return False
        budget.take(job)
        return True

    try:
        jobs, next_cursor = deps.store.list_jobs(
            owner,
            limit=limit,
            cursor=cursor,
            statuses=stored,
            name=name,
            keep=keep,
            name_prefix=name_prefix,
        )
    except BadCursorError as error:
        raise InvalidInput(str(error), "cursor") from error
    # The calendars the page's jobs follow, in one read (not one per job).
    named = {job.calendar for job in jobs if job.calendar is not None}
    calendars = deps.store.get_calendars(owner, named) if named else {}
    return {
        "items": [
            job_view(deps, job, now, runs=histories.get(job.job_id), calendars=calendars) for job in jobs
        ],
        "next_cursor": next_cursor,
    }


def list_runs(
    deps: Deps,
    owner: str,
    job_id: str,
    *,
    limit: int,
    cursor: str | None,
    status: RunStatus | None,
    reason: Reason | None = None,
) -> RunPageView:
    owned_job(deps, owner, job_id)
    try:
        runs, next_cursor = deps.store.list_runs(
            job_id, limit=limit, cursor=cursor, status=status, reason=reason
        )
    except BadCursorError as error:
        raise InvalidInput(str(error), "cursor") from error
    return {"items": [run_view(run) for run in runs], "next_cursor": next_cursor}


def get_run(deps: Deps, owner: str, job_id: str, run_id: str) -> RunView:
    return run_view(owned_run(deps, owner, job_id, run_id), with_attempts=True)


def stats(deps: Deps, owner: str) -> StatsView:
    jobs: dict[str, int] = {}
    runs: dict[str, int] = {}
    now = deps.clock()
    owned = [job for job in deps.store.owner_jobs(owner) if not job.gone(now)]
    histories = deps.clock.parallel(lambda job: job_history(job, recent_runs(deps, job)), owned, 8, "stats")
    for history in histories:
        jobs[history.status.value] = jobs.get(history.status.value, 0) + 1
        for outcome, count in history.run_counts.items():
            runs[outcome] = runs.get(outcome, 0) + count
    oldest = deps.store.oldest_cursor(range(deps.settings.shard_count))
    lag = sweep_lag(oldest, deps.clock(), deps.settings.bucket_safety_seconds)
    return {
        "jobs": jobs,
        "runs": runs,
        "queue": cast(QueueStatsView, deps.dispatcher.queue.depth()),
        "dispatcher_lag_seconds": lag,
    }

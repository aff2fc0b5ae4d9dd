"""The runs' part of the ``Tables`` port in memory, mixed into ``MemoryStore``: each run's item with
the conditions of ``punctual_functions/core/store/runs.py`` (a start, a lease, an outcome, a mark)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from punctual.testing.fakes.items import (
    Triggers,
    ms,
    page,
    run_index_key,
    stored_run,
    stored_trigger,
    trigger_key,
)
from punctual_functions.core.model import (
    Attempt,
    Job,
    Reason,
    Run,
    RunStatus,
    Trigger,
    check_transition,
    lateness_of,
    started_run,
)
from punctual_functions.core.ports import RunNotOurs
from punctual_functions.core.resources import SK
from punctual_functions.core.store.items import as_stored_attempt
from punctual_functions.core.store.keys import in_run_listing


class MemoryRuns:
    """Implements the runs' methods of ``punctual_functions.core.ports.Tables`` on ``self.runs`` under
    ``self.lock`` (a retry's trigger goes to ``self.triggers``)."""

    lock: threading.RLock
    runs: dict[str, dict[str, Run]]
    triggers: Triggers
    get_job: Callable[..., Job | None]

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        with self.lock:
            return self.runs.get(job_id, {}).get(run_id)

    def get_run_and_job(self, job_id: str, run_id: str) -> tuple[Run | None, Job | None]:
        with self.lock:
            return self.get_run(job_id, run_id), self.get_job(job_id)

    def get_runs_and_jobs(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job]]:
        with self.lock:
            runs = {key: run for key in keys if (run := self.get_run(*key)) is not None}
            jobs = {job_id: job for job_id, _ in keys if (job := self.get_job(job_id)) is not None}
            return runs, jobs

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int,
        cursor: str | None = None,
        status: RunStatus | None = None,
        reason: Reason | None = None,
    ) -> tuple[list[Run], str | None]:
        with self.lock:
            runs = sorted(self.runs.get(job_id, {}).values(), key=lambda run: run.run_id, reverse=True)
            return page(
                runs,
                run_index_key,
                lambda run: (
                    (status is None or run.status is status) and (reason is None or run.reason is reason)
                ),
                limit,
                cursor,
                in_run_listing(job_id),
                SK,
                descending=True,
            )

    def get_runs(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Run]:
        with self.lock:
            found = {(job_id, run_id): self.runs.get(job_id, {}).get(run_id) for job_id, run_id in keys}
            return {key: run for key, run in found.items() if run is not None}

    def put_run(self, run: Run) -> bool:
        with self.lock:
            existing = self.runs.get(run.job_id, {}).get(run.run_id)
            if existing is not None and not (
                existing.job_version < run.job_version
                and existing.status in (RunStatus.QUEUED, RunStatus.SKIPPED)
            ):
                return False
            self.runs.setdefault(run.job_id, {})[run.run_id] = stored_run(run)
            return True

    def recent_runs(self, job_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            return sorted(self.runs.get(job_id, {}).values(), key=lambda run: run.run_id, reverse=True)[
                :limit
            ]

    def runs_before(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            earlier = sorted(
                (run for run in self.runs.get(job_id, {}).values() if run.run_id <= run_id),
                key=lambda run: run.run_id,
                reverse=True,
            )[: limit + 1]
            return [run for run in earlier if run.run_id != run_id][:limit]

    def runs_after(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        with self.lock:
            later = sorted(
                (run for run in self.runs.get(job_id, {}).values() if run.run_id > run_id),
                key=lambda run: run.run_id,
            )
            return later[:limit]

    def start_attempt(
        self, run: Run, *, token: str, now: datetime, lease_until: datetime, create: bool = False
    ) -> Run:
        check_transition(run.status, RunStatus.RUNNING)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None and create and run.status is RunStatus.QUEUED:
                stored = stored_run(run)  # the message overtook the dispatcher's write: create it
            holds = (
                stored is not None
                and stored.status is run.status
                and stored.attempt == run.attempt
                and (run.status is not RunStatus.RUNNING or stored.lease_until == run.lease_until)
            )
            if not holds:
                raise RunNotOurs(f"run {run.run_id} was started by someone else")
            assert stored is not None
            started = started_run(run, token=token, now=now, lease_until=lease_until)
            self.runs.setdefault(run.job_id, {})[run.run_id] = replace(
                stored,
                status=RunStatus.RUNNING,
                attempt=started.attempt,
                lease_token=token,
                lease_until=ms(lease_until),
                started_at=ms(started.started_at or now),
                lateness_ms=started.lateness_ms,
                executions=stored.executions + 1,
                reason=started.reason if run.reason is Reason.LIMITED else stored.reason,
                limited_ms=started.limited_ms if run.reason is Reason.LIMITED else stored.limited_ms,
            )
            return started

    def renew_lease(self, run: Run, lease_until: datetime) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None or not self._holds_lease(stored, run):
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, lease_until=ms(lease_until))
            return True

    @staticmethod
    def _holds_lease(stored: Run, run: Run) -> bool:
        return stored.lease_token == (run.lease_token or "") and stored.status is RunStatus.RUNNING

    def finish_attempt(
        self,
        run: Run,
        attempt: Attempt,
        *,
        status: RunStatus,
        now: datetime,
        next_attempt_at: datetime | None = None,
        retry_trigger: Trigger | None = None,
        started_late: datetime | None = None,
    ) -> None:
        check_transition(RunStatus.RUNNING, status)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            holds = stored is not None and self._holds_lease(stored, run)
            ours = as_stored_attempt(attempt)
            if not holds:
                if stored is not None and stored.status is status and stored.attempts[-1:] == (ours,):
                    return  # our own earlier write
                raise RunNotOurs(f"run {run.run_id} is no longer ours to finish")
            assert stored is not None
            recorded = replace(stored, attempts=(*stored.attempts, ours))
            if started_late is not None:
                recorded = replace(
                    recorded,
                    started_at=ms(started_late),
                    lateness_ms=lateness_of(stored, started_late),
                )
            self.runs[run.job_id][run.run_id] = replace(
                recorded,
                status=status,
                error=attempt.error or None,
                lease_until=None,
                lease_token=None,
                finished_at=ms(now) if status.is_terminal else stored.finished_at,
                next_attempt_at=ms(next_attempt_at) if next_attempt_at else stored.next_attempt_at,
            )
            if retry_trigger is not None:
                self.triggers[trigger_key(retry_trigger)] = stored_trigger(retry_trigger)

    def mark_run(
        self,
        run: Run,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None,
        create: bool = False,
        reason: Reason | None = None,
        overlap_with: str | None = None,
    ) -> bool:
        check_transition(run.status, status)
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None and create and run.status is RunStatus.QUEUED:
                stored = stored_run(run)  # the message overtook the dispatcher's write: create it
            if stored is None or stored.status is not run.status or stored.job_version != run.job_version:
                return False
            self.runs.setdefault(run.job_id, {})[run.run_id] = replace(
                stored,
                status=status,
                finished_at=ms(now),
                error=error or stored.error,
                reason=reason or stored.reason,
                overlap_with=overlap_with or stored.overlap_with,
            )
            return True

    def claim_alert(self, run: Run, kind: str) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if stored is None or kind in stored.alerts_sent:
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, alerts_sent=stored.alerts_sent | {kind})
            return True

    def mark_waiting(self, run: Run, behind: str) -> bool:
        with self.lock:
            stored = self.get_run(run.job_id, run.run_id)
            if (
                stored is None
                or stored.status is not RunStatus.QUEUED
                or stored.job_version != run.job_version
            ):
                return False
            self.runs[run.job_id][run.run_id] = replace(stored, overlap_with=behind)
            return True

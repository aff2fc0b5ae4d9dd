"""What the API does, one function per route, in domain terms (no HTTP here)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from functions.api.errors import (
    ApiError,
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    from_validation,
)
from functions.api.guards import MAX_BODY_BYTES
from functions.core.clock import SYSTEM_CLOCK, Clock
from functions.core.dispatching import Dispatcher
from functions.core.model import (
    RUN_COUNT_WINDOW,
    AlertKind,
    Alerts,
    Job,
    JobStatus,
    MisfirePolicy,
    OnComplete,
    OverlapPolicy,
    Reason,
    RetryPolicy,
    Run,
    RunKind,
    RunStatus,
    Trigger,
    TriggerState,
    bucket_of,
    bucket_start,
    fire_time,
    is_orphan,
    iso,
    job_history,
    make_trigger,
    new_job_id,
    run_id_for,
    runs_made,
)
from functions.core.ports import (
    BadCursorError,
    ConflictError,
    IdempotencyKeyTaken,
    JobExists,
    NameTaken,
    Tables,
)
from functions.core.schedule import Schedule, ScheduleError, parse_instant, parse_schedule
from functions.core.settings import Settings
from functions.core.ssrf_guard import NetworkPolicy
from functions.core.targets.validation import TargetError, target_region, validate_target
from functions.core.templating import TemplateError, check_templates

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from functions.api.models import AlertsIn, CreateJobIn, PatchJobIn, ScheduleIn, SqsTargetIn

# The most jobs one POST /v1/jobs/batch may create.
MAX_BATCH = 100
# The furthest a pause's ``until`` may be.
MAX_PAUSE = timedelta(days=366)

# Ids this API hands out; anything else cannot exist (and must not reach DynamoDB's key limits).
_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")


class JobService:
    def __init__(
        self,
        store: Tables,
        dispatcher: Dispatcher,
        settings: Settings,
        policy: NetworkPolicy,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.settings = settings
        self.policy = policy
        self.clock = clock

    # ------------------------------------------------------------------------------------ create

    def create_job(
        self, owner: str, request: CreateJobIn, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        view, trigger = self._create(owner, request, idempotency_key)
        if trigger is not None and self._dispatch_if_due(trigger, self.clock()):
            return self._as_dispatched(view)
        return view

    def create_jobs(
        self, owner: str, requests: list[Any], idempotency_key: str | None = None
    ) -> list[dict[str, Any]]:
        """Create up to ``MAX_BATCH`` jobs, each validated and answered on its own: ``{"index",
        "status": 201, "job"}`` or ``{"index", "status": 4xx, "error"}``. With an ``Idempotency-Key``,
        job ``i`` is created under ``<key>#<i>``: a retried batch answers each job as the first time.
        The jobs due within the look-ahead are dispatched together, in batches of messages."""
        if len(requests) > MAX_BATCH:
            raise InvalidInput(f"at most {MAX_BATCH} jobs in one request", "jobs")

        from pydantic import ValidationError

        from functions.api.models import CreateJobIn

        def one(index: int, raw: Any) -> tuple[dict[str, Any], Trigger | None]:
            try:
                if len(json.dumps(raw).encode()) > MAX_BODY_BYTES:
                    raise PayloadTooLarge("the job exceeds 64 KiB", "body")
                request = CreateJobIn.model_validate(raw)
                key = f"{idempotency_key}#{index}" if idempotency_key is not None else None
                view, trigger = self._create(owner, request, key)
            except ValidationError as error:
                refusal = from_validation([dict(problem) for problem in error.errors()])
                return {"index": index, "status": refusal.status_code, "error": refusal.body()}, None
            except ApiError as error:
                return {"index": index, "status": error.status_code, "error": error.body()}, None
            return {"index": index, "status": 201, "job": view}, trigger

        # Jobs are created concurrently, except that jobs naming the same name are created one after
        # the other in the batch's order: the earlier one gets the name, as if sent one by one.
        chains: dict[object, list[int]] = {}
        for index, raw in enumerate(requests):
            name = raw.get("name") if isinstance(raw, dict) else None
            chains.setdefault(name if isinstance(name, str) else index, []).append(index)

        def chain(indices: list[int]) -> list[tuple[dict[str, Any], Trigger | None]]:
            return [one(index, requests[index]) for index in indices]

        answers: list[tuple[dict[str, Any], Trigger | None]] = [({}, None)] * len(requests)
        chained = list(chains.values())
        for indices, results in zip(chained, self.clock.parallel(chain, chained, 8, "create"), strict=True):
            for index, result in zip(indices, results, strict=True):
                answers[index] = result
        now = self.clock()
        due = [trigger for _answer, trigger in answers if trigger and trigger.state is TriggerState.CLAIMED]
        if due:
            self.dispatcher.dispatch(due, now)
        dispatched = {trigger.job_id for trigger in due}
        for answer, _trigger in answers:
            if "job" in answer and answer["job"]["job_id"] in dispatched:
                answer["job"] = self._as_dispatched(answer["job"])
        return [answer for answer, _trigger in answers]

    def _create(
        self, owner: str, request: CreateJobIn, idempotency_key: str | None
    ) -> tuple[dict[str, Any], Trigger | None]:
        """The job's view, and its first trigger when this call wrote it (None for a replay)."""
        now = self.clock()
        fingerprint = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
        job_id: str | None = None
        if idempotency_key is not None:
            earlier = self._replay(owner, idempotency_key, fingerprint, now)
            if isinstance(earlier, str):
                job_id = earlier  # the first attempt died before writing its job: finish it
            elif earlier is not None:
                return earlier, None
        schedule = self._parse_schedule(request.schedule, now)
        target = self._validate_target(request.target.spec())
        self._check_templates(target, request.payload)
        self._check_jitter(schedule, request.jitter_seconds)
        self._check_max_runs(schedule, request.max_runs)
        alerts = self._alerts(request.alerts)
        first = self._first_fire_time(schedule, now)
        if job_id is None:
            # A one-off job without jitter lives in the trigger partition of its due minute, as its
            # own first trigger (one item to write); the id names that home. A jittered one derives
            # its jitter from its id, so its trigger's minute is not known before: an item of its own.
            one_off = not schedule.is_recurring and request.jitter_seconds == 0
            home = bucket_of(max(first, now)) if one_off else None
            job_id = new_job_id(home, self.settings.shard_count)
        job = Job(
            job_id=job_id,
            owner=owner,
            name=request.name,
            schedule=schedule,
            target=target,
            payload=request.payload,
            retry=RetryPolicy(**request.retry.model_dump()),
            timeout_seconds=request.timeout_seconds,
            jitter_seconds=request.jitter_seconds,
            pause_on_failures=request.pause_on_failures,
            max_runs=request.max_runs,
            alerts=alerts,
            dead_letter=self._dead_letter(request.dead_letter),
            on_complete=OnComplete(request.on_complete),
            delete_after_days=request.delete_after_days,
            tags=request.tags,
            secret=request.signing_secret,
            misfire=MisfirePolicy(request.schedule.misfire),
            catchup_seconds=request.schedule.catchup_seconds,
            overlap=OverlapPolicy(request.schedule.overlap),
            created_at=now,
            updated_at=now,
            next_trigger_at=first,
        )
        trigger = self._trigger(job, first, now, new_job=True)
        idempotency = (idempotency_key, fingerprint) if idempotency_key is not None else None
        try:
            try:
                self.store.create_job(job, trigger, idempotency)
            except NameTaken:
                ended = self._ended_name_holder(owner, request.name)
                if ended is None:
                    raise
                self.store.create_job(job, trigger, idempotency, replacing_name_of=ended)
        except ConflictError as error:
            if isinstance(error, IdempotencyKeyTaken | JobExists) and idempotency_key is not None:
                # A concurrent attempt of the same create won: answer what it answered.
                replay = self._replay(owner, idempotency_key, fingerprint, now)
                if isinstance(replay, dict):
                    return replay, None
                under_way = "a create with this Idempotency-Key is under way: retry it"
                raise Conflict(under_way, "Idempotency-Key") from error
            raise Conflict(f"a live job named {request.name!r} exists already", "name") from error
        return self.job_view(job, now, runs=[]), trigger

    def _ended_name_holder(self, owner: str, name: str | None) -> str | None:
        """The id of the ended job still holding ``name``: a one-off job that ran keeps its name item
        (its end is derived from its run, not written), and the next job that wants it takes it."""
        holder = self.store.name_holder(owner, name) if name else None
        if holder is None:
            return None
        job_id, reserved_at = holder
        job = self.store.get_job(job_id)
        if job is None:
            # A create that reserved the name and died before writing its job (after the grace: it
            # may still be under way).
            return job_id if is_orphan(reserved_at, self.clock()) else None
        return None if self._settled(job).is_live else job.job_id

    def _replay(self, owner: str, key: str, fingerprint: str, now: datetime) -> dict[str, Any] | str | None:
        """The first answer to this create, or the job id it was writing when it died (its record is
        written first), or None for a key not seen."""
        earlier = self.store.get_idempotent_create(owner, key, now)
        if earlier is None:
            return None
        job_id, seen = earlier
        if seen != fingerprint:
            raise Conflict("this Idempotency-Key was used for a different request", "Idempotency-Key")
        job = self.store.get_job(job_id)
        return self.job_view(job, now) if job is not None else job_id

    def _parse_schedule(self, spec: ScheduleIn, now: datetime) -> Schedule:
        return schedule_of(spec, now, self.settings)

    def _validate_target(self, spec: dict[str, Any]) -> dict[str, Any]:
        try:
            target = validate_target(spec, self.policy)
        except TargetError as error:
            raise InvalidInput(error.reason, error.field) from error
        if target["type"] != "http" and not target_allowed(target, self.settings):
            field = {"lambda": "function", "sqs": "queue_url", "sns": "topic_arn", "eventbridge": "bus"}[
                target["type"]
            ]
            raise InvalidInput(
                "this deployment does not allow jobs to target this resource", f"target.{field}"
            )
        return target

    @staticmethod
    def _check_jitter(schedule: Schedule, jitter_seconds: int) -> None:
        gap = schedule.shortest_gap_seconds()
        if gap is not None and jitter_seconds >= gap:
            raise InvalidInput(
                f"must be less than the {gap} s between the schedule's closest fire times, so that "
                "occurrences keep their order",
                "jitter_seconds",
            )

    @staticmethod
    def _check_max_runs(schedule: Schedule, max_runs: int | None) -> None:
        if max_runs is not None and not schedule.is_recurring:
            raise InvalidInput("only a recurring schedule takes a max_runs: a one-off runs once", "max_runs")

    def _alerts(self, request: AlertsIn | None) -> Alerts | None:
        """The job's alerts, validated: an SNS topic of the allow-list or a webhook the SSRF guard
        lets through, and at least one kind."""
        if request is None:
            return None
        if request.target.spec().get("type") not in ("http", "sns"):
            raise InvalidInput(
                "alerts go to an SNS topic or a webhook (type sns or http)", "alerts.target.type"
            )
        try:
            target = self._validate_target(request.target.spec())
        except InvalidInput as error:
            raise InvalidInput(error.reason, f"alerts.{error.field}") from error
        alerts = Alerts(
            target=target,
            failed=request.failed,
            missed=request.missed,
            late_seconds=request.late_seconds,
            running_seconds=request.running_seconds,
        )
        if not any(alerts.wants(kind) for kind in AlertKind):
            raise InvalidInput(
                "name at least one alert: failed, missed, late_seconds or running_seconds", "alerts"
            )
        return alerts

    def _dead_letter(self, request: SqsTargetIn | None) -> dict[str, Any] | None:
        """The job's dead-letter queue, validated like a target (the deployment's allow-list)."""
        if request is None:
            return None
        try:
            return self._validate_target(request.spec())
        except InvalidInput as error:
            field = (error.field or "target").removeprefix("target")
            raise InvalidInput(error.reason, f"dead_letter{field}") from error

    def _runs_made(self, job: Job) -> int:
        """The runs counted against ``max_runs`` so far, from the history (a chain the API starts
        carries them on: ``Trigger.runs_before``); only read for a job that has a limit."""
        return runs_made(self._recent_runs(job)) if job.max_runs is not None else 0

    @staticmethod
    def _check_templates(target: dict[str, Any], payload: Any) -> None:
        try:
            check_templates(target, payload)
        except TemplateError as error:
            raise InvalidInput(error.reason, error.field) from error

    @staticmethod
    def _first_fire_time(schedule: Schedule, now: datetime) -> datetime:
        first = schedule.next_after(now) if schedule.is_recurring else schedule.first_fire_time()
        if first is None:
            raise InvalidInput("the schedule has no fire time in the future", "schedule")
        return first

    def _due_soon(self, fire_at: datetime, now: datetime) -> bool:
        return fire_at - now <= timedelta(seconds=self.settings.lookahead_seconds)

    def _trigger(
        self,
        job: Job,
        first: datetime,
        now: datetime,
        fire_at: datetime | None = None,
        *,
        new_job: bool = False,
    ) -> Trigger:
        """The trigger of ``job``'s first occurrence at ``first``, due at ``fire_at`` (default: its
        time plus its jitter). Held (``make_trigger``) when due within the look-ahead: this request
        dispatches it itself, and a sweep listing it meanwhile (a tick at the same moment) must not
        send it a second time. The chain it starts counts on from the runs made (``max_runs``)."""
        fire = fire_at or fire_time(job, first)
        shards = self.settings.shard_count
        return make_trigger(
            job,
            first,
            now=now,
            shard_count=shards,
            fire_at=fire,
            held=self._due_soon(fire, now),
            runs_before=0 if new_job else self._runs_made(job),
        )

    def _dispatch_if_due(self, trigger: Trigger, now: datetime) -> bool:
        """Dispatch the trigger now if it falls due before the next sweep could, that is, if it was
        written held (``_trigger``); whether it did. One written pending is the sweep's, even when the
        request took long enough for it to fall within the look-ahead since: sent here too, it went
        out twice, the sweep taking it for one no sweep had sent (``functions/core/frontier.py``)."""
        if trigger.state is not TriggerState.CLAIMED:
            return False
        # The sweep for this minute may have run already: dispatch now (the trigger is the safety net
        # if this process dies before the message is sent).
        self.dispatcher.dispatch([trigger], now)
        return True

    def _as_dispatched(self, view: dict[str, Any]) -> dict[str, Any]:
        """The view of a job this request has just dispatched: read again if the dispatch may have
        ended it (a chain with ``max_runs`` or ``end_at`` set off its last run within the
        look-ahead: the job is COMPLETED already, and a read right after says so)."""
        if view["max_runs"] is None and view["schedule"].get("end_at") is None:
            return view
        job = self.store.get_job(view["job_id"])
        if job is None or job.status is not JobStatus.COMPLETED:
            return view
        return self.job_view(job, self.clock())

    # ------------------------------------------------------------------------------------- reads

    def get_job(self, owner: str, job_id: str) -> dict[str, Any]:
        return self.job_view(self._owned_job(owner, job_id), self.clock())

    def list_jobs(
        self,
        owner: str,
        *,
        limit: int,
        cursor: str | None,
        status: JobStatus | None,
        name: str | None,
        name_prefix: str | None = None,
    ) -> dict[str, Any]:
        # A one-off job's COMPLETED or FAILED is derived from its run: its item still says ACTIVE.
        stored = None if status is None else frozenset({status})
        if status in (JobStatus.COMPLETED, JobStatus.FAILED):
            stored = frozenset({status, JobStatus.ACTIVE})
        histories: dict[str, list[Run]] = {}
        now = self.clock()

        def keep(job: Job) -> bool:
            if job.gone(now):
                return False  # on_complete delete: gone (DynamoDB's TTL removes the item later)
            histories[job.job_id] = self._recent_runs(job)
            return status is None or job_history(job, histories[job.job_id]).status is status

        try:
            jobs, next_cursor = self.store.list_jobs(
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
        return {
            "items": [self.job_view(job, now, runs=histories.get(job.job_id)) for job in jobs],
            "next_cursor": next_cursor,
        }

    def list_runs(
        self,
        owner: str,
        job_id: str,
        *,
        limit: int,
        cursor: str | None,
        status: RunStatus | None,
        reason: Reason | None = None,
    ) -> dict[str, Any]:
        self._owned_job(owner, job_id)
        try:
            runs, next_cursor = self.store.list_runs(
                job_id, limit=limit, cursor=cursor, status=status, reason=reason
            )
        except BadCursorError as error:
            raise InvalidInput(str(error), "cursor") from error
        return {"items": [run_view(run) for run in runs], "next_cursor": next_cursor}

    def get_run(self, owner: str, job_id: str, run_id: str) -> dict[str, Any]:
        return run_view(self._owned_run(owner, job_id, run_id), with_attempts=True)

    def stats(self, owner: str) -> dict[str, Any]:
        jobs: dict[str, int] = {}
        runs: dict[str, int] = {}
        now = self.clock()
        owned = [job for job in self.store.owner_jobs(owner) if not job.gone(now)]
        histories = self.clock.parallel(
            lambda job: job_history(job, self._recent_runs(job)), owned, 8, "stats"
        )
        for history in histories:
            jobs[history.status.value] = jobs.get(history.status.value, 0) + 1
            for outcome, count in history.run_counts.items():
                runs[outcome] = runs.get(outcome, 0) + count
        oldest = self.store.oldest_cursor(range(self.settings.shard_count))
        lag = (self.clock() - bucket_start(oldest)).total_seconds() if oldest else None
        return {
            "jobs": jobs,
            "runs": runs,
            "queue": self.dispatcher.queue.depth(),
            "dispatcher_lag_seconds": max(0.0, lag) if lag is not None else None,
        }

    # ----------------------------------------------------------------------------------- changes

    def patch_job(self, owner: str, job_id: str, request: PatchJobIn) -> dict[str, Any]:
        now = self.clock()
        job = self._owned_job(owner, job_id)
        if not job.is_live:
            raise Conflict(f"a {job.status.value} job cannot be changed", "status")
        given = request.model_fields_set
        changes: dict[str, Any] = {"updated_at": now}
        if "name" in given:
            changes["name"] = request.name
        if "target" in given:
            if request.target is None:
                raise InvalidInput("a job needs a target", "target")
            changes["target"] = self._validate_target(request.target.spec())
        if "payload" in given:
            changes["payload"] = request.payload
        if "retry" in given and request.retry is not None:
            changes["retry"] = RetryPolicy(**request.retry.model_dump())
        if "timeout_seconds" in given and request.timeout_seconds is not None:
            changes["timeout_seconds"] = request.timeout_seconds
        if "tags" in given and request.tags is not None:
            changes["tags"] = request.tags
        if "signing_secret" in given:
            changes["secret"] = request.signing_secret
        first = None
        if "schedule" in given:
            if request.schedule is None:
                raise InvalidInput("a job needs a schedule", "schedule")
            schedule = self._parse_schedule(request.schedule, now)
            changes.update(
                schedule=schedule,
                misfire=MisfirePolicy(request.schedule.misfire),
                catchup_seconds=request.schedule.catchup_seconds,
                overlap=OverlapPolicy(request.schedule.overlap),
            )
        if "pause_on_failures" in given:
            changes["pause_on_failures"] = request.pause_on_failures
        if "jitter_seconds" in given and request.jitter_seconds is not None:
            changes["jitter_seconds"] = request.jitter_seconds
        if "max_runs" in given:
            changes["max_runs"] = request.max_runs
        if "alerts" in given:
            changes["alerts"] = self._alerts(request.alerts)
        if "dead_letter" in given:
            changes["dead_letter"] = self._dead_letter(request.dead_letter)
        if "on_complete" in given and request.on_complete is not None:
            changes["on_complete"] = OnComplete(request.on_complete)
        if "delete_after_days" in given and request.delete_after_days is not None:
            changes["delete_after_days"] = request.delete_after_days
        if {"schedule", "jitter_seconds", "max_runs"} & given:
            # New fire times (or a new limit, counted again from the history): the triggers written
            # for the old ones must not fire (a new version), a new chain starts.
            schedule = changes.get("schedule", job.schedule)
            self._check_jitter(schedule, changes.get("jitter_seconds", job.jitter_seconds))
            self._check_max_runs(schedule, changes.get("max_runs", job.max_runs))
            first = self._first_fire_time(schedule, now)
            changes.update(
                version=job.version + 1, next_trigger_at=first if job.status is JobStatus.ACTIVE else None
            )
        updated = replace(job, **changes)
        if "target" in given or "payload" in given:
            self._check_templates(updated.target, updated.payload)
        # A new schedule of an active job starts its chain again from the first fire time; of a job
        # paused until a time, from its first occurrence after that time, as the pause wrote it (the
        # pause's own trigger belongs to the old version and is dropped).
        trigger = None
        if first is not None and job.status is JobStatus.ACTIVE:
            trigger = self._trigger(updated, first, now)
        elif first is not None and updated.pause_until is not None:
            resumes = updated.first_after_pause()
            if resumes is not None:
                due = max(fire_time(updated, resumes), updated.pause_until)
                trigger = self._trigger(updated, resumes, now, due)
        self._write(job, updated, trigger)
        if trigger is not None and self._dispatch_if_due(trigger, now):
            return self._as_dispatched(self.job_view(updated, now))
        return self.job_view(updated, now)

    def pause_job(
        self, owner: str, job_id: str, note: str | None = None, until: str | None = None
    ) -> dict[str, Any]:
        """Pause, saying why (``note``) and, with ``until``, when it is active again. Pausing a paused
        job again with a note or an ``until`` replaces them (it stays paused since it was)."""
        now = self.clock()
        job = self._owned_job(owner, job_id)
        if job.status is JobStatus.PAUSED and note is None and until is None:
            return self.job_view(job, now)
        if job.status not in (JobStatus.ACTIVE, JobStatus.PAUSED):
            raise Conflict(f"a {job.status.value} job cannot be paused", "status")
        resume_at = None
        if until is not None:
            resume_at = self._parse_until(until, job, now)
        paused = job.paused(now, by=owner, note=note, until=resume_at)
        first = paused.first_after_pause()
        # The occurrence the job resumes with, dispatched ahead like any other (the dispatcher and the
        # worker count the job active from ``until``), so it fires at its second.
        trigger = None
        if first is not None and resume_at is not None:
            trigger = self._trigger(paused, first, now, max(fire_time(paused, first), resume_at))
        self._write(job, paused, trigger)
        if trigger is not None:
            self._dispatch_if_due(trigger, now)
        return self.job_view(paused, now)

    def _parse_until(self, until: str, job: Job, now: datetime) -> datetime:
        moment = instant_of(until, job.schedule.timezone, "until")
        if moment <= now:
            raise InvalidInput(f"until ({iso(moment)}) is not in the future", "until")
        if moment > now + MAX_PAUSE:
            raise InvalidInput("until may be at most a year away; pause without it instead", "until")
        return moment

    def resume_job(self, owner: str, job_id: str) -> dict[str, Any]:
        """Continue from the first occurrence at or after now: what fell due while paused does not
        run (its row in the history says so; a backfill runs it after all)."""
        now = self.clock()
        job = self._owned_job(owner, job_id)
        if job.status is JobStatus.ACTIVE:
            return self.job_view(job, now)
        if job.status is not JobStatus.PAUSED:
            raise Conflict(f"a {job.status.value} job cannot be resumed", "status")
        first = job.resume_point(now)
        resumed = job.resumed(now, first)
        trigger = self._trigger(resumed, first, now) if first else None
        self._write(job, resumed, trigger)
        row = self.dispatcher.pause_row(job, now, now)
        if row is not None:
            self.store.put_run(row)  # the pause in the history: what did not run, why, who paused
        if trigger is not None and self._dispatch_if_due(trigger, now):
            return self._as_dispatched(self.job_view(resumed, now))
        return self.job_view(resumed, now)

    def run_now(self, owner: str, job_id: str) -> dict[str, Any]:
        now = self.clock()
        job = self._owned_job(owner, job_id)
        if job.status is JobStatus.CANCELLED:
            raise Conflict("a cancelled job cannot run", "status")
        trigger = make_trigger(
            job, now, now=now, shard_count=self.settings.shard_count, kind=RunKind.MANUAL, held=True
        )
        self.store.put_trigger(trigger)
        self.dispatcher.dispatch([trigger], now)
        run = self.store.get_run(job_id, trigger.run_id)
        if run is None:  # the trigger is in the table: the next sweep dispatches it
            return {"run_id": trigger.run_id, "status": RunStatus.SCHEDULED.value, "scheduled_for": iso(now)}
        return run_view(run)

    def cancel_job(self, owner: str, job_id: str) -> dict[str, Any]:
        now = self.clock()
        job = self._owned_job(owner, job_id)
        if job.status is JobStatus.CANCELLED:
            return self.job_view(job, now)
        if not job.is_live:
            raise Conflict(f"a {job.status.value} job has already ended", "status")
        cancelled = replace(
            job, status=JobStatus.CANCELLED, version=job.version + 1, next_trigger_at=None, updated_at=now
        )
        self._write(job, cancelled, None)
        return self.job_view(cancelled, now)

    def cancel_run(self, owner: str, job_id: str, run_id: str) -> dict[str, Any]:
        """A queued run never starts; a running one loses its lease (its worker aborts the call at
        the next heartbeat) and is not retried."""
        now = self.clock()
        for _ in range(3):
            run = self._owned_run(owner, job_id, run_id)
            if run.status.is_terminal:
                raise Conflict(f"the run has already finished ({run.status.value})", "status")
            cancelled_by_request = self.store.mark_run(
                run, RunStatus.CANCELLED, now=now, error="cancelled by request", reason=Reason.CANCELLED
            )
            if cancelled_by_request:
                cancelled = self.store.get_run(job_id, run_id)
                assert cancelled is not None
                return run_view(cancelled, with_attempts=True)
        raise Conflict("the run kept changing; try again", "status")

    def _write(self, before: Job, after: Job, trigger: Trigger | None) -> None:
        try:
            try:
                self.store.update_job(before, after, trigger=trigger)
            except NameTaken:
                ended = self._ended_name_holder(after.owner, after.name)
                if ended is None or ended == after.job_id:
                    raise
                self.store.update_job(before, after, trigger=trigger, replacing_name_of=ended)
        except ConflictError as error:
            if isinstance(error, NameTaken):
                raise Conflict(f"a live job named {after.name!r} exists already", "name") from error
            raise Conflict("the job was changed concurrently; read it again and retry", "version") from error

    def _owned_run(self, owner: str, job_id: str, run_id: str) -> Run:
        self._owned_job(owner, job_id)
        run = self.store.get_run(job_id, run_id) if _ID.fullmatch(run_id) else None
        if run is None:
            raise NotFound(f"run {run_id} not found", "run_id")
        return run

    def owned_job(self, owner: str, job_id: str) -> Job:
        """The caller's job as it stands (404 for another owner's, as for a missing one)."""
        return self._owned_job(owner, job_id)

    def _owned_job(self, owner: str, job_id: str) -> Job:
        """The caller's job; another owner's job is indistinguishable from a missing one."""
        if not _ID.fullmatch(job_id):
            raise NotFound(f"job {job_id[:64]} not found", "job_id")
        job = self.store.get_job(job_id)
        # Another owner's job is indistinguishable from a missing one.
        if job is None or job.owner != owner or job.gone(self.clock()):
            raise NotFound(f"job {job_id} not found", "job_id")
        return self._settled(job.as_of(self.clock()))

    def _settled(self, job: Job) -> Job:
        """The job with its derived status: an ACTIVE one-off job whose run ended is COMPLETED or
        FAILED (the worker writes the run alone; docs/architecture.md, "The write path")."""
        at = job.schedule.first_fire_time()
        if job.status is not JobStatus.ACTIVE or job.schedule.is_recurring or at is None:
            return job
        run = self.store.get_run(job.job_id, run_id_for(job.job_id, at, RunKind.SCHEDULED))
        return replace(job, status=job_history(job, [run] if run else []).status)

    def _recent_runs(self, job: Job) -> list[Run]:
        return self.store.recent_runs(job.job_id, limit=RUN_COUNT_WINDOW)

    def job_view(self, job: Job, now: datetime, runs: list[Run] | None = None) -> dict[str, Any]:
        """``runs``: the job's newest runs, newest first (read here when not given)."""
        job = job.as_of(now)
        history_runs = self._recent_runs(job) if runs is None else runs
        history = job_history(job, history_runs)
        job = replace(job, status=history.status)
        # What will fire next, from the schedule: the dispatcher claims occurrences ahead of time, so
        # its own frontier (next_trigger_at) is often one occurrence further than the next firing.
        # max_runs: the runs left are those not yet due (a run set off ahead of its time is still to come).
        remaining = None
        if job.max_runs is not None:
            due = [run for run in history_runs if run.due_at <= now]
            remaining = max(0, job.max_runs - runs_made(due))
        upcoming: list[datetime] = []
        # A recurring job is COMPLETED once its last run is set off, up to the look-ahead before that
        # run's time: the runs still to fire are still upcoming (the schedule's end or max_runs bounds).
        ended_ahead = job.status is JobStatus.COMPLETED and job.schedule.is_recurring
        if job.status is JobStatus.ACTIVE or ended_ahead:
            if job.schedule.is_recurring:
                upcoming = job.schedule.upcoming(now, 5 if remaining is None else min(5, remaining))
            else:
                at = job.schedule.first_fire_time()
                upcoming = [at] if at is not None else []
        schedule: dict[str, Any] = dict(job.schedule.to_dict())
        schedule.pop("anchor", None)
        schedule.update(
            {
                "misfire": job.misfire.value,
                "overlap": job.overlap.value,
                "catchup_seconds": job.catchup_seconds,
            }
        )
        last_run = history.last_run.summary() if history.last_run else None
        return {
            "job_id": job.job_id,
            "name": job.name,
            "status": job.status.value,
            "schedule": schedule,
            "target": job.target,
            "payload": job.payload,
            "retry": job.retry.to_dict(),
            "timeout_seconds": job.timeout_seconds,
            "jitter_seconds": job.jitter_seconds,
            "pause_on_failures": job.pause_on_failures,
            "max_runs": job.max_runs,
            "alerts": job.alerts.to_dict() if job.alerts is not None else None,
            "dead_letter": job.dead_letter,
            "remaining_runs": remaining,
            "on_complete": job.on_complete.value,
            "delete_after_days": job.delete_after_days if job.on_complete is OnComplete.DELETE else None,
            "deletes_at": iso(job.expires_at),
            "pause": {
                "at": iso(job.paused_at),
                "by": job.paused_by,
                "note": job.pause_note,
                "until": iso(job.pause_until),
            }
            if job.status is JobStatus.PAUSED
            else None,
            "tags": job.tags,
            "has_signing_secret": job.secret is not None,
            "next_run_at": iso(upcoming[0]) if upcoming else None,
            "upcoming": [iso(moment) for moment in upcoming],
            "last_run": last_run,
            "run_counts": history.run_counts,
            "version": job.version,
            "created_at": iso(job.created_at),
            "updated_at": iso(job.updated_at),
        }


def instant_of(text: str, timezone: str, field: str) -> datetime:
    """A time the API takes beside a schedule (an ``until``, a backfill's or an outage's bounds); a
    naive one is in the schedule's zone. Refused naming ``field``."""
    try:
        return parse_instant(text, timezone, field)
    except ScheduleError as error:
        raise InvalidInput(error.reason, error.field) from error


def schedule_of(spec: ScheduleIn, now: datetime, settings: Settings) -> Schedule:
    """A schedule as the API takes it (a job's, a preview's), validated; refused naming the field."""
    try:
        return parse_schedule(
            at=spec.at,
            cron=spec.cron,
            rate=spec.rate,
            timezone=spec.timezone,
            start_at=spec.start_at,
            end_at=spec.end_at,
            now=now,
            min_interval_seconds=settings.min_interval_seconds,
        )
    except ScheduleError as error:
        raise InvalidInput(error.reason, error.field) from error


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
        "jitter_ms": run.jitter_ms,
        "reason": run.reason.value if run.reason else None,
        "covers": run.covers,
        "covers_until": iso(run.covers_until),
        "note": run.note,
        "by": run.by,
        "overlap_with": run.overlap_with,
        "attempt": run.attempt,
        # How long its target took on its last attempt that finished (the run's own times include any
        # waits between retries).
        "duration_ms": next(
            (a.duration_ms for a in reversed(run.attempts) if a.duration_ms is not None), None
        ),
        "executions": run.executions,
        "next_attempt_at": iso(run.next_attempt_at) if run.status is RunStatus.RETRYING else None,
        "error": run.error,
    }
    # A list's rows leave the attempts out (null), one run's view has them.
    view["attempts"] = [attempt.to_dict() for attempt in run.attempts] if with_attempts else None
    return view


def target_identifiers(target: dict[str, Any], settings: Settings) -> list[str]:
    """The names under which an AWS target may be allowed: as given, and as the ARN it resolves to.

    A bare name (a function name, the bus ``default``) means a resource of the deployment's own
    account, partition and region, which is how Lambda and EventBridge resolve it when delivering.
    """
    kind = target["type"]
    partition, region, account = settings.partition, settings.region, settings.account_id
    if kind == "lambda":
        name = str(target["function"])
        if name.startswith("arn:") or not account:
            return [name]
        return [name, f"arn:{partition}:lambda:{region}:{account}:function:{name}"]
    if kind == "sqs":
        url = str(target["queue_url"])
        parts = urlsplit(url)
        path = parts.path.strip("/").split("/")
        # The region the worker delivers in (a legacy, FIPS or VPC-endpoint host names it too).
        host_region = target_region(target) or region
        if len(path) == 2:
            return [url, f"arn:{partition}:sqs:{host_region}:{path[0]}:{path[1]}"]
        return [url]
    if kind == "sns":
        return [str(target["topic_arn"])]
    bus = str(target.get("bus", "default"))
    if bus.startswith("arn:") or not account:
        return [bus]
    return [bus, f"arn:{partition}:events:{region}:{account}:event-bus/{bus}"]


def target_allowed(target: dict[str, Any], settings: Settings) -> bool:
    """Whether the deployment lets jobs target this AWS resource (``allowed_target_arns``)."""
    identifiers = target_identifiers(target, settings)
    return any(
        fnmatch.fnmatchcase(identifier, pattern)
        for pattern in settings.allowed_target_arns
        for identifier in identifiers
    )

"""``POST /v1/jobs`` and ``POST /v1/jobs/batch``: create jobs, and answer a retried create (the same
``Idempotency-Key``) as the first time."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from punctual_functions.api.errors import ApiError, Conflict, InvalidInput, PayloadTooLarge, from_validation
from punctual_functions.api.guards import MAX_BODY_BYTES
from punctual_functions.api.jobs import dispatch_if_due, ended_name_holder, trigger_for
from punctual_functions.api.policy import (
    checked_alerts,
    checked_dead_letter,
    checked_target,
    checked_templates,
)
from punctual_functions.api.schedules import (
    calendar_of,
    check_jitter,
    check_max_runs,
    first_fire_time,
    schedule_of,
)
from punctual_functions.api.trail import change_of
from punctual_functions.api.views import CreatedJobView, JobView, as_dispatched, job_view
from punctual_functions.core.model import Job, RetryPolicy, Trigger, TriggerState, bucket_of, new_job_id
from punctual_functions.core.ports import ConflictError, IdempotencyKeyTaken, JobExists, NameTaken
from punctual_functions.core.timing import timing_of
from punctual_functions.core.trail import ChangeAction

if TYPE_CHECKING:  # the models load with pydantic, when a request has a body to check
    from punctual_functions.api.deps import Deps
    from punctual_functions.api.requests import CreateJobIn

# The most jobs one POST /v1/jobs/batch may create.
MAX_BATCH: Final = 100


def create_job(deps: Deps, owner: str, request: CreateJobIn, idempotency_key: str | None = None) -> JobView:
    view, trigger = _create(deps, owner, request, idempotency_key)
    if trigger is not None and dispatch_if_due(deps, trigger, deps.clock()):
        return as_dispatched(deps, view)
    return view


def create_jobs(
    deps: Deps, owner: str, requests: list[Any], idempotency_key: str | None = None
) -> list[CreatedJobView]:
    """Create up to ``MAX_BATCH`` jobs, each validated and answered on its own: ``{"index",
    "status": 201, "job"}`` or ``{"index", "status": 4xx, "error"}``. With an ``Idempotency-Key``,
    job ``i`` is created under ``<key>#<i>``: a retried batch answers each job as the first time.
    The jobs due within the look-ahead are dispatched together, in batches of messages."""
    if len(requests) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} jobs in one request", "jobs")

    from pydantic import ValidationError

    from punctual_functions.api.requests import CreateJobIn

    def one(index: int, raw: Any) -> tuple[CreatedJobView, Trigger | None]:
        try:
            if len(json.dumps(raw).encode()) > MAX_BODY_BYTES:
                raise PayloadTooLarge("the job exceeds 64 KiB", "body")
            request = CreateJobIn.model_validate(raw)
            key = f"{idempotency_key}#{index}" if idempotency_key is not None else None
            view, trigger = _create(deps, owner, request, key)
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

    def chain(indices: list[int]) -> list[tuple[CreatedJobView, Trigger | None]]:
        return [one(index, requests[index]) for index in indices]

    answers: list[tuple[CreatedJobView, Trigger | None]] = [({"index": -1, "status": 0}, None)] * len(
        requests
    )
    chained = list(chains.values())
    for indices, results in zip(chained, deps.clock.parallel(chain, chained, 8, "create"), strict=True):
        for index, result in zip(indices, results, strict=True):
            answers[index] = result
    now = deps.clock()
    due = [trigger for _answer, trigger in answers if trigger and trigger.state is TriggerState.CLAIMED]
    if due:
        deps.dispatcher.dispatch(due, now)
    dispatched = {trigger.job_id for trigger in due}
    for answer, _trigger in answers:
        if "job" in answer and answer["job"]["job_id"] in dispatched:
            answer["job"] = as_dispatched(deps, answer["job"])
    return [answer for answer, _trigger in answers]


def _create(
    deps: Deps, owner: str, request: CreateJobIn, idempotency_key: str | None
) -> tuple[JobView, Trigger | None]:
    """The job's view, and its first trigger when this call wrote it (None for a replay)."""
    now = deps.clock()
    fingerprint = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
    job_id: str | None = None
    if idempotency_key is not None:
        earlier = _replay(deps, owner, idempotency_key, fingerprint, now)
        if isinstance(earlier, str):
            job_id = earlier  # the first attempt died before writing its job: finish it
        elif earlier is not None:
            return earlier, None
    schedule = schedule_of(request.schedule, now, deps.settings)
    target = checked_target(deps, request.target.spec(), owner)
    checked_templates(target, request.payload)
    check_jitter(schedule, request.jitter_seconds)
    check_max_runs(schedule, request.max_runs)
    alerts = checked_alerts(deps, request.alerts, owner)
    calendar = calendar_of(deps, owner, request.schedule, schedule)
    first = first_fire_time(timing_of(schedule, calendar, request.schedule.on_excluded), now)
    if job_id is None:
        # A one-off job without jitter lives in the trigger partition of its due minute, as its
        # own first trigger (one item to write); the id names that home. A jittered one derives
        # its jitter from its id, so its trigger's minute is not known before: an item of its own.
        one_off = not schedule.is_recurring and request.jitter_seconds == 0
        home = bucket_of(max(first, now)) if one_off else None
        job_id = new_job_id(home, deps.settings.shard_count)
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
        max_concurrent=request.max_concurrent,
        alerts=alerts,
        dead_letter=checked_dead_letter(deps, request.dead_letter, owner),
        on_complete=request.on_complete,
        delete_after_days=request.delete_after_days,
        tags=request.tags,
        secret=request.signing_secret,
        misfire=request.schedule.misfire,
        catchup_seconds=request.schedule.catchup_seconds,
        overlap=request.schedule.overlap,
        calendar=request.schedule.calendar,
        on_excluded=request.schedule.on_excluded,
        created_at=now,
        updated_at=now,
        next_trigger_at=first,
        revision=1,
    )
    change = change_of(ChangeAction.CREATED, None, job, now)
    trigger = trigger_for(deps, job, first, now, new_job=True)
    idempotency = (idempotency_key, fingerprint) if idempotency_key is not None else None
    try:
        try:
            deps.store.create_job(job, trigger, idempotency, change=change)
        except NameTaken:
            ended = ended_name_holder(deps, owner, request.name)
            if ended is None:
                raise
            deps.store.create_job(job, trigger, idempotency, replacing_name_of=ended, change=change)
    except ConflictError as error:
        if isinstance(error, IdempotencyKeyTaken | JobExists) and idempotency_key is not None:
            # A concurrent attempt of the same create won: answer what it answered.
            replay = _replay(deps, owner, idempotency_key, fingerprint, now)
            if isinstance(replay, dict):
                return replay, None
            under_way = "a create with this Idempotency-Key is under way: retry it"
            raise Conflict(under_way, "Idempotency-Key") from error
        raise Conflict(f"a live job named {request.name!r} exists already", "name") from error
    # The calendar read above serves the view too (no second read).
    known = {calendar.name: calendar} if calendar is not None else None
    return job_view(deps, job, now, runs=[], calendars=known), trigger


def _replay(deps: Deps, owner: str, key: str, fingerprint: str, now: datetime) -> JobView | str | None:
    """The first answer to this create, or the job id it was writing when it died (its record is
    written first), or None for a key not seen."""
    earlier = deps.store.get_idempotent_create(owner, key, now)
    if earlier is None:
        return None
    job_id, seen = earlier
    if seen != fingerprint:
        raise Conflict("this Idempotency-Key was used for a different request", "Idempotency-Key")
    job = deps.store.get_job(job_id)
    return job_view(deps, job, now) if job is not None else job_id

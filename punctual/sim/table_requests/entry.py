"""The two calls of the table-requests model (``__init__.py``): :func:`snapshot` just before a call of
the table port, :func:`requests_for` after it, each request made by a method of ``calls._Call``."""

from __future__ import annotations

import inspect
from typing import Any

from punctual.sim.table_requests.calls import _Call
from punctual.sim.table_requests.units import Before, StateView, TableRequest, _tkey
from punctual_functions.core.model import Job, Run, Trigger
from punctual_functions.core.ports import Tables

# ----------------------------------------------------------------------------- the two calls

_READS = {"get_job", "name_holder", "get_idempotent_create", "list_jobs", "owner_jobs", "query_bucket"}
_READS |= {"get_cursor", "oldest_cursor", "get_run", "get_run_and_job", "get_runs_and_jobs", "get_runs"}
_READS |= {"list_runs", "recent_runs", "runs_before", "runs_after", "list_limits", "get_runs_jobs_and_limits"}
_READS |= {"get_calendar", "get_calendars", "list_calendars", "allowed_targets", "delivery_rights"}
_READS |= {"list_changes", "revision_changes"}


def _signature(method: str) -> tuple[list[str], dict[str, Any]]:
    parameters = list(inspect.signature(getattr(Tables, method)).parameters.values())[1:]
    defaults = {q.name: q.default for q in parameters if q.default is not inspect.Parameter.empty}
    return [q.name for q in parameters], defaults


_SIGNATURES = {m: _signature(m) for m in vars(_Call) if not m.startswith("_") and hasattr(Tables, m)}


def _bind(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if method not in _SIGNATURES:
        raise ValueError(f"{method} is not a method of the Tables port")
    names, defaults = _SIGNATURES[method]
    return {**defaults, **dict(zip(names, args, strict=False)), **kwargs}


_NOTHING = Before()


def snapshot(store: StateView, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Before:
    """Just before the call: the items it may write, as they are (a few dict lookups)."""
    if method in _READS:
        return _NOTHING
    p = _bind(method, args, kwargs)
    if method in ("put_calendar", "delete_calendar"):
        name = p["calendar"].name if method == "put_calendar" else p["name"]
        return Before(calendar=store.calendars.get((p["owner"], name)))
    job: Job | None = p.get("job") or p.get("before")
    trigger: Trigger | None = p.get("first_trigger") or p.get("trigger") or p.get("retry_trigger")
    run: Run | None = p.get("run")
    job_id = job.job_id if job is not None else trigger.job_id if trigger is not None else p.get("job_id")
    idem = p.get("idempotency")
    return Before(
        job=store.jobs.get(job_id) if job_id is not None else None,
        run=store.runs.get(run.job_id, {}).get(run.run_id) if run is not None else None,
        trigger=store.triggers.get(_tkey(trigger)) if trigger is not None else None,
        holders=tuple(store.names.get((j.owner, j.name or "")) for j in (job, p.get("after")) if j),
        record=store.idempotency.get((job.owner, idem[0])) if idem and job else None,
        cursor=store.cursors.get(p["shard"]) if method == "advance_cursor" else None,
    )


def requests_for(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Before, after: StateView
) -> list[TableRequest]:
    """The requests the DynamoDB adapter makes for one call of the port method ``method`` with
    ``args``/``kwargs`` that answered ``result`` (the exception it raised, if it did), in order, with
    the units each consumes per partition key value. ``before``: what :func:`snapshot` returned just
    before the call; ``after``: the store, after it."""
    call = _Call(method, _bind(method, args, kwargs), result, before, after)
    getattr(call, method)()
    return call.out

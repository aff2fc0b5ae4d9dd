"""``/v1/limits``: an owner's target limits (docs/api.md, "Target limits"), with each one's current
use (the slots held, by which runs, the bucket's tokens) and the runs waiting on it: what the console
and ``punctual limits`` show."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from punctual_functions.api.deps import Deps
from punctual_functions.api.errors import Conflict, InvalidInput, NotFound
from punctual_functions.api.limit_views import LimitPageView, LimitView, limit_view
from punctual_functions.core import limits as rules
from punctual_functions.core.limits import Limit, LimitMatchError, LimitUse, Waiter
from punctual_functions.core.model import Reason, RunStatus
from punctual_functions.core.ports import LimitExists, VersionChanged

if TYPE_CHECKING:
    from punctual_functions.api.requests import LimitIn

# How many of a limit's waiting runs its view lists (all are counted).
WAITING_SHOWN = 100


def _checked(request: LimitIn, name: str, now: datetime, version: int, created_at: datetime | None) -> Limit:
    try:
        match = rules.check_match(request.match)
    except LimitMatchError as error:
        raise InvalidInput(str(error), "match") from error
    if request.max_concurrent is None and request.per_second is None:
        raise InvalidInput("a limit sets max_concurrent, per_second or both", "max_concurrent")
    if request.burst is not None and request.per_second is None:
        raise InvalidInput("burst is the size of per_second's bucket: set per_second too", "burst")
    return Limit(
        name=name,
        match=match,
        max_concurrent=request.max_concurrent,
        per_second=request.per_second,
        burst=request.burst,
        version=version,
        created_at=created_at or now,
        updated_at=now,
    )


def create_limit(deps: Deps, owner: str, request: LimitIn) -> LimitView:
    if request.name is None:
        raise InvalidInput("a limit needs a name", "name")
    if request.version is not None:
        raise InvalidInput("a new limit has no version yet", "version")
    limit = _checked(request, request.name, deps.clock(), 1, None)
    if len(deps.store.list_limits(owner)) >= rules.MAX_LIMITS_PER_OWNER:
        raise Conflict(f"an owner has at most {rules.MAX_LIMITS_PER_OWNER} limits", "name")
    try:
        deps.store.put_limit(owner, limit, expected_version=None)
    except LimitExists as error:
        raise Conflict(f"a limit named {limit.name} exists", "name") from error
    return _view(deps, owner, limit)


def _known(name: str) -> str:
    """A limit's name from a path: one that could be a limit's, else there is no such limit (the
    table's keys are not for every string)."""
    if not rules.LIMIT_NAME.fullmatch(name):
        raise NotFound("no such limit", "name")
    return name


def replace_limit(deps: Deps, owner: str, name: str, request: LimitIn) -> LimitView:
    name = _known(name)
    if request.name is not None and request.name != name:
        raise InvalidInput("a limit's name is its path's (a rename is a create and a delete)", "name")
    current = deps.store.get_limit(owner, name)
    if current is None:
        raise NotFound("no such limit", "name")
    if request.version is not None and request.version != current.version:
        raise Conflict(f"the limit is at version {current.version}", "version")
    limit = _checked(request, name, deps.clock(), current.version + 1, current.created_at)
    try:
        deps.store.put_limit(owner, limit, expected_version=current.version)
    except VersionChanged as error:
        raise Conflict("the limit changed meanwhile: read it again", "version") from error
    return _view(deps, owner, limit)


def delete_limit(deps: Deps, owner: str, name: str) -> LimitView:
    current = deps.store.get_limit(owner, _known(name))
    if current is None or not deps.store.delete_limit(owner, name):
        raise NotFound("no such limit", "name")
    return _view(deps, owner, current)


def get_limit(deps: Deps, owner: str, name: str) -> LimitView:
    limit = deps.store.get_limit(owner, _known(name))
    if limit is None:
        raise NotFound("no such limit", "name")
    return _view(deps, owner, limit)


def list_limits(deps: Deps, owner: str) -> LimitPageView:
    return {"items": [_view(deps, owner, limit) for limit in deps.store.list_limits(owner)]}


def _view(deps: Deps, owner: str, limit: Limit) -> LimitView:
    use = deps.store.limit_use(owner, limit.name)
    return limit_view(limit, replace(use, waiting=tuple(_still_waiting(deps, limit.name, use))), deps.clock())


def _still_waiting(deps: Deps, name: str, use: LimitUse) -> list[Waiter]:
    """The waiters whose runs still wait on the limit (a run that ended while it waited, cancelled
    say, leaves its waiter to expire)."""
    if not use.waiting:
        return []
    runs = deps.store.get_runs([(waiter.job_id, waiter.run_id) for waiter in use.waiting])
    kept = []
    for waiter in use.waiting:
        run = runs.get((waiter.job_id, waiter.run_id))
        if (
            run is not None
            and run.status in (RunStatus.QUEUED, RunStatus.RETRYING)
            and run.reason is Reason.LIMITED
            and run.limited_by == name
        ):
            kept.append(waiter)
    return kept

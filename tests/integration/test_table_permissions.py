"""Each function's role is granted exactly the table actions its code paths call.

The table client records every DynamoDB operation, with the items of a TransactWriteItems counted as
the actions IAM authorises them by, under the role whose code made it. The roles' grants
(``punctual/cdk/permissions.py``) must cover each role's calls, or a deployed function fails with
AccessDenied on a path the local stack never refused; and they must grant nothing more, so the paths
below reach every operation each role's code has (store.py's callers in punctual_functions/api,
punctual_functions/dispatcher with punctual_functions/core/dispatching.py, and punctual_functions/worker).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from punctual.cdk.permissions import SCOPED_ITEM_ACTIONS, TABLE_ITEM_ACTIONS
from punctual.testing.receiver import Receiver
from punctual_functions.api import calendars
from punctual_functions.api.requests import CalendarRulesIn, CreateCalendarIn, LimitIn, PatchJobIn
from punctual_functions.core.model import RunKind, iso, make_trigger
from tests.integration.conftest import Harness

_TRANSACT_ITEMS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


class Recorder:
    def __init__(self) -> None:
        self.role = "api"
        self.calls: dict[str, set[str]] = defaultdict(set)

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name == "TransactWriteItems":
            for item in params["TransactItems"]:
                self.calls[self.role] |= {_TRANSACT_ITEMS[kind] for kind in item}
        elif model.name == "TransactGetItems":
            self.calls[self.role].add("dynamodb:GetItem")
        else:
            self.calls[self.role].add(f"dynamodb:{model.name}")


@pytest.fixture
def recorder(harness: Harness) -> Recorder:
    recording = Recorder()
    harness.store.client.meta.events.register("before-parameter-build.dynamodb.*", recording)  # type: ignore[attr-defined]
    return recording


@pytest.mark.moto_only("reaches past the ports into boto3")
def test_every_role_is_granted_exactly_the_table_actions_its_code_paths_make(
    harness: Harness, recorder: Recorder, receiver: Receiver
) -> None:
    h = harness
    target = {"type": "http", "url": receiver.url + "/ok"}
    with Receiver(lambda _path, _n: (503, b"busy")) as failing:
        # api: create (one due at once is dispatched right away), read, list, patch, pause, resume, run,
        # cancel a run and a job, stats
        soon = h.create(schedule={"at": iso(h.clock() + timedelta(seconds=2))}, target=target, name="soon")
        cron = h.create(schedule={"cron": "*/10 * * * * *"}, target=target, name="often")
        later = h.create(schedule={"cron": "0 3 * * *"}, target=target)
        retried = h.create(
            schedule={"at": iso(h.clock() + timedelta(seconds=1))},
            target={"type": "http", "url": failing.url + "/fail"},
            retry={"max_attempts": 3, "backoff_seconds": 3600, "max_backoff_seconds": 3600},
        )
        doomed = h.create(
            schedule={"at": iso(h.clock() + timedelta(seconds=1))},
            target={"type": "http", "url": failing.url + "/fail"},
            retry={"max_attempts": 1},
            name="doomed",
        )
        # a job whose runs are skipped while the previous one still runs (the worker reads its history)
        exclusive = h.create(schedule={"cron": "*/10 * * * * *", "overlap": "skip"}, target=target)
        # a job under its own max_concurrent and an owner's limit: slots taken and released, a run
        # that waits its turn (the api writes and reads the limit)
        h.service.create_limit(
            h.owner, LimitIn.model_validate({"name": "hooks", "match": receiver.url, "max_concurrent": 1})
        )
        h.service.get_limit(h.owner, "hooks")
        h.service.list_limits(h.owner)
        capped = h.create(
            schedule={"at": iso(h.clock() + timedelta(seconds=1))}, target=target, max_concurrent=1
        )
        h.store.take_slot(
            h.owner,
            "hooks",
            1,
            holder="busy",
            job_id="j",
            now=h.clock(),
            lease_until=h.clock() + timedelta(seconds=5),
        )
        h.service.get_job(h.owner, soon["job_id"])
        h.service.list_jobs(h.owner, limit=5, cursor=None, status=None, name=None)
        h.service.list_runs(h.owner, cron["job_id"], limit=5, cursor=None, status=None)
        h.service.patch_job(h.owner, later["job_id"], PatchJobIn.model_validate({"name": "renamed"}))
        h.service.pause_job(h.owner, later["job_id"])
        h.service.resume_job(h.owner, later["job_id"])
        run = h.service.run_now(h.owner, later["job_id"])
        h.service.cancel_run(h.owner, later["job_id"], run["run_id"])
        h.service.stats(h.owner)
        # business calendars (CAL#<owner> items): create, list, read, replace, the excluded days, delete
        rules = {"holidays": ["DE-BY"], "dates": ["2026-12-24"]}
        calendars.create_calendar(
            h.service, h.owner, CreateCalendarIn.model_validate({"name": "ops", **rules})
        )
        calendars.list_calendars(h.service, h.owner)
        calendars.replace_calendar(
            h.service, h.owner, "ops", CalendarRulesIn.model_validate({"weekdays": [1]})
        )
        calendars.calendar_days(h.service, h.owner, "ops", None, None)
        calendars.delete_calendar(h.service, h.owner, "ops")
        h.service.pause_job(h.owner, cron["job_id"])
        # "run now" whose request ended after writing its trigger: the next sweep dispatches it
        job = h.job(later["job_id"])
        h.store.put_trigger(make_trigger(job, h.clock(), now=h.clock(), shard_count=4, kind=RunKind.MANUAL))
        # worker: successes, a retry through the table, a final failure (which frees the job's name),
        # the overlap check
        recorder.role = "worker"
        for _ in range(3):
            h.work()
        h.store.release_slot(h.owner, "hooks", holder="busy", max_concurrent=1, now=h.clock())
        h.work()
        assert capped
        # a retry wake-up through the table (whether the backoff above goes through it is random)
        (ran,) = h.store.list_runs(doomed["job_id"], limit=1)[0]
        wake = make_trigger(h.job(doomed["job_id"]), ran.scheduled_for, now=h.clock(), shard_count=4)
        h.store.put_trigger(replace(wake, run_id=ran.run_id, fire_at=h.clock(), is_retry=True))
        # dispatcher: ticks that dispatch the chain and the manual run, wake the long retry up and delete
        # the paused job's stale triggers
        recorder.role = "dispatcher"
        for _ in range(3):
            h.clock.advance(60)
            h.dispatcher.sweep()
        h.clock.advance(3700)
        h.dispatcher.sweep()
        recorder.role = "worker"
        h.work()
        recorder.role = "api"
        h.service.cancel_job(h.owner, cron["job_id"])
        assert h.job(doomed["job_id"]).status.value == "FAILED"
        assert retried and exclusive
    assert set(recorder.calls) == set(TABLE_ITEM_ACTIONS)
    for role, calls in recorder.calls.items():
        granted = set(TABLE_ITEM_ACTIONS[role]) | set(SCOPED_ITEM_ACTIONS.get(role, ((), ""))[0])
        assert calls <= granted, f"the {role} calls {sorted(calls - granted)} but is not granted them"
        assert granted <= calls, f"the {role} is granted {sorted(granted - calls)} but never calls them"
    assert "dynamodb:TransactWriteItems" not in set().union(*recorder.calls.values()), "counted per item"

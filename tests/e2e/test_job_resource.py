"""The ``Job`` custom resource's handler against the local stack, over HTTP as on AWS (a bearer token
where AWS signs with SigV4): CloudFormation's Create, Update (schedule changed, then target changed)
and Delete; the same Create delivered twice makes one job; a bad schedule fails with the API's
reason; a Delete of a job already gone succeeds."""

from __future__ import annotations

import uuid

import pytest

from punctual_functions.cfn.api import HttpJobsApi
from punctual_functions.cfn.job_resource import REQUEST_TAG, Refused, on_event
from tests.e2e.conftest import Api
from tests.integration.test_job_resource import JOB, event

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def http_api(stack: Api) -> HttpJobsApi:
    def bearer(_method: str, _url: str, _data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {stack.token}"}

    return HttpJobsApi(stack.base_url, bearer)


def test_the_job_resource_creates_changes_and_cancels_a_job_through_the_api(local_stack: Api) -> None:
    api = http_api(local_stack)
    unique = uuid.uuid4().hex[:12]  # the local stack is shared by the e2e tests
    job = {**JOB, "name": f"cfn-{unique}"}
    resource = f"NightlyReport{unique}"
    created = on_event(event("Create", job, request="e2e-1", resource=resource), api)
    assert on_event(event("Create", job, request="e2e-1", resource=resource), api) == created, (
        "a retried Create: one job"
    )
    job_id = created["PhysicalResourceId"]
    status, runs_before = local_stack.call("GET", f"/v1/jobs/{job_id}")
    assert status == 200 and runs_before["tags"][REQUEST_TAG] == "e2e-1"
    status, run = local_stack.call("POST", f"/v1/jobs/{job_id}/run")
    assert status == 202, run
    rescheduled = {**job, "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"}}
    assert (
        on_event(
            event("Update", rescheduled, request="e2e-2", old=job, physical=job_id, resource=resource), api
        )["PhysicalResourceId"]
        == job_id
    )
    retargeted = {**rescheduled, "target": {"type": "http", "url": "https://example.com/elsewhere"}}
    on_event(
        event("Update", retargeted, request="e2e-3", old=rescheduled, physical=job_id, resource=resource), api
    )
    status, history = local_stack.call("GET", f"/v1/jobs/{job_id}/runs")
    assert status == 200 and run["run_id"] in [item["run_id"] for item in history["items"]], "history kept"
    status, changed = local_stack.call("GET", f"/v1/jobs/{job_id}")
    assert status == 200
    assert (changed["schedule"]["cron"], changed["target"]["url"]) == (
        "*/5 * * * *",
        "https://example.com/elsewhere",
    )
    assert changed["job_id"] == job_id and changed["version"] > runs_before["version"], "changed in place"
    with pytest.raises(Refused) as refused:
        on_event(
            event(
                "Create",
                {**job, "name": None, "schedule": {"cron": "61 * * * *"}},
                request="e2e-4",
                resource=resource + "Bad",
            ),
            api,
        )
    assert refused.value.status == 422 and str(refused.value).startswith("schedule")
    assert on_event(
        event("Delete", retargeted, request="e2e-5", physical=job_id, resource=resource), api
    ) == {"PhysicalResourceId": job_id}
    status, cancelled = local_stack.call("GET", f"/v1/jobs/{job_id}")
    assert status == 200 and cancelled["status"] == "CANCELLED"
    assert (
        on_event(event("Delete", retargeted, request="e2e-6", physical=job_id, resource=resource), api)[
            "PhysicalResourceId"
        ]
        == job_id
    )
    missing = "job_0000000000000000000000ff"
    assert on_event(event("Delete", job, request="e2e-7", physical=missing), api) == {
        "PhysicalResourceId": missing
    }

"""End to end: the typed client (``punctual.client.Punctual``) as a user's own code holds it, over HTTP
against the real local stack: create, list, pause and resume, run now until the run SUCCEEDED, the
history, a batch, a bulk cancel by tag, and a refusal as ``InvalidRequest`` naming its field."""

from __future__ import annotations

import uuid

import pytest

from punctual.client import InvalidRequest, NotFound, Punctual
from punctual_functions.core.model import JobStatus, RunKind, RunStatus
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


@pytest.fixture
def client(local_stack: Api) -> Punctual:
    return Punctual(local_stack.base_url, token=local_stack.token)


def test_a_job_through_the_typed_client_from_create_to_its_successful_run(
    local_stack: Api, client: Punctual
) -> None:
    assert client.health().status == "ok"
    name = f"typed-{uuid.uuid4().hex[:12]}"  # the local stack is shared by the e2e tests
    health = {"type": "http", "url": f"{local_stack.base_url}/v1/health", "method": "GET"}
    job = client.create_job(
        {"cron": "0 3 * * *", "timezone": "Europe/Berlin"},
        health,
        name=name,
        tags={"suite": name},
        idempotency_key=name,
    )
    assert job.status is JobStatus.ACTIVE and job.name == name and len(job.upcoming) == 5
    assert job.raw["job_id"] == job.job_id
    again = client.create_job(
        {"cron": "0 3 * * *", "timezone": "Europe/Berlin"},
        health,
        name=name,
        tags={"suite": name},
        idempotency_key=name,
    )
    assert again.job_id == job.job_id, "the same idempotency key: the same job"

    page = client.list_jobs(name=name)
    assert [listed.job_id for listed in page.items] == [job.job_id] and page.next_cursor is None
    assert job.job_id in {listed.job_id for listed in client.iter_jobs(name_prefix="typed-", page_size=1)}
    assert [tagged.job_id for tagged in client.iter_jobs(tag=f"suite={name}")] == [job.job_id]

    paused = client.pause_job(job.job_id, note="typed client")
    assert (
        paused.status is JobStatus.PAUSED and paused.pause is not None and paused.pause.note == "typed client"
    )
    assert paused.next_run_at is None
    resumed = client.resume_job(job.job_id)
    assert resumed.status is JobStatus.ACTIVE and resumed.next_run_at is not None

    run = client.run_now(job.job_id)
    assert run.kind is RunKind.MANUAL
    done = wait_until(lambda: client.get_run(job.job_id, run.run_id).status is RunStatus.SUCCEEDED, 30)
    assert done, client.get_run(job.job_id, run.run_id).raw
    ran = client.get_run(job.job_id, run.run_id)
    assert ran.attempts is not None and ran.attempts[0].status_code == 200
    history = list(client.iter_runs(job.job_id))
    assert run.run_id in {row.run_id for row in history}
    assert client.list_runs(job.job_id, status="SUCCEEDED").items[0].run_id == run.run_id

    with pytest.raises(InvalidRequest) as refused:
        client.patch_job(job.job_id, schedule={"rate": "5 seconds"})
    assert (refused.value.status, refused.value.field) == (422, "schedule.rate")
    cancelled = client.cancel_job(job.job_id)
    assert cancelled.status is JobStatus.CANCELLED


def test_a_batch_and_a_bulk_cancel_by_tag(local_stack: Api, client: Punctual) -> None:
    tag = f"batch-{uuid.uuid4().hex[:12]}"
    target = {"type": "http", "url": f"{local_stack.base_url}/v1/health", "method": "GET"}
    created = client.create_jobs(
        [
            {"schedule": {"cron": "0 3 * * *"}, "target": target, "tags": {"suite": tag}},
            {"schedule": {"rate": "1 hour"}, "target": target, "tags": {"suite": tag}},
            {"schedule": {"cron": "0 0 30 2 *"}, "target": target, "tags": {"suite": tag}},
        ]
    )
    assert [item.status for item in created.items] == [201, 201, 422]
    refusal = created.items[2].error
    assert refusal is not None and refusal.field == "schedule.cron"
    items = client.bulk_all("cancel", {"suite": tag})
    assert sorted(item.job_id for item in items) == sorted(
        item.job.job_id for item in created.items if item.job is not None
    )
    assert all(item.job is not None and item.job.status is JobStatus.CANCELLED for item in items)
    with pytest.raises(NotFound) as missing:
        client.get_job("job_nope")
    assert missing.value.field == "job_id"

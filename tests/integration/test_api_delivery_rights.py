"""Delivery rights through the API handler, over the fakes and over DynamoDB on moto: an owner's job
may target only what the deployment's rights item gives that owner; a refusal is a 403 naming the
field and the rule, and writes nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from punctual_functions.core.factories import build_job_service
from punctual_functions.core.rights import DeliveryRights
from tests.integration.conftest import Call, Harness, make_call
from tests.integration.test_api_validation import assert_no_jobs, assert_refused

ACCOUNT = "123456789012"
QUEUES = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}"
RIGHTS = DeliveryRights.from_value(
    {
        "rights": [
            {"owners": ["alice"], "targets": [f"arn:aws:sqs:*:{ACCOUNT}:alice-*"]},
            {
                "owners": ["bob"],
                "targets": [f"arn:aws:sqs:*:{ACCOUNT}:bob-*"],
                "hosts": ["hooks.bob.example"],
            },
        ],
        "hosts_per_owner": True,
    }
)


@pytest.fixture
def call(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Call:
    settings = replace(harness.settings, allowed_target_arns=("*",), account_id=ACCOUNT)
    harness.store.put_delivery_rights(RIGHTS)
    service = build_job_service(
        settings,
        store=harness.store,
        dispatcher=harness.dispatcher,
        policy=harness.policy,
        clock=harness.clock,
    )
    return make_call(service, monkeypatch)


def job(target: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"schedule": {"cron": "0 3 * * *"}, "target": target, **extra}


def queue(name: str) -> dict[str, str]:
    return {"type": "sqs", "queue_url": f"{QUEUES}/{name}"}


def test_each_owner_may_target_what_its_rights_name_and_nothing_else(call: Call) -> None:
    status, created = call("POST", "/v1/jobs", job(queue("alice-reports")), owner="alice")
    assert status == 201, created
    status, error = call("POST", "/v1/jobs", job(queue("alice-reports")), owner="bob")
    assert_refused(status, error, 403, "target.queue_url")
    assert "owner bob has no delivery right" in error["reason"] and "alice-reports" in error["reason"]
    assert_no_jobs(call, owner="bob")
    status, error = call("POST", "/v1/jobs", job(queue("bob-reports")), owner="mallory")
    assert_refused(status, error, 403, "target.queue_url")
    assert "gives it none" in error["reason"]


def test_a_patch_to_another_owners_queue_is_refused_and_changes_nothing(call: Call) -> None:
    _, created = call("POST", "/v1/jobs", job(queue("alice-reports")))
    path = f"/v1/jobs/{created['job_id']}"
    status, error = call("PATCH", path, {"target": queue("bob-reports")})
    assert_refused(status, error, 403, "target.queue_url")
    status, unchanged = call("GET", path)
    assert status == 200 and unchanged["target"]["queue_url"] == f"{QUEUES}/alice-reports"
    assert unchanged["version"] == created["version"]


def test_webhook_hosts_per_owner_when_the_deployment_gives_them(call: Call) -> None:
    hook = {"type": "http", "url": "https://hooks.bob.example/run"}
    status, created = call("POST", "/v1/jobs", job(hook), owner="bob")
    assert status == 201, created
    status, error = call("POST", "/v1/jobs", job(hook), owner="alice")
    assert_refused(status, error, 403, "target.url")
    assert "hooks.bob.example" in error["reason"]


def test_a_dead_letter_queue_of_another_owner_is_refused(call: Call) -> None:
    body = job(queue("alice-reports"), dead_letter=queue("bob-failures"))
    status, error = call("POST", "/v1/jobs", body)
    assert_refused(status, error, 403, "dead_letter.queue_url")
    assert_no_jobs(call)

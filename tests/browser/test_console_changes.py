"""The console's "Changes" of a job, in a real browser: the audit trail with who, why and what, and an
earlier revision restored from it."""

from __future__ import annotations

import uuid

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import Console, Stack

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]


def test_a_jobs_changes_show_who_why_and_what_and_an_earlier_revision_comes_back(
    console: Console, stack: Stack
) -> None:
    name = f"browser-changes-{uuid.uuid4().hex[:6]}"
    job = stack.create_job(name=name, schedule={"cron": "0 3 1 1 *"}, payload={"report": "daily"})
    path = f"/v1/jobs/{job['job_id']}"
    status, _ = stack.call("PATCH", path, {"payload": {"report": "weekly"}, "note": "weekly from now on"})
    assert status == 200
    console.open(f"#/jobs/{job['job_id']}")
    updated = console.wait_for(By.CSS_SELECTOR, ".change-row[data-action='updated']")
    assert "weekly from now on" in updated.text and "payload.report" in updated.text
    created = console.wait_for(By.CSS_SELECTOR, ".change-row[data-action='created']")
    created.find_element(By.CSS_SELECTOR, "button").click()
    console.click("restore-1")
    console.click("restore-1-yes")
    restored = console.wait_for(By.CSS_SELECTOR, ".change-row[data-action='restored']", timeout=15)
    assert "restored from the console" in restored.text
    console.screenshot("job-changes")
    _, now = stack.call("GET", path)
    assert now["revision"] == 3 and now["payload"] == {"report": "daily"}

"""Target limits in the web console (headless Chromium against the local stack): the editor (a bad
match refused at its field), the list, and the way a user watches a burst: six jobs due at one second
against a slow local webhook under ``max_concurrent: 2``; the limit's page shows 2 / 2 in use and the
runs waiting, a waiting run's history row says what it waits for, then the queue drains to nothing and
the runs that waited say how long. The job form's ``max_concurrent`` and ``limited`` alert too."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso
from tests.browser.conftest import PHONE, Console, Stack

# As test_console.py: in the end-to-end tests' group, one after the other on one worker.
pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

JOBS = 6
CALL_SECONDS = 1.0
GATE_SECONDS = 15.0  # the longest the webhook holds a call while the test looks at the queue


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class SlowWebhook:
    """A webhook that takes ``CALL_SECONDS`` a call, and holds each call (up to ``GATE_SECONDS``) while
    its gate is shut: the test looks at a full limit and its queue for as long as it needs, then lets
    the burst drain."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def respond(self, _path: str, _n: int) -> tuple[int, bytes]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        self.gate.wait(GATE_SECONDS)
        time.sleep(CALL_SECONDS)
        with self.lock:
            self.now -= 1
        return 200, b'{"ok": true}'


@pytest.fixture
def webhook() -> Iterator[tuple[SlowWebhook, Receiver]]:
    slow = SlowWebhook()
    with Receiver(slow.respond) as receiver:
        try:
            yield slow, receiver
        finally:
            slow.gate.set()


def delete_limit(stack: Stack, name: str) -> None:
    stack.call("DELETE", f"/v1/limits/{name}")


def test_create_a_limit_in_the_form_a_bad_match_is_shown_at_its_field_then_edit_and_list_it(
    console: Console, stack: Stack
) -> None:
    name = unique("partner")
    console.open("#/limits")
    console.wait_for(By.ID, "limits-table")
    console.click("new-limit")
    console.fill("f-name", name)
    console.fill("f-match", "ftp://files.partner.test")
    console.fill("f-max_concurrent", "10")
    console.click("save-limit")
    error = console.wait_for(By.ID, "err-match")
    assert error.text, "the API's reason is shown"
    assert console.driver.find_element(By.ID, "f-match").get_attribute("aria-invalid") == "true"
    console.screenshot("limit-validation-error")
    assert stack.call("GET", f"/v1/limits/{name}")[0] == 404, "nothing was created"

    console.fill("f-match", "https://api.partner.test/v1")
    console.fill("f-per_second", "5")
    console.click("save-limit")
    console.wait_for_text(By.ID, "limit-title", name)
    rules = console.wait_for(By.ID, "limit-rules").text
    assert "https://api.partner.test/v1" in rules and "5/s" in rules
    assert "0 / 10" in console.wait_for(By.ID, "limit-now").text
    status, stored = stack.call("GET", f"/v1/limits/{name}")
    assert status == 200
    assert (stored["match"], stored["max_concurrent"], stored["per_second"], stored["burst"]) == (
        "https://api.partner.test/v1",
        10,
        5,
        None,
    )

    # Edited: a burst, the version moves on.
    console.click("edit-limit")
    console.fill("f-burst", "8")
    console.click("save-limit")
    console.wait_for_text(By.CSS_SELECTOR, "#limit-title + span", "version 2")
    assert "burst 8" in console.wait_for(By.ID, "limit-rules").text

    # Listed with its use.
    console.open("#/limits")
    row = console.wait_for(By.CSS_SELECTOR, f"#limits-table tr[data-limit='{name}']")
    assert "https://api.partner.test/v1" in row.text and "0 / 10" in row.text
    delete_limit(stack, name)


def test_the_job_form_sets_max_concurrent_and_the_limited_alert(console: Console, stack: Stack) -> None:
    name = unique("capped")
    console.open("#/new")
    console.fill("f-name", name)
    console.click("kind-cron")
    console.fill("f-schedule-cron", "0 3 1 1 *")
    console.fill("f-target-url", f"{stack.base_url}/v1/health")
    console.fill("f-max_concurrent", "3")
    console.click("f-alerts_on")
    console.fill("f-alerts-target-url", f"{stack.base_url}/v1/health")
    console.fill("f-alerts-limited_seconds", "120")
    console.click("submit-job")
    console.wait_for_text(By.ID, "job-title", name)
    assert "3 of its attempts at once" in console.wait_for(By.ID, "job-max-concurrent").text
    job_id = console.driver.current_url.rsplit("/", 1)[-1]
    status, job = stack.call("GET", f"/v1/jobs/{job_id}")
    assert status == 200
    assert job["max_concurrent"] == 3 and job["alerts"]["limited_seconds"] == 120, job

    # Edited: a bad cap is refused at its field; cleared, the job has none.
    console.click("edit-job")
    console.fill("f-max_concurrent", "0")
    console.click("submit-job")
    console.wait_for(By.ID, "err-max_concurrent")
    console.fill("f-max_concurrent", "")
    console.click("submit-job")
    console.wait_for_text(By.ID, "job-max-concurrent", "no cap of its own")
    assert stack.call("GET", f"/v1/jobs/{job_id}")[1]["max_concurrent"] is None
    stack.call("DELETE", f"/v1/jobs/{job_id}")


def _use(console: Console) -> str:
    return str(console.wait_for(By.ID, "limit-now").text)


def test_watch_a_burst_against_a_slow_webhook_under_a_limit(
    console: Console, stack: Stack, webhook: tuple[SlowWebhook, Receiver]
) -> None:
    slow, receiver = webhook
    name = unique("slow-hook")
    status, limit = stack.call(
        "POST", "/v1/limits", {"name": name, "match": receiver.url, "max_concurrent": 2}
    )
    assert status == 201, limit
    # Due once every worker has the limit (it reaches them within 10 s), all at one second.
    due = (datetime.now(UTC) + timedelta(seconds=12)).replace(microsecond=0)
    jobs: list[dict[str, Any]] = [
        stack.create_job(
            name=unique(f"burst-{n}"),
            schedule={"at": iso(due)},
            target={"type": "http", "url": f"{receiver.url}/job-{n}"},
        )
        for n in range(JOBS)
    ]
    names = {job["job_id"]: job["name"] for job in jobs}

    # The limit's page: both slots held, the rest waiting (the webhook holds its calls meanwhile).
    console.open(f"#/limits/{name}")
    console.wait(lambda _d: "2 / 2" in _use(console), 45, "the limit never showed 2 / 2 in use")
    console.wait(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#waiting-table tr.waiter-row")) >= 1,
        20,
        "no run is shown waiting",
    )
    slots = console.driver.find_elements(By.CSS_SELECTOR, "#slots-table tr.slot-row")
    assert len(slots) == 2 and all(row.find_elements(By.CSS_SELECTOR, "a") for row in slots)
    console.screenshot("limit")
    waiter = console.driver.find_element(By.CSS_SELECTOR, "#waiting-table tr.waiter-row")
    run_id = str(waiter.get_attribute("data-run-id"))
    waiting_job = next(job_id for job_id in names if job_id in waiter.text)

    # The list shows the same, in short.
    console.open("#/limits")
    row = console.wait_for(By.CSS_SELECTOR, f"#limits-table tr[data-limit='{name}']")
    assert "2 / 2" in row.text
    assert int(row.find_element(By.CSS_SELECTOR, "td.waiting").text) >= 1
    console.screenshot("limits")

    # From the limit's page to the waiting run (its job's page with the run open): what it waits for,
    # since when, a link to the limit, in the run's detail and its history row.
    console.open(f"#/limits/{name}")
    console.wait_for(By.CSS_SELECTOR, f"#waiting-table tr[data-run-id='{run_id}'] a.run-link").click()
    console.wait_for_text(By.ID, "run-title", run_id)
    console.wait_for_text(By.ID, "run-limit", f"waiting for limit {name} since")
    assert waiting_job in console.driver.current_url
    row = console.wait_for(By.CSS_SELECTOR, f"#runs-table tr[data-run-id='{run_id}']")
    console.wait(
        lambda _d: f"waiting for limit {name} since" in row.text, 15, "the run does not say it waits"
    )
    assert row.get_attribute("data-status") == "QUEUED"
    link = row.find_element(By.CSS_SELECTOR, "a.limit-name")
    assert str(link.get_attribute("href")).endswith(f"#/limits/{name}")
    console.screenshot("job-limited")

    # The burst drains: the webhook answers, the queue empties, nothing is held.
    slow.gate.set()
    link.click()
    console.wait_for_text(By.ID, "limit-title", name)
    console.wait(
        lambda _d: "0 / 2" in _use(console) and "0 waiting" in _use(console),
        60,
        "the limit's queue never drained",
    )
    assert len(receiver.deliveries) == JOBS, "each job delivered once"
    assert slow.most <= 2, f"{slow.most} calls at once under max_concurrent 2"

    # The run that waited says so, in its row and its detail.
    console.open(f"#/jobs/{waiting_job}")
    row = console.wait_for(
        By.CSS_SELECTOR, f"#runs-table tr[data-run-id='{run_id}'][data-status='SUCCEEDED']"
    )
    console.wait(lambda _d: f"for {name}" in row.text and "waited " in row.text, 10, "no wait shown")
    row.find_element(By.CSS_SELECTOR, "td button.link").click()
    detail = console.wait_for(By.ID, "run-limit")
    assert "waited " in detail.text and name in detail.text
    status, run = stack.call("GET", f"/v1/jobs/{waiting_job}/runs/{run_id}")
    assert run["limited_by"] == name and run["limited_ms"] > 0, run

    # Deleted from its page.
    console.open(f"#/limits/{name}")
    console.click("delete-limit")
    console.click("delete-limit-yes")
    console.wait_for(By.ID, "limits-table")
    console.wait(
        lambda d: not d.find_elements(By.CSS_SELECTOR, f"#limits-table tr[data-limit='{name}']"),
        10,
        "the deleted limit is still listed",
    )
    assert stack.call("GET", f"/v1/limits/{name}")[0] == 404


def test_the_limit_views_fit_a_phone(console: Console, stack: Stack) -> None:
    name = unique("phone")
    status, limit = stack.call(
        "POST",
        "/v1/limits",
        {"name": name, "match": "arn:aws:lambda:eu-west-1:123456789012:function:*", "per_second": 2.5},
    )
    assert status == 201, limit
    console.resize(*PHONE)
    for route, ready in (
        ("#/limits", "limits-table"),
        (f"#/limits/{name}", "waiting-table"),
        (f"#/limits/{name}/edit", "f-match"),
        ("#/new-limit", "f-name"),
    ):
        console.open(route)
        console.wait_for(By.ID, ready)
        width = console.driver.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert width[0] <= width[1] + 1, f"{route} is {width[0]} px wide on a {width[1]} px screen"
    # A limit with no max_concurrent shows its use as a count, and its bucket.
    console.open("#/limits")
    row = console.wait_for(By.CSS_SELECTOR, f"#limits-table tr[data-limit='{name}']")
    assert "0 in use" in row.text and "2.5/s" in row.text and "3 tokens" in row.text
    delete_limit(stack, name)

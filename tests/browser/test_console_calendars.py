"""Business calendars in the web console (headless Chromium against the local stack): the editor, the
list, a calendar's excluded days over the next 12 months, a calendar in the job form and its preview,
the job view, and a delete refused while a job follows the calendar.

The dates are taken relative to today (a year from today always holds a Christmas), so the tests do
not rot."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import PHONE, Console, Stack

# As test_console.py: in the end-to-end tests' group, one after the other on one worker.
pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

BERLIN = ZoneInfo("Europe/Berlin")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def next_christmas() -> date:
    """The Christmas Day in the 12 months from today, as Berlin sees today."""
    today = datetime.now(BERLIN).date()
    this_year = date(today.year, 12, 25)
    return this_year if this_year >= today else date(today.year + 1, 12, 25)


def next_new_years_eve() -> date:
    today = datetime.now(BERLIN).date()
    this_year = date(today.year, 12, 31)
    return this_year if this_year >= today else date(today.year + 1, 12, 31)


def create_calendar(stack: Stack, **body: Any) -> dict[str, Any]:
    status, calendar = stack.call("POST", "/v1/calendars", body)
    assert status == 201, calendar
    return dict(calendar)


def choose(console: Console, select_id: str, value: str) -> None:
    """Pick the option of a select whose value is ``value``, once it is there (the calendars load).
    By its `value` property: an option whose text is its value has no value attribute (Preact)."""

    def option(driver: Any) -> Any:
        found = driver.find_elements(By.CSS_SELECTOR, f"#{select_id} option")
        return next((o for o in found if o.get_property("value") == value), None)

    console.wait(option, 10, f"no option {value!r} in #{select_id}").click()
    assert console.wait_for(By.ID, select_id).get_property("value") == value


def test_create_a_calendar_in_the_editor_see_it_listed_and_its_excluded_days_by_month(
    console: Console, stack: Stack
) -> None:
    name = unique("bavaria")
    console.open("#/calendars")
    console.wait_for(By.ID, "calendars-table")
    console.click("new-calendar")
    console.fill("f-name", name)
    console.fill("f-timezone", "Europe/Berlin")
    console.fill("f-holidays-0-country", "DE")
    console.fill("f-holidays-0-subdivision", "BY")
    console.fill("f-yearly", "12-31")
    # Working days: Monday to Friday is the default; Saturday is not ticked.
    assert console.wait_for(By.ID, "f-weekday-5").is_selected()
    assert not console.driver.find_element(By.ID, "f-weekday-6").is_selected()
    console.screenshot("calendar-editor")
    console.click("save-calendar")

    console.wait_for_text(By.ID, "calendar-title", name)
    rules = console.wait_for(By.ID, "calendar-rules").text
    assert "Europe/Berlin" in rules and "DE-BY" in rules and "Monday to Friday" in rules and "12-31" in rules
    christmas = next_christmas().isoformat()
    day = console.wait_for(By.CSS_SELECTOR, f"#excluded-days li[data-date='{christmas}']")
    assert "holiday in DE-BY: Christmas Day" in day.text
    eve = console.wait_for(By.CSS_SELECTOR, f"#excluded-days li[data-date='{next_new_years_eve()}']")
    assert "excluded every year" in eve.text
    # Grouped by month: Christmas under December, with its heading.
    month = console.driver.find_element(By.CSS_SELECTOR, f".month[data-month='{christmas[:7]}']")
    assert f"December {christmas[:4]}" in month.find_element(By.TAG_NAME, "h4").text
    # The weekends are counted, and listed only when asked for.
    days_text = console.driver.find_element(By.ID, "excluded-days").text
    assert "not a working day" not in days_text
    console.click("show-weekly")
    console.wait_for_text(By.ID, "excluded-days", "not a working day (Saturday)")
    console.click("show-weekly")
    console.screenshot("calendar")
    # What the API stored is what was typed.
    status, stored = stack.call("GET", f"/v1/calendars/{name}")
    assert status == 200
    assert stored["holidays"] == [{"country": "DE", "subdivision": "BY"}]
    assert stored["timezone"] == "Europe/Berlin" and stored["weekdays"] == [1, 2, 3, 4, 5]
    assert stored["yearly"] == ["12-31"] and stored["version"] == 1

    # Listed, with its rules in short.
    console.open("#/calendars")
    row = console.wait_for(By.CSS_SELECTOR, f"#calendars-table tr[data-calendar='{name}']")
    assert "Europe/Berlin" in row.text and "DE-BY" in row.text and "Monday to Friday" in row.text
    console.screenshot("calendars")

    # Edited: Saturday becomes a working day, the version moves on.
    row.find_element(By.CSS_SELECTOR, "a.calendar-link").click()
    console.click("edit-calendar")
    console.click("f-weekday-6")
    console.click("save-calendar")
    console.wait_for_text(By.CSS_SELECTOR, "#calendar-title + span", "version 2")
    assert "Mon, Tue, Wed, Thu, Fri, Sat" in console.wait_for(By.ID, "calendar-rules").text
    assert stack.call("GET", f"/v1/calendars/{name}")[1]["weekdays"] == [1, 2, 3, 4, 5, 6]


def test_a_refused_rule_is_shown_at_its_field_and_nothing_is_created(console: Console, stack: Stack) -> None:
    name = unique("refused")
    console.open("#/new-calendar")
    console.driver.refresh()  # a page of its own: the last test's notice is not in its screenshot
    console.fill("f-name", name)
    # The first holiday row is left empty (not sent): the error for the one sent lands on its own row.
    console.click("add-holiday")
    console.fill("f-holidays-1-country", "ZZ")
    console.click("save-calendar")
    error = console.wait_for(By.ID, "err-holidays-1-")
    assert "unknown country code 'ZZ'" in error.text
    field = console.driver.find_element(By.ID, "f-holidays-1-country")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.get_attribute("aria-describedby") == "err-holidays-1-"
    assert not console.driver.find_elements(By.ID, "err-holidays-0-")
    console.screenshot("calendar-validation-error")
    # Fixed; then a date that is not one is refused at the dates.
    console.fill("f-holidays-1-country", "DE")
    console.fill("f-holidays-1-subdivision", "BY")
    console.fill("f-dates", "2026-13-01")
    console.click("save-calendar")
    assert "is not a date" in console.wait_for(By.ID, "err-dates").text
    assert not console.driver.find_elements(By.ID, "err-holidays-1-")
    # No working day at all: refused at the weekdays.
    console.fill("f-dates", "")
    for day in range(1, 6):
        console.click(f"f-weekday-{day}")
    console.click("save-calendar")
    assert console.wait_for(By.ID, "err-weekdays").text
    assert stack.call("GET", f"/v1/calendars/{name}")[0] == 404


def test_a_job_follows_a_calendar_its_preview_shows_the_moved_days_and_the_calendar_is_kept_while_it_lives(
    console: Console, stack: Stack
) -> None:
    calendar = create_calendar(stack, name=unique("bavaria"), timezone="Europe/Berlin", holidays=["DE-BY"])[
        "name"
    ]
    job_name = unique("browser-calendar")
    console.open("#/new")
    console.fill("f-name", job_name)
    console.click("kind-cron")
    console.fill("f-schedule-cron", "0 9 * * *")
    console.fill("f-schedule-timezone", "Europe/Berlin")
    choose(console, "f-schedule-calendar", calendar)
    choose(console, "f-schedule-on_excluded", "next_business_day")
    # A daily 09:00 over five business days crosses a weekend: Saturday's and Sunday's fire times
    # are moved onto Monday's, and the days are listed with their reason and fate.
    moved = console.wait_for(By.CSS_SELECTOR, "#preview-excluded li[data-fate='moved']")
    assert "not a working day (" in moved.text and "moved to" in moved.text
    assert "moved from" in console.wait_for(By.CSS_SELECTOR, "#preview-times .moved").text
    # Over the next 12 months: Christmas Day, moved.
    console.click("preview-year")
    christmas = console.wait_for(By.CSS_SELECTOR, f"#preview-excluded li[data-day='{next_christmas()}']")
    assert "holiday in DE-BY: Christmas Day" in christmas.text and "moved" in christmas.text
    # A year of a schedule every 10 s is too many fire times to list: said in the preview, not an error
    # of the form's.
    console.fill("f-schedule-cron", "*/10 * * * * *")
    assert "more than 1,000 fire times" in console.wait_for(By.ID, "preview-too-many").text
    assert not console.driver.find_elements(By.CSS_SELECTOR, ".field-error")
    console.fill("f-schedule-cron", "0 9 * * *")
    console.wait_for(By.CSS_SELECTOR, f"#preview-excluded li[data-day='{next_christmas()}']")
    console.fill("f-target-url", f"{console.base_url}/v1/health")
    console.screenshot("create-with-calendar")
    console.click("submit-job")

    console.wait_for_text(By.ID, "job-title", job_name)
    shown = console.wait_for(By.ID, "job-calendar").text
    assert calendar in shown and "next business day" in shown
    assert f"calendar {calendar}: excluded days moved to the next business day" in (
        console.wait_for(By.CSS_SELECTOR, ".definition").text
    )
    _, page = stack.call("GET", f"/v1/jobs?name={job_name}")
    job = page["items"][0]
    assert job["schedule"]["calendar"] == calendar and job["schedule"]["on_excluded"] == "next_business_day"
    # Edited: the calendar and its policy are in the form as saved; another policy is saved.
    console.click("edit-job")
    assert console.wait_for(By.ID, "f-schedule-calendar").get_property("value") == calendar
    choose(console, "f-schedule-on_excluded", "previous_business_day")
    console.click("submit-job")
    console.wait_for_text(By.ID, "job-calendar", "previous business day")
    changed = stack.call("GET", f"/v1/jobs/{job['job_id']}")[1]
    assert changed["schedule"]["calendar"] == calendar
    assert changed["schedule"]["on_excluded"] == "previous_business_day" and changed["version"] == 2

    # The calendar cannot go while the job follows it: the refusal names the job, with a link to it.
    console.open(f"#/calendars/{calendar}")
    console.click("delete-calendar")
    console.click("delete-calendar-yes")
    in_use = console.wait_for_text(By.ID, "calendar-in-use", job_name)
    assert "1 live job(s) use calendar" in in_use.text
    link = in_use.find_element(By.TAG_NAME, "a")
    assert str(link.get_attribute("href")).endswith(f"#/jobs/{job['job_id']}")
    assert stack.call("GET", f"/v1/calendars/{calendar}")[0] == 200
    link.click()
    console.wait_for_text(By.ID, "job-title", job_name)
    console.click("cancel-job")
    console.click("cancel-job-yes")
    console.wait_for_text(By.CSS_SELECTOR, ".title-row .status", "CANCELLED")
    # Once the job is cancelled, the calendar goes.
    console.open(f"#/calendars/{calendar}")
    console.click("delete-calendar")
    console.click("delete-calendar-yes")
    console.wait_for_text(By.ID, "notice", f"Calendar {calendar} deleted")
    console.wait_for(By.ID, "calendars-table")
    assert not console.driver.find_elements(By.CSS_SELECTOR, f"tr[data-calendar='{calendar}']")
    assert stack.call("GET", f"/v1/calendars/{calendar}")[0] == 404


def test_a_day_the_calendar_excludes_reads_in_the_history_with_its_reason(
    console: Console, stack: Stack
) -> None:
    # Today is excluded, and the schedule starts in a few seconds: the day's first fire time is
    # still to come, so the dispatcher drops the day then, with one SKIPPED row (reason calendar).
    start = datetime.now(UTC) + timedelta(seconds=15)
    today = start.date()  # the start's own day: its first fire time is the start, whatever the hour
    calendar = create_calendar(
        stack, name=unique("today-off"), weekdays=[1, 2, 3, 4, 5, 6, 7], dates=[today.isoformat()]
    )
    job = stack.create_job(
        name=unique("browser-skipped"),
        schedule={
            "cron": "*/10 * * * * *",
            "start_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "calendar": calendar["name"],
            "on_excluded": "skip",
        },
    )
    console.open(f"#/jobs/{job['job_id']}")

    def calendar_row(driver: Any) -> Any:
        for row in driver.find_elements(By.CSS_SELECTOR, "#runs-table tr.run-row"):
            if row.get_attribute("data-status") == "SKIPPED" and "calendar" in row.text:
                return row
        return None

    row = console.wait(calendar_row, 40, "no SKIPPED row with reason calendar")
    why = row.find_element(By.CSS_SELECTOR, "td.why").text
    assert why.startswith(f"calendar {calendar['name']}"), why
    assert f"excludes {today.isoformat()}: excluded date" in why
    # Not an error: the day's text is not shown as one.
    assert not row.find_elements(By.CSS_SELECTOR, ".error-text")
    stack.call("DELETE", f"/v1/jobs/{job['job_id']}")


def test_the_calendar_views_fit_a_phone(console: Console, stack: Stack) -> None:
    calendar = create_calendar(stack, name=unique("phone"), timezone="Europe/Berlin", holidays=["DE-BY"])[
        "name"
    ]
    console.resize(*PHONE)
    for route, ready in (
        ("#/calendars", "calendars-table"),
        (f"#/calendars/{calendar}", "excluded-days"),
        (f"#/calendars/{calendar}/edit", "f-holidays-0-country"),
        ("#/new-calendar", "f-name"),
    ):
        console.open(route)
        console.wait_for(By.ID, ready)
        width = console.driver.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert width[0] <= width[1] + 1, f"{route} is {width[0]} px wide on a {width[1]} px screen"
    stack.call("DELETE", f"/v1/calendars/{calendar}")


def test_a_run_the_calendar_moved_says_where_from(console: Console, stack: Stack) -> None:
    # Tomorrow is excluded and its fire times go to the previous business day at the same wall time:
    # today's, where each one joins the run of today's own (one run, moved_from tomorrow's time).
    now = datetime.now(UTC)
    tomorrow = (now + timedelta(minutes=2)).date() + timedelta(days=1)
    calendar = create_calendar(
        stack, name=unique("tomorrow-off"), weekdays=[1, 2, 3, 4, 5, 6, 7], dates=[tomorrow.isoformat()]
    )
    job = stack.create_job(
        name=unique("browser-moved"),
        schedule={
            "cron": "*/10 * * * * *",
            "calendar": calendar["name"],
            "on_excluded": "previous_business_day",
        },
    )
    console.open(f"#/jobs/{job['job_id']}")

    def moved_row(driver: Any) -> Any:
        for row in driver.find_elements(By.CSS_SELECTOR, "#runs-table tr.run-row"):
            if row.find_elements(By.CSS_SELECTOR, ".moved"):
                return row
        return None

    row = console.wait(moved_row, 40, "no run says it was moved")
    moved = row.find_element(By.CSS_SELECTOR, ".moved")
    assert moved.text.startswith("moved from")
    original = moved.find_element(By.TAG_NAME, "time").get_attribute("title")
    scheduled = row.find_element(By.CSS_SELECTOR, "time").get_attribute("title")
    # The same wall time (UTC here), a day later: tomorrow's occurrence, moved onto today's.
    assert original == f"UTC {tomorrow.isoformat()}T{str(scheduled)[15:]}", (original, scheduled)
    assert f"calendar {calendar['name']}" in row.find_element(By.CSS_SELECTOR, "td.why").text
    stack.call("DELETE", f"/v1/jobs/{job['job_id']}")

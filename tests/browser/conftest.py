"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``, installed by ``make browser``)
driven by Selenium against the web console of a local stack started for these tests.

Set ``PUNCTUAL_CONSOLE_SCREENSHOTS=docs/console`` (``make console-screenshots``) to keep the
screenshots the tests take of the main views; otherwise they go to the test's temporary directory.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver as ChromeDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from punctual.testing.stack import local_stack
from tests.e2e.conftest import Api

DESKTOP = (1280, 900)
PHONE = (390, 844)


def _find_browser() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail(
            "the browser tests need Debian's chromium and chromium-driver: run `make browser` "
            "(make test does), or apt-get install chromium chromium-driver"
        )
    return chromium, driver


@dataclass
class Stack(Api):
    """The local stack the browser tests drive, called as the end-to-end tests call it."""

    def create_job(self, **body: Any) -> dict[str, Any]:
        body.setdefault("target", {"type": "http", "url": f"{self.base_url}/v1/health", "method": "GET"})
        status, job = self.call("POST", "/v1/jobs", body)
        assert status == 201, job
        return dict(job)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # Module-scoped (as the browser): both stop when the browser tests are done, not with the session.
    with local_stack(tmp_path_factory.mktemp("console-stack"), workers=1) as running:
        stack = Stack(running.base_url, running.state_dir)
        # A recurring job that gathers a history while the other tests run (test_console.py's last test).
        stack.create_job(name="every-10s", schedule={"cron": "*/10 * * * * *"}, tags={"team": "console"})
        yield stack


class Console:
    """The console in one browser tab, with the few moves the tests make."""

    def __init__(self, driver: WebDriver, base_url: str, shots: Path) -> None:
        self.driver = driver
        self.base_url = base_url
        self.shots = shots

    def open(self, route: str = "#/jobs") -> None:
        url = f"{self.base_url}/console{route}"
        # A get of the page's own URL changes nothing (only a hash would): reload it, so a view opens
        # afresh (a jobs list filtered by an earlier test is not the list).
        if self.driver.current_url == url:
            self.driver.refresh()
        self.driver.get(url)
        self.wait_for(By.CSS_SELECTOR, "main h2")
        if self.driver.find_elements(By.ID, "sign-in"):
            self.driver.find_element(By.ID, "sign-in").click()
            self.wait_for(By.ID, "sign-out")
            self.driver.get(f"{self.base_url}/console{route}")
        self.wait_for(By.ID, "sign-out")

    def wait(self, predicate: Callable[[WebDriver], Any], timeout: float = 15, message: str = "") -> Any:
        return WebDriverWait(
            self.driver, timeout, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)
        ).until(predicate, message)

    def wait_for(self, by: str, value: str, timeout: float = 15) -> WebElement:
        found: WebElement = self.wait(
            lambda d: next((e for e in d.find_elements(by, value) if e.is_displayed()), None),
            timeout,
            f"nothing visible matches {value!r}",
        )
        return found

    def wait_for_text(self, by: str, value: str, text: str, timeout: float = 15) -> WebElement:
        def matching(driver: WebDriver) -> WebElement | None:
            return next((e for e in driver.find_elements(by, value) if text in e.text), None)

        found: WebElement = self.wait(matching, timeout, f"no {value!r} shows {text!r}")
        return found

    def fill(self, field_id: str, text: str) -> None:
        """Replace an input's text the way a person does (select all, type), so the page sees input events."""
        element = self.wait_for(By.ID, field_id)
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(Keys.DELETE)
        if text:
            element.send_keys(text)

    def click(self, element_id: str) -> None:
        self.wait_for(By.ID, element_id).click()

    def expand(self, details: str) -> None:
        """Open a `<details>` by clicking its summary, as often as it takes: a click that lands while the
        page is still laying out (a list arriving above it) hits whatever moved under the pointer."""

        def opened(driver: WebDriver) -> bool:
            shown = [e for e in driver.find_elements(By.CSS_SELECTOR, details) if e.is_displayed()]
            element = shown[0] if shown else None
            if element is None:
                return False
            if element.get_attribute("open") is None:
                element.find_element(By.TAG_NAME, "summary").click()
                return False
            return True

        self.wait(opened, message=f"{details!r} did not open")

    def no_alert(self) -> bool:
        try:
            self.driver.switch_to.alert  # noqa: B018 - raises when there is none
        except NoAlertPresentException:
            return True
        return False

    def screenshot(self, name: str) -> Path:
        """The whole page (up to 1800 px tall) at the window's width."""
        time.sleep(0.3)  # let a plot or a fetched list settle
        size = self.driver.get_window_size()
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(size["width"], min(1800, max(size["height"], int(height) + 10)))
        self.driver.execute_script("window.scrollTo(0, 0); document.activeElement.blur()")
        time.sleep(0.2)
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(size["width"], size["height"])
        return path

    def resize(self, width: int, height: int) -> None:
        self.driver.set_window_size(width, height)


@pytest.fixture(scope="module")
def driver() -> Iterator[ChromeDriver]:
    chromium, chromedriver = _find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def shots_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("PUNCTUAL_CONSOLE_SCREENSHOTS")
    path = Path(wanted) if wanted else tmp_path_factory.mktemp("console-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def console(
    request: pytest.FixtureRequest, driver: ChromeDriver, stack: Stack, shots_dir: Path, tmp_path: Path
) -> Iterator[Console]:
    page = Console(driver, stack.base_url, shots_dir)
    page.resize(*DESKTOP)
    yield page
    if request.node.stash.get(_FAILED, False):
        # What the browser showed when the test failed, to read in its report.
        driver.save_screenshot(str(tmp_path / "failure.png"))
        text = driver.find_element(By.TAG_NAME, "body").text
        print(f"screenshot of the failure: {tmp_path / 'failure.png'}\npage text:\n{text[:3000]}")
    # Every test leaves the browser's console free of script errors (a CSP refusal, an exception).
    log: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    errors = [
        entry["message"]
        for entry in log
        if entry["level"] == "SEVERE" and not _expected_refusal(entry["message"])
    ]
    assert not errors, f"the page logged errors: {errors}"


def _expected_refusal(message: str) -> bool:
    """The API's 4xx answers (a validation error the test provokes) are logged by the browser; nothing
    else is fine."""
    return "Failed to load resource" in message and "/v1/" in message

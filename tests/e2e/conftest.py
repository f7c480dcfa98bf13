"""A real Chromium for what a person does in the browser (Debian's chromium and chromedriver)."""

import os

import pytest
from django.conf import settings

from tests.chromium import CHROMIUM, DRIVER, start
from tests.demo_data import seed_demo

SCREENSHOTS = settings.VAR_DIR / "screenshots"


def chromium(width: int = 1280, height: int = 1000, *, phone: bool = False):
    """A headless Chromium (tests/chromium.py); `phone` emulates a phone's viewport."""
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        pytest.skip(
            "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        )
    driver = start(width, height, phone=phone)
    driver.implicitly_wait(5)
    return driver


@pytest.fixture
def demo(db):
    """The demo's stories; its labeled history (months of calibration data) only where a test
    asks for `demo_with_history`: it doubles the time a seed takes."""
    seed_demo()


@pytest.fixture
def demo_with_history(db):
    seed_demo(history=True)


@pytest.fixture
def browser():
    driver = chromium()
    yield driver
    driver.quit()


@pytest.fixture
def second_browser():
    """Another person's browser: its own cookies, its own session."""
    driver = chromium()
    yield driver
    driver.quit()


def log_in(browser, live_server, username: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{live_server.url}/accounts/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys("demo")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # Wait for the next page: reading it sooner finds the login page's elements going stale.
    WebDriverWait(browser, 10).until(lambda driver: "/accounts/login/" not in driver.current_url)


def screenshot(browser, name: str) -> None:
    """Saved under var/screenshots/ (git-ignored) for people to look at; the whole page."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width = browser.execute_script("return document.documentElement.scrollWidth")
    height = browser.execute_script("return document.documentElement.scrollHeight")
    original = browser.get_window_size()
    browser.set_window_size(max(width, original["width"]), min(height + 120, 6000))
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    browser.set_window_size(original["width"], original["height"])


def console_errors(browser) -> list[str]:
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]

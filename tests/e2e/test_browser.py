"""What a person does, in headless Chromium against the live app: log in, work the queue, and
watch an assessment finish without reloading the page (htmx).

PostgreSQL only: a live server needs committed rows, and clearing them afterwards on SQLite
would run into the append-only trigger on the audit table (PostgreSQL truncates instead).
"""

import os
import shutil

import pytest
from django.core.management import call_command
from django.db import connection

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.memories.services import event_record
from memory_review.tenancy.models import Tenant
from tests.factories import make_jev

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        pytest.skip(
            "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1280,1000",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


@pytest.fixture
def demo(db):
    call_command("seed_demo", verbosity=0)


def log_in(browser, live_server, username: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{live_server.url}/accounts/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys("demo")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # Wait for the next page: reading it sooner finds the login page's elements going stale.
    WebDriverWait(browser, 10).until(lambda driver: "/accounts/login/" not in driver.current_url)


def test_a_lead_logs_in_and_works_the_review_queue(browser, live_server, demo):
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "acme-lead")

    assert browser.find_element(By.TAG_NAME, "h1").text == "Acme Support"
    assert "offline Jev stand-in" in browser.find_element(By.CLASS_NAME, "standin-banner").text
    browser.find_element(By.LINK_TEXT, "Review queue").click()
    rows = browser.find_elements(By.CSS_SELECTOR, "table.queue tbody tr")
    assert len(rows) >= 12
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Needs review")


def test_an_assessment_page_updates_itself_when_the_worker_finishes(browser, live_server, demo, standin):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as until
    from selenium.webdriver.support.ui import WebDriverWait

    acme = Tenant.objects.get(slug="acme")
    event = event_record(tenant=acme, source="slack", text="We finished moving production to eu-central-1.")
    queued = observe_event(event=event, enqueue=lambda a: None)
    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/assessments/{queued.pk}/")
    assert browser.find_element(By.CSS_SELECTOR, "#results .badge").text == "queued"

    run_invalidation(queued.pk, jev=make_jev(standin.url))  # what the worker does

    WebDriverWait(browser, 10).until(
        until.text_to_be_present_in_element((By.CSS_SELECTOR, "#results .badge"), "done")
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#results table tbody tr")
    assert browser.current_url.endswith(f"/assessments/{queued.pk}/")  # no reload, no navigation


def test_another_tenants_lead_sees_a_404(browser, live_server, demo):
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "globex-lead")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Globex Logistics"
    browser.get(f"{live_server.url}/t/acme/review/")
    assert "Not Found" in browser.find_element(By.TAG_NAME, "body").text

"""What a person does, in headless Chromium against the live app: log in, work the queue, and
watch an assessment finish without reloading the page (htmx).

PostgreSQL only: a live server needs committed rows, and clearing them afterwards on SQLite
would run into the append-only trigger on the audit table (PostgreSQL truncates instead).
"""

import pytest
from django.db import connection

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.memories.services import event_record
from memory_review.tenancy.models import Tenant
from tests.e2e.conftest import log_in
from tests.factories import make_jev

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


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

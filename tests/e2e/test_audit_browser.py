"""An auditor in headless Chromium: the audit page, filtered by a memory, a JSONL export checked by
tools/verify_export.py, and no action buttons anywhere. PostgreSQL only (a live server)."""

import importlib.util
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant
from tests.e2e.conftest import console_errors, log_in, screenshot

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]
TOOL = Path(__file__).resolve().parents[2] / "tools" / "verify_export.py"


def verifier():
    spec = importlib.util.spec_from_file_location("verify_export", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_auditor_filters_by_a_memory_exports_and_verifies_and_can_change_nothing(
    browser, live_server, demo
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    acme = Tenant.objects.get(slug="acme")
    memory = Memory.objects.for_tenant(acme).filter(transitions__isnull=False).order_by("pk").first()
    log_in(browser, live_server, "acme-auditor")
    browser.find_element(By.LINK_TEXT, "Audit").click()
    # As a person finds a memory: by what it is about (issue 28: the page asks for no id), then its
    # lineage, whose moves each link the trail narrowed to this memory.
    field = browser.find_element(By.NAME, "subject")
    field.send_keys(memory.subject)
    field.submit()
    WebDriverWait(browser, 10).until(lambda driver: "subject=" in driver.current_url)
    browser.find_element(By.CSS_SELECTOR, f'table.trail a[href$="/audit/memories/{memory.pk}/"]').click()
    browser.find_element(By.CSS_SELECTOR, f'a[href$="?memory={memory.pk}"]').click()
    # The filtered page replaces the whole trail's: read its rows once it has loaded.
    WebDriverWait(browser, 10).until(
        lambda driver: (
            f"memory={memory.pk}" in driver.current_url
            and driver.execute_script("return document.readyState") == "complete"
        )
    )
    assert f"Only the moves of “{memory.subject}”" in browser.find_element(By.TAG_NAME, "main").text

    rows = browser.find_elements(By.CSS_SELECTOR, "table.trail tbody tr")
    # Each row names the memory by its subject, its id in the link (issue 15: names, not ids).
    assert rows and all(memory.subject in row.text for row in rows)
    assert all(
        row.find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(f"/audit/memories/{memory.pk}/")
        for row in rows
    )
    screenshot(browser, "audit")
    link = browser.find_element(By.LINK_TEXT, "the JSONL").get_attribute("href")  # as a script GETs it
    text = browser.execute_async_script(
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(arguments[1])", link
    )
    tool = verifier()
    keys = {settings.AUDIT_KEY_ID: bytes.fromhex(settings.AUDIT_KEY)}
    assert f"all {len(rows)} rows verified" in tool.verify(text.splitlines(keepends=True), keys)

    pages = ["/t/acme/review/", f"/t/acme/memories/{memory.pk}/", "/t/acme/memories/", "/t/acme/promotions/",
             f"/t/acme/audit/memories/{memory.pk}/"]  # fmt: skip
    for path in pages:
        browser.get(f"{live_server.url}{path}")
        forms = [
            form.get_attribute("action")
            for form in browser.find_elements(By.CSS_SELECTOR, "form[method=post]")
        ]
        # Reads only: logging out, verifying, and asking for an export (a file a worker writes).
        reads = ("/accounts/logout/", "/audit/verify/", "/audit/export.jsonl", "/audit/export.csv")
        assert all(action.endswith(reads) for action in forms), (
            path,
            forms,
        )
    assert console_errors(browser) == []

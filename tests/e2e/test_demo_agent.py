"""The demo's agent (issue 16, item 5): a lead forgets a memory in Chromium, and the agent, which
knows memory-review only through the API, logs that it dropped it within seconds; meanwhile it
answers customers and sends receipts for what the answers used.

PostgreSQL only, as the other browser tests (tests/e2e/test_browser.py says why)."""

import threading
import time

import pytest
from django.db import connection

from memory_review.agents.models import Receipt
from memory_review.demo.agent import DemoAgent
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_create
from tests.e2e.conftest import log_in

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


def wait_for_line(lines: list[str], text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [line for line in lines if text in line]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no line with {text!r} within {seconds} s; the agent said:\n" + "\n".join(lines))


def test_a_forget_made_in_the_browser_is_dropped_by_the_demo_agent_within_seconds(
    browser, live_server, demo, tmp_path
):
    acme = Tenant.objects.get(slug="acme")
    acme.two_person_rule = False  # one lead decides here; the rule has its own browser test
    acme.save()
    lines: list[str] = []
    agent = DemoAgent(
        live_server.url,
        token_create(tenant=acme, name="demo-agent")[1],
        tenant="acme",
        state_file=tmp_path / "webhook.json",
        write=lines.append,
        answer_every=2,
        wait=1,
    )
    running = threading.Thread(target=agent.run, kwargs={"webhook_port": None}, daemon=True)
    running.start()
    try:
        dropped_within_seconds(browser, live_server, acme, agent, lines)
    finally:
        agent.stopping.set()
        running.join(timeout=10)  # its last long poll ends before the test's database goes
        agent.http.close()  # and the server's keep-alive threads (each with a connection) with it


def dropped_within_seconds(browser, live_server, acme, agent, lines):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as until
    from selenium.webdriver.support.ui import WebDriverWait

    wait_for_line(lines, "memories in force from a snapshot", 30)
    memory = (
        Memory.objects.filter(tenant=acme, status="active", user_id__isnull=False, pk__in=list(agent.cache))
        .order_by("pk")
        .first()
    )

    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/memories/{memory.pk}/")
    browser.find_element(By.ID, "reason").send_keys("The customer asked us to forget it.")
    browser.find_element(By.CSS_SELECTOR, "button[name=action][value=forget]").click()
    WebDriverWait(browser, 5).until(until.alert_is_present()).accept()  # "Forget this memory?"

    line = wait_for_line(lines, f'dropped "{memory.subject}" (memory {memory.pk}', 10)

    assert "forgotten by" in line and "heard via the feed" in line
    assert memory.pk not in agent.cache
    assert Memory.objects.get(pk=memory.pk).status == "deleted"
    wait_for_line(lines, "receipt 201", 10)
    assert Receipt.objects.filter(tenant=acme, response_id__startswith="demo-answer-").exists()


def test_forget_asks_first_and_a_no_leaves_the_memory_as_it_was(browser, live_server, demo):
    """htmx would ask the form's hx-confirm, not the pressed button's: static/js/keys.js asks it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as until
    from selenium.webdriver.support.ui import WebDriverWait

    acme = Tenant.objects.get(slug="acme")
    acme.two_person_rule = False
    acme.save()
    memory = Memory.objects.filter(tenant=acme, status="active").order_by("pk").first()
    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/memories/{memory.pk}/")
    browser.find_element(By.ID, "reason").send_keys("Asked to.")
    browser.find_element(By.CSS_SELECTOR, "button[name=action][value=forget]").click()

    alert = WebDriverWait(browser, 5).until(until.alert_is_present())
    assert alert.text.startswith("Forget this memory?")
    alert.dismiss()
    time.sleep(1)

    memory.refresh_from_db()
    assert memory.status == "active" and memory.content

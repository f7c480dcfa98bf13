"""The review workspace in headless Chromium against the live app, as a support lead, a
reviewer and an auditor use it: claim, decide, conflict, keyboard, charts. Screenshots of the
queue, a memory's page and the disagreements page are saved under var/screenshots/.

PostgreSQL only, like the other browser tests: a live server needs committed rows.
"""

import time

import pytest
from django.db import connection
from django.db.models import Count, Q

from memory_review.audit.models import Transition
from memory_review.memories.models import Memory
from tests.e2e.conftest import SCREENSHOTS, console_errors, log_in, screenshot

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


def wait_for(browser, condition, timeout: float = 10):
    """Until `condition` holds; an element htmx swapped out while it was read is read again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
        condition
    )


def first_row(browser):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "table.queue tbody tr[data-row]")


def test_a_lead_claims_the_first_item_approves_it_with_a_reason_and_it_leaves_the_queue(
    browser, live_server, demo
):
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "acme-lead")
    browser.find_element(By.LINK_TEXT, "Review queue").click()
    row = first_row(browser)
    memory = Memory.objects.get(pk=int(row.get_attribute("id").removeprefix("memory-")))
    screenshot(browser, "queue")

    row.find_element(By.CSS_SELECTOR, "button[data-key=c]").click()
    wait_for(browser, lambda d: "yours" in d.find_element(By.ID, f"claim-{memory.pk}").text)
    browser.find_element(By.CSS_SELECTOR, f"#memory-{memory.pk} td.subject a").click()
    browser.find_element(By.ID, "reason").send_keys("Checked against the carrier's own page.")
    browser.find_element(By.CSS_SELECTOR, "#decide button[value=approve]").click()

    wait_for(browser, lambda d: "approved" in d.find_element(By.CSS_SELECTOR, "#memory-state .success").text)
    history = browser.find_element(By.ID, "status-history").text
    assert "Maria Chen" in history and "Checked against the carrier's own page." in history
    assert "needs review\n→\nactive" in history or "needs review → active" in history
    browser.find_element(By.LINK_TEXT, "Review queue").click()
    assert not browser.find_elements(By.ID, f"memory-{memory.pk}")
    memory.refresh_from_db()
    assert memory.status == "active"
    assert console_errors(browser) == []


def test_the_second_of_two_reviewers_is_told_about_the_conflict_and_nothing_is_overwritten(
    browser, second_browser, live_server, demo
):
    from selenium.webdriver.common.by import By

    memory = Memory.objects.filter(tenant__slug="acme", status="needs_review").order_by("pk").first()
    url = f"{live_server.url}/t/acme/memories/{memory.pk}/"
    log_in(browser, live_server, "acme-lead")
    log_in(second_browser, live_server, "acme-reviewer")
    browser.get(url)
    second_browser.get(url)

    browser.find_element(By.CSS_SELECTOR, "#decide button[value=approve]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#memory-state .success"))
    second_browser.find_element(By.CSS_SELECTOR, "#decide button[value=freeze]").click()

    conflict = wait_for(second_browser, lambda d: d.find_element(By.CSS_SELECTOR, "#memory-state .conflict"))
    assert "This memory changed since you loaded it" in conflict.text
    assert "Maria Chen moved it from needs review to active" in conflict.text
    memory.refresh_from_db()
    assert memory.status == "active"
    assert not Transition.objects.filter(memory=memory, action="freeze").exists()


def test_the_queue_and_the_memory_page_work_from_the_keyboard(browser, live_server, demo):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/review/")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.queue tbody tr[data-row]")
    keys = ActionChains(browser)

    def focused_id() -> str:
        return browser.switch_to.active_element.get_attribute("id")

    keys.send_keys("a").perform()  # no row chosen yet: nothing is approved
    time.sleep(1)  # time enough for a request that should not have been sent
    assert (
        Memory.objects.filter(pk__in=[int(r.get_attribute("id")[7:]) for r in rows], status="active").count()
        == 0
    )
    keys.send_keys("j").perform()
    assert focused_id() == rows[0].get_attribute("id")
    keys.send_keys("j").perform()
    assert focused_id() == rows[1].get_attribute("id")
    keys.send_keys("k").perform()
    assert focused_id() == rows[0].get_attribute("id")

    # `a` on the second row approves it in place: the row says so, and it is gone from the queue.
    keys.send_keys("j").perform()
    second = int(rows[1].get_attribute("id").removeprefix("memory-"))
    keys.send_keys("a").perform()
    wait_for(browser, lambda d: "approved" in d.find_element(By.ID, f"memory-{second}").text)
    assert Memory.objects.get(pk=second).status == "active"
    keys.send_keys("k").perform()

    pk = int(rows[0].get_attribute("id").removeprefix("memory-"))
    assert focused_id() == f"memory-{pk}"
    keys.send_keys("c").perform()
    wait_for(browser, lambda d: "yours" in d.find_element(By.ID, f"claim-{pk}").text)
    assert focused_id() == f"memory-{pk}"  # the swapped row keeps the reviewer's place
    keys.send_keys(Keys.ENTER).perform()
    wait_for(browser, lambda d: d.current_url.endswith(f"/memories/{pk}/"))

    keys.send_keys("?").perform()
    assert browser.find_element(By.ID, "shortcuts").is_displayed()
    keys.send_keys(Keys.ESCAPE).perform()
    keys.send_keys("e").perform()
    assert browser.switch_to.active_element.get_attribute("data-rewrite") is not None
    keys.send_keys(Keys.ESCAPE).perform()
    keys.send_keys("f").perform()

    wait_for(browser, lambda d: "frozen" in d.find_element(By.CSS_SELECTOR, "#memory-state .success").text)
    assert Memory.objects.get(pk=pk).status == "frozen"
    keys.send_keys("r").perform()  # restore is not offered for a frozen memory: nothing happens
    assert Memory.objects.get(pk=pk).status == "frozen"


def test_restore_from_the_keyboard_asks_for_a_reason_first(browser, live_server, demo):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    dead = Memory.objects.filter(tenant__slug="acme", status="contradicted").order_by("pk").first()
    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/memories/{dead.pk}/")

    ActionChains(browser).send_keys("r").perform()
    assert browser.switch_to.active_element.get_attribute("id") == "reason"
    assert "Ctrl+Enter to restore" in browser.find_element(By.ID, "flash").text
    time.sleep(0.3)  # the reviewer reads the prompt: keys typed before the box shows are dropped (keys.js)
    ActionChains(browser).send_keys("A one-day outage, not a change.").key_down(Keys.CONTROL).send_keys(
        Keys.ENTER
    ).key_up(Keys.CONTROL).perform()

    wait_for(browser, lambda d: "restored" in d.find_element(By.CSS_SELECTOR, "#memory-state .success").text)
    dead.refresh_from_db()
    assert dead.status == "active"


def test_the_memory_page_draws_its_chart_and_graph_without_javascript_errors(browser, live_server, demo):
    from selenium.webdriver.common.by import By

    judged = (  # the linked demo memory with the most votes, so chart and graph have a story to tell
        Memory.objects.filter(tenant__slug="acme")
        .filter(Q(links_in__isnull=False) | Q(links_out__isnull=False))
        .annotate(votes=Count("verdicts", distinct=True))
        .order_by("-votes", "pk")
        .first()
    )
    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/memories/{judged.pk}/?hops=2")

    # Drawn by the server as SVG: every vote a dot, no script to wait for.
    dots = browser.find_elements(By.CSS_SELECTOR, "figure.still-true > svg circle")
    assert len(dots) == judged.verdicts.filter(still_true__isnull=False).count() > 0
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph a rect.centre")
    screenshot(browser, "memory")
    assert console_errors(browser) == []


def test_the_disagreements_page_shows_kappa_for_the_demo(browser, live_server, demo):
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "acme-lead")
    browser.find_element(By.LINK_TEXT, "Promotions").click()
    browser.find_element(By.PARTIAL_LINK_TEXT, "Where the policy and reviewers disagree").click()

    from memory_review.assessments.models import PromotionCandidate

    text = browser.find_element(By.TAG_NAME, "main").text
    disagreed = PromotionCandidate.objects.filter(tenant__slug="acme", disagreement=True).count()
    assert disagreed >= 3 and "Cohen's kappa" in text and f"The {disagreed} disagreements" in text
    screenshot(browser, "disagreements")
    assert console_errors(browser) == []


def test_an_auditor_reads_everything_and_sees_no_action_buttons(browser, live_server, demo):
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "acme-auditor")
    browser.get(f"{live_server.url}/t/acme/review/")
    assert browser.find_elements(By.CSS_SELECTOR, "table.queue tbody tr")
    assert not browser.find_elements(By.CSS_SELECTOR, "table.queue button")
    first_row(browser).find_element(By.CSS_SELECTOR, "td.subject a").click()

    browser.implicitly_wait(0)
    assert not browser.find_elements(By.ID, "decide")
    assert not browser.find_elements(By.CSS_SELECTOR, "#memory-state button")
    assert "does not change memories" in browser.find_element(By.ID, "memory-state").text


def test_the_queue_fits_a_phone(live_server, demo):
    from tests.e2e.conftest import chromium

    phone = chromium(width=390, height=844, phone=True)
    try:
        log_in(phone, live_server, "acme-lead")
        phone.get(f"{live_server.url}/t/acme/review/")
        assert phone.execute_script("return window.innerWidth") == 390
        assert (
            phone.execute_script("return document.documentElement.scrollWidth") <= 390
        )  # no sideways scroll
        phone.save_screenshot(str(SCREENSHOTS / "queue-390px.png"))
    finally:
        phone.quit()

"""The reviewer's day in Chromium at 1440 x 900 (issue 15): twenty decisions with one key each in
the review flow, the claim taken on arrival and released on skip, undo and its refusal; the new
evidence above the fold; a dozen queue rows above the fold; a restore reason typed fast, kept
whole. Screenshots of the flow at 1440 and 390 px go to var/screenshots/.

PostgreSQL only, like the other browser tests: a live server needs committed rows."""

import time

import pytest
from django.db import connection

from memory_review.assessments.models import PolicyVersion
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant
from memory_review.workflow.models import Claim
from tests.e2e.conftest import SCREENSHOTS, chromium, console_errors, log_in
from tests.factories import flagged

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def desk():
    """A lead's desk: a 1440 x 900 viewport, as the issue measured it (a headless window of that
    size leaves less for the page)."""
    driver = chromium(1440, 1000)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1440, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    yield driver
    driver.quit()


@pytest.fixture
def busy_queue(demo):
    """The demo's queue and thirty more items, so a screen and a morning are full."""
    acme = Tenant.objects.get(slug="acme")
    policy = PolicyVersion.objects.for_tenant(acme).active()
    for n in range(30):
        flagged(acme, policy, still_true=0.4 + (n % 10) / 50, subject=f"carrier cut-off {n}")
    return acme


def press(browser, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(keys).perform()


def shown(browser) -> str:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        return browser.find_element(By.CSS_SELECTOR, "h1.flow-title a").text
    except (NoSuchElementException, StaleElementReferenceException):
        return ""


SETTLED = "return !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling');"


def next_item(browser, after: str, timeout: float = 10) -> str:
    """The next item's subject, once htmx has settled the swap: a key pressed inside htmx's 20 ms
    settle delay presses a button htmx has not wired yet, so the form posts without JavaScript (it
    still works, with the notice in the page's messages rather than the flow)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = shown(browser)
        if now and now != after and browser.execute_script(SETTLED):
            return now
        time.sleep(0.02)
    raise AssertionError(f"the flow did not move on from {after!r}")


def save(browser, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def test_twenty_decisions_with_one_key_each_claim_skip_and_undo(desk, live_server, busy_queue):
    from selenium.webdriver.common.by import By

    log_in(desk, live_server, "acme-lead")
    desk.get(f"{live_server.url}/t/acme/review/")
    desk.find_element(By.CSS_SELECTOR, "[data-review-these]").click()
    first = shown(desk)
    assert Claim.objects.held().get(memory__subject=first).holder.username == "acme-lead"
    save(desk, "review-flow-1440")

    before = Transition.objects.order_by("-pk").values_list("pk", flat=True).first()
    started, current = time.monotonic(), first
    for n in range(20):
        press(desk, "a" if n % 2 == 0 else "f")
        current = next_item(desk, current)
    seconds = time.monotonic() - started
    print(
        f"\n20 decisions in the review flow, one key each: {seconds:.1f} s, {seconds / 20:.2f} s a decision"
    )

    from django.contrib.auth import get_user_model

    lead = f"user:{get_user_model().objects.get(username='acme-lead').pk}"
    decided = Transition.objects.filter(pk__gt=before, actor=lead, action__in=("approve", "freeze"))
    assert decided.count() == 20
    assert not Claim.objects.held().filter(memory__in=decided.values("memory")).exists()

    skipped = current
    press(desk, "s")
    current = next_item(desk, skipped)
    assert not Claim.objects.held().filter(memory__subject=skipped).exists()
    assert Memory.objects.get(subject=skipped).status == "needs_review"

    decided_now = current
    press(desk, "a")
    current = next_item(desk, decided_now)
    press(desk, "u")
    back = next_item(desk, current)
    assert back == decided_now and "is back in the queue" in desk.find_element(By.ID, "flow").text
    assert Memory.objects.get(subject=decided_now).status == "needs_review"

    press(desk, "f")
    current = next_item(desk, back)
    memory = Memory.objects.get(subject=back)
    colleague = get_user_model().objects.get(username="acme-reviewer")
    transition(
        obj=memory,
        action="unfreeze",
        actor=Actor.user(colleague),
        reason="not ours",
        seen_version=memory.row_version,
    )  # a colleague acts on it before the lead's undo
    press(desk, "u")
    deadline = time.monotonic() + 10
    while "Not undone" not in desk.find_element(By.ID, "flow").text and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "acted on “" in desk.find_element(By.ID, "flow").text
    assert console_errors(desk) == []


def test_the_memory_and_its_new_evidence_are_above_the_fold(desk, live_server, busy_queue):
    from selenium.webdriver.common.by import By

    log_in(desk, live_server, "acme-lead")
    memory = (
        Memory.objects.filter(tenant=busy_queue, status="needs_review")
        .exclude(subject__startswith="carrier")
        .first()
    )
    for path in (f"/t/acme/memories/{memory.pk}/", "/t/acme/review/flow/"):
        desk.get(live_server.url + path)
        fold = desk.execute_script("return window.innerHeight")
        for selector in (
            ".versus .memory-content",
            ".versus blockquote.event",
            ".versus .why",
            ".vote-strip",
        ):
            bottom = desk.execute_script(
                "return arguments[0].getBoundingClientRect().bottom",
                desk.find_element(By.CSS_SELECTOR, selector),
            )
            assert bottom <= fold, f"{path}: {selector} ends at {bottom:.0f} px, below the fold ({fold} px)"
    buttons = desk.find_element(By.CSS_SELECTOR, ".flow-decide .buttons")
    assert desk.execute_script("return arguments[0].getBoundingClientRect().bottom", buttons) <= fold


def test_a_dozen_queue_rows_fit_above_the_fold(desk, live_server, busy_queue):
    from selenium.webdriver.common.by import By

    log_in(desk, live_server, "acme-lead")
    desk.get(f"{live_server.url}/t/acme/review/")
    fold = desk.execute_script("return window.innerHeight")
    rows = desk.find_elements(By.CSS_SELECTOR, "table.queue tbody tr[data-row]")
    bottoms = [desk.execute_script("return arguments[0].getBoundingClientRect().bottom", row) for row in rows]
    above = sum(1 for bottom in bottoms if bottom <= fold)
    save(desk, "queue-1440")

    assert above >= 12, f"{above} rows above the fold ({fold} px); row bottoms {bottoms[:14]}"


def test_a_restore_reason_typed_fast_is_kept_whole(desk, live_server, demo):
    """r on a dead memory's row focuses the row's own reason box (no page load to lose keys
    to), whatever follows is the reason, and Ctrl+Enter restores with it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    log_in(desk, live_server, "acme-lead")
    desk.get(f"{live_server.url}/t/acme/memories/?status=superseded")
    press(desk, "j")
    memory = Memory.objects.get(
        pk=int(desk.switch_to.active_element.get_attribute("id").removeprefix("memory-"))
    )
    reason = "The customer wrote again: the old address still stands, see ticket 4471."

    ActionChains(desk).send_keys("r" + reason).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(
        Keys.CONTROL
    ).perform()

    deadline = time.monotonic() + 10
    while (
        not Transition.objects.filter(memory=memory, action="restore").exists()
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert Transition.objects.get(memory=memory, action="restore").reason == reason
    assert Memory.objects.get(pk=memory.pk).status == "active"


def test_the_flow_on_a_phone(live_server, busy_queue):
    phone = chromium(390, 844, phone=True)
    try:
        log_in(phone, live_server, "acme-lead")
        phone.get(f"{live_server.url}/t/acme/review/flow/")
        assert phone.execute_script("return document.documentElement.scrollWidth") <= 390
        save(phone, "review-flow-390")
    finally:
        phone.quit()

"""The reviewer's day in Chromium at 1440 x 900 (issue 15): twenty decisions with one key each in
the review flow, the claim taken on arrival and released on skip, undo and its refusal; the new
evidence above the fold; a dozen queue rows above the fold; a restore reason typed fast, kept
whole. Screenshots of the flow at 1440 and 390 px go to var/screenshots/.

Keys at a person's pace (issue 28), sent as the keyboard sends them (CDP's Input.dispatchKeyEvent,
auto-repeat included) and counted from the audit trail: a held key decides one item, a double
press 30, 80 or 150 ms apart decides one, a double click decides one, a reviewer pressing one key
every 400 ms decides every item; focus lands on the next item's heading and the live region says
what was done; a key that asks for a reason is not typed into it.

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


def read(browser) -> None:
    """What a person does before deciding: wait for the item, then look at it (past keys.js's and
    the server's 200 ms floor)."""
    deadline = time.monotonic() + 10
    while not browser.execute_script(SETTLED) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)


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
        read(desk)
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
    read(desk)
    press(desk, "s")
    current = next_item(desk, skipped)
    assert not Claim.objects.held().filter(memory__subject=skipped).exists()
    assert Memory.objects.get(subject=skipped).status == "needs_review"

    decided_now = current
    read(desk)
    press(desk, "a")
    current = next_item(desk, decided_now)
    read(desk)
    press(desk, "u")
    back = next_item(desk, current)
    assert back == decided_now and "is back in the queue" in desk.find_element(By.ID, "flash").text
    assert Memory.objects.get(subject=decided_now).status == "needs_review"

    read(desk)
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
    read(desk)
    press(desk, "u")
    deadline = time.monotonic() + 10
    while "Not undone" not in desk.find_element(By.ID, "flash").text and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "acted on “" in desk.find_element(By.ID, "flash").text
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
    to); once the box is there to see, whatever is typed is the reason, and Ctrl+Enter restores
    with it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    log_in(desk, live_server, "acme-lead")
    desk.get(f"{live_server.url}/t/acme/memories/?status=superseded")
    press(desk, "j")
    memory = Memory.objects.get(
        pk=int(desk.switch_to.active_element.get_attribute("id").removeprefix("memory-"))
    )
    reason = "The customer wrote again: the old address still stands, see ticket 4471."

    press(desk, "r")
    assert desk.switch_to.active_element.get_attribute("data-reason") is not None
    read(desk)
    ActionChains(desk).send_keys(reason).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(
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


def key(browser, name: str, *, repeat: bool = False, up: bool = False) -> None:
    """One event as a keyboard sends it: the key going down (or its auto-repeat), or coming up."""
    code = ord(name.upper())
    event = {"type": "keyUp" if up else "keyDown", "key": name, "code": f"Key{name.upper()}"}
    event.update(windowsVirtualKeyCode=code, nativeVirtualKeyCode=code, autoRepeat=repeat)
    if not up:
        event.update(text=name, unmodifiedText=name)
    browser.execute_cdp_cmd("Input.dispatchKeyEvent", event)


def hold(browser, name: str, seconds: float = 0.8) -> int:
    """A key held down: pressed, then after the keyboard's delay (250 ms) repeated about 30
    times a second until it comes up. The number of keydowns sent."""
    started = time.monotonic()
    key(browser, name)
    time.sleep(0.25)
    sent = 1
    while time.monotonic() - started < seconds:
        key(browser, name, repeat=True)
        sent += 1
        time.sleep(0.033)
    key(browser, name, up=True)
    return sent


def double_press(browser, name: str, gap: float) -> float:
    """The key pressed twice, `gap` seconds from one press to the next; the gap achieved."""
    first = time.monotonic()
    key(browser, name)
    key(browser, name, up=True)
    time.sleep(max(0.0, gap - (time.monotonic() - first)))
    second = time.monotonic()
    key(browser, name)
    key(browser, name, up=True)
    return second - first


def decided_since(before: int | None) -> int:
    """The lead's decisions on the audit trail since audit row `before`."""
    from django.contrib.auth import get_user_model

    lead = get_user_model().objects.get(username="acme-lead")
    rows = Transition.objects.filter(actor=f"user:{lead.pk}", action__in=("approve", "freeze"))
    return rows.filter(pk__gt=before or 0).count()


def last_audit_row() -> int | None:
    return Transition.objects.order_by("-pk").values_list("pk", flat=True).first()


def quiet(browser) -> None:
    """Time enough for any request the keys should not have sent, then the page at rest."""
    time.sleep(1.0)
    read(browser)


def open_flow(browser, live_server) -> None:
    log_in(browser, live_server, "acme-lead")
    browser.get(f"{live_server.url}/t/acme/review/flow/")
    browser.execute_script("window.sameDocument = true;")  # gone if a key posted the form whole
    read(browser)


def test_holding_a_key_decides_one_item(desk, live_server, busy_queue):
    open_flow(desk, live_server)
    first, before = shown(desk), last_audit_row()

    sent = hold(desk, "a", seconds=0.8)
    quiet(desk)

    decided = decided_since(before)
    print(f"\nheld a for 0.8 s ({sent} keydowns, {sent - 1} of them repeats): {decided} decided")
    assert decided == 1
    assert Memory.objects.get(subject=first).status == "active" and shown(desk) != first
    assert desk.execute_script("return window.sameDocument === true")


def test_a_double_press_decides_one_item(desk, live_server, busy_queue):
    open_flow(desk, live_server)
    results = []
    for gap_ms, name in ((30, "f"), (80, "a"), (150, "a")):
        before, first = last_audit_row(), shown(desk)
        achieved = double_press(desk, name, gap_ms / 1000)
        quiet(desk)
        results.append((gap_ms, round(achieved * 1000), decided_since(before), shown(desk) != first))
        read(desk)
    print("\ndouble presses (asked ms, sent ms, decided, moved on):", results)
    assert [decided for _, _, decided, _ in results] == [1, 1, 1]
    assert all(moved for *_, moved in results)
    assert desk.execute_script("return window.sameDocument === true")


def test_a_double_click_on_a_button_decides_one_item(desk, live_server, busy_queue):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    open_flow(desk, live_server)
    before = last_audit_row()

    ActionChains(desk).double_click(
        desk.find_element(By.CSS_SELECTOR, '[data-flow] [data-key="a"]')
    ).perform()
    quiet(desk)

    assert decided_since(before) == 1
    assert desk.execute_script("return window.sameDocument === true")


def test_a_reviewer_pressing_one_key_every_400_ms_is_not_slowed(desk, live_server, busy_queue):
    """A fast, deliberate reviewer: a key 400 ms after the last, on an item they have seen. The
    beat waits only when the next item has not been on screen for the floor (200 ms, and 20 more
    for the eye) by then, which happens only when it took over 180 ms to come (the figures
    printed say how often). Every key decides: the guard costs a reviewer nothing past the floor."""
    open_flow(desk, live_server)
    desk.execute_script(ON_SCREEN)
    before, presses, on_beat = last_audit_row(), 10, 0
    last = time.monotonic() - 0.4
    for n in range(presses):
        while desk.execute_script("return window.swaps < arguments[0] || window.onScreen() < 220", n):
            time.sleep(0.005)  # the next item is not there yet, or has only just come
        on_beat += time.monotonic() <= last + 0.4
        time.sleep(max(0.0, last + 0.4 - time.monotonic()))
        last = time.monotonic()
        name = "a" if n % 2 == 0 else "f"
        key(desk, name)
        key(desk, name, up=True)
    quiet(desk)

    decided = decided_since(before)
    shown_for = sorted(round(ms) for ms in desk.execute_script("return window.atKeys"))
    print(
        f"\n{presses} keys, one 400 ms after the last: {decided} decided, {on_beat} on the beat; "
        f"the item on screen for {shown_for} ms when its key came"
    )
    assert decided == presses


# The flow's swaps, and how long the item a key lands on had been on screen.
ON_SCREEN = """
var swappedAt = performance.now();
window.swaps = 0;
window.atKeys = [];
window.onScreen = function () { return performance.now() - swappedAt; };
document.addEventListener("htmx:afterSwap", function (e) {
  if (e.target.matches("[data-flow]")) { swappedAt = performance.now(); window.swaps += 1; }
});
document.addEventListener("keydown", function () { window.atKeys.push(window.onScreen()); }, true);
"""


def test_after_a_decision_focus_is_on_the_next_heading_and_the_live_region_says_so(
    desk, live_server, busy_queue
):
    """The reviewer types a reason and clicks Approve: focus goes to the next item's heading
    (not the new reason box, where the next key would be typed into the reason), and the
    page's live region, the same element as before, says what was done and what comes next."""
    from selenium.webdriver.common.by import By

    open_flow(desk, live_server)
    first, before = shown(desk), last_audit_row()
    desk.execute_script("window.liveRegion = document.getElementById('flash');")
    desk.find_element(By.ID, "flow-reason").send_keys("Checked with the carrier's ops desk.")
    desk.find_element(By.CSS_SELECTOR, '[data-flow] [data-key="a"]').click()
    second = next_item(desk, first)

    focused = desk.switch_to.active_element
    assert focused.tag_name == "h1" and second in focused.text
    assert desk.execute_script("return window.liveRegion === document.getElementById('flash')")
    live = desk.find_element(By.ID, "flash")
    assert live.get_attribute("role") == "status" and live.get_attribute("aria-live") == "polite"
    assert f"Approved “{first}”. Next: “{second}”." in live.text

    read(desk)
    key(desk, "f")
    key(desk, "f", up=True)
    next_item(desk, second)
    moves = Transition.objects.filter(pk__gt=before).order_by("pk")
    assert [(m.memory.subject, m.action) for m in moves] == [(first, "approve"), (second, "freeze")]
    assert moves[0].reason == "Checked with the carrier's ops desk."
    assert moves[1].reason == "frozen in review (no reason given)"  # no stray f typed into it


def test_a_key_that_asks_for_a_reason_is_not_typed_into_it(desk, live_server, demo):
    """r on a dead memory asks for a reason and puts the cursor in the box: neither r, nor its
    auto-repeat, nor a key pressed before the box could be seen is typed there; what the reviewer
    then types is the reason, whole."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    dead = Memory.objects.filter(tenant__slug="acme", status="contradicted").order_by("pk").first()
    log_in(desk, live_server, "acme-lead")
    desk.get(f"{live_server.url}/t/acme/memories/{dead.pk}/")
    read(desk)
    box = desk.find_element(By.ID, "reason")

    hold(desk, "r", seconds=0.6)
    assert desk.switch_to.active_element == box and box.get_property("value") == ""

    key(desk, "o")  # once the box has been there a moment, a key is the reviewer typing
    key(desk, "o", up=True)
    assert box.get_property("value") == "o"
    box.clear()
    ActionChains(desk).send_keys(Keys.ESCAPE).perform()
    read(desk)
    key(desk, "r")
    key(desk, "r", up=True)
    time.sleep(0.05)
    key(desk, "x")  # pressed 50 ms after the box took the cursor: before it could be seen
    key(desk, "x", up=True)
    assert box.get_property("value") == ""

    read(desk)
    ActionChains(desk).send_keys("A one-day outage, not a change.").key_down(Keys.CONTROL).send_keys(
        Keys.ENTER
    ).key_up(Keys.CONTROL).perform()
    deadline = time.monotonic() + 10
    while (
        not Transition.objects.filter(memory=dead, action="restore").exists() and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert Transition.objects.get(memory=dead, action="restore").reason == "A one-day outage, not a change."

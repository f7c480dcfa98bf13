"""A calibration labeler labels the demo's votes from the keyboard alone in headless Chromium, and
the calibration page draws every chart. Screenshots: var/screenshots/labels.png, calibration.png.

PostgreSQL only, like the other browser tests: a live server needs committed rows.
"""

import time

import pytest
from django.db import connection

from memory_review.calibration.models import Label
from tests.e2e.conftest import console_errors, log_in, screenshot

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]


def current_item(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "[data-item]").get_attribute("data-item")


def press(browser, keys: str, *, shift: bool = False) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    chain = ActionChains(browser)
    if shift:
        chain = chain.key_down(Keys.SHIFT).send_keys(keys).key_up(Keys.SHIFT)
    else:
        chain = chain.send_keys(keys)
    chain.perform()


def wait_until_not(browser, item: str) -> str:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    def moved(driver):
        try:
            now = current_item(driver)
        except (StaleElementReferenceException, NoSuchElementException):
            return False
        return now if now != item else False

    return WebDriverWait(browser, 10).until(moved)


def test_a_labeler_labels_undoes_skips_and_notes_with_the_keyboard_alone(
    browser, live_server, demo_with_history
):
    from django.contrib.auth import get_user_model
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    labeler = get_user_model().objects.get(username="acme-labeler")
    before = Label.objects.filter(labeler=labeler, withdrawn_at__isnull=True).count()
    log_in(browser, live_server, "acme-labeler")
    browser.get(f"{live_server.url}/t/acme/labels/")
    first = current_item(browser)
    assert "data-policy-said" not in browser.page_source  # blind until labeled

    # 4 as the outcome, with 5 also acceptable (shift+5) and a note typed after n.
    press(browser, "5", shift=True)
    assert browser.find_element(By.CSS_SELECTOR, '[data-alt-key="5"]').is_selected()
    press(browser, "n")
    browser.switch_to.active_element.send_keys("Moved warehouses, per the ops note.")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    press(browser, "4")
    second = wait_until_not(browser, first)
    label = Label.objects.get(labeler=labeler, verdict_id=int(first[1:]), withdrawn_at__isnull=True)
    assert (label.outcome, label.alternatives, label.note) == (
        "superseded", ["contradicted"], "Moved warehouses, per the ops note."
    )  # fmt: skip
    assert browser.find_element(By.CSS_SELECTOR, "[data-reveal] [data-policy-said]").text

    press(browser, "u")  # undo: the first item comes back
    assert wait_until_not(browser, second) == first
    press(browser, "s")  # skip it this time
    third = wait_until_not(browser, first)

    started, labeled, item = time.perf_counter(), 0, third
    for key in "1234512345":
        press(browser, key)
        item = wait_until_not(browser, item)
        labeled += 1
    seconds = time.perf_counter() - started
    rate = 3600 * labeled / seconds
    print(f"labeled {labeled} items from the keyboard in {seconds:.1f} s ({rate:.0f} an hour)")
    assert Label.objects.filter(labeler=labeler, withdrawn_at__isnull=True).count() == before + labeled
    screenshot(browser, "labels")
    assert console_errors(browser) == []


def test_the_calibration_page_shows_every_chart_for_the_demo_and_loads_no_chart_library(
    browser, live_server, demo_with_history
):
    """Issue 28: the charts come drawn as SVG with the page (no plotly.js, no script), each a
    sized image with its points, a legend and nothing focusable inside it."""
    from selenium.webdriver.common.by import By

    log_in(browser, live_server, "acme-lead")
    browser.find_element(By.LINK_TEXT, "Calibration").click()
    charts = browser.find_elements(By.CSS_SELECTOR, "svg[role=img]")
    assert len(charts) >= 9 + 6 + 4  # nine reliability diagrams, six curves, four promotion curves
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).concat([typeof window.Plotly]);"
    )
    assert not [name for name in loaded if "plotly" in name.lower() or "charts.js" in name], loaded
    assert loaded[-1] == "undefined"
    for chart in charts:
        name = browser.find_element(By.ID, chart.get_attribute("aria-labelledby")).get_attribute(
            "textContent"
        )
        assert name.endswith("the table below has its numbers"), name
        assert chart.size["height"] > 150 and chart.size["width"] > 250, (name, chart.size)
        assert chart.find_elements(By.CSS_SELECTOR, "g.point"), name
        assert not chart.find_elements(By.CSS_SELECTOR, "a, button, input, [tabindex]"), name
        legend = chart.find_element(By.XPATH, "following-sibling::ul[@data-legend]")
        assert len(legend.find_elements(By.TAG_NAME, "li")) >= 3, name
    grid = browser.find_element(By.CSS_SELECTOR, "[data-grid]").text
    assert "11664 policies" in grid.replace(",", "")
    screenshot(browser, "calibration")
    assert console_errors(browser) == []

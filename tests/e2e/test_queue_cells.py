"""The queue's cells as a person sees them (issue 28): at 1440 px and at 390 px every action button
lies inside the table, how long an item waited ("2 weeks late") is never cut, and a row a person
moves to from the keyboard shows every cell in full."""

import pytest
from django.db import connection

from tests.e2e.conftest import chromium, log_in

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]

# For each row: how far its buttons reach past the table, whether its Waiting cell is cut, and
# whether any of its cells is cut (text wider than the cell that holds it, with overflow hidden).
MEASURE = """
const table = document.querySelector('table.queue').getBoundingClientRect();
const cut = (el) => el.scrollWidth > el.clientWidth + 1;
return [...document.querySelectorAll('table.queue tr[data-row]')].map((row) => ({
  past: Math.max(0, ...[...row.querySelectorAll('td.actions button')].map(
    (b) => b.getBoundingClientRect().right - table.right)),
  waiting: row.querySelector('td.ago').innerText,
  waitingCut: cut(row.querySelector('td.ago')),
  anyCut: [...row.querySelectorAll('td, td.why summary')].some(cut),
}));
"""


@pytest.mark.parametrize(("width", "height", "phone"), [(1440, 900, False), (390, 844, True)])
def test_buttons_fit_and_the_waiting_time_is_never_cut(live_server, demo, width, height, phone):
    browser = chromium(width, height, phone=phone)
    try:
        log_in(browser, live_server, "acme-lead")
        browser.get(f"{live_server.url}/t/acme/review/")

        rows = browser.execute_script(MEASURE)

        assert rows, "the demo's queue is empty"
        assert [row["past"] for row in rows if row["past"] > 0] == []
        assert [row["waiting"] for row in rows if row["waitingCut"]] == []
        assert any("late" in row["waiting"] for row in rows)  # the demo has late items to read
    finally:
        browser.quit()


def test_a_row_reached_from_the_keyboard_shows_every_cell_in_full(live_server, demo):
    browser = chromium(1440, 900)
    try:
        log_in(browser, live_server, "acme-lead")
        browser.get(f"{live_server.url}/t/acme/review/")
        assert any(row["anyCut"] for row in browser.execute_script(MEASURE))  # a dozen rows, one line each

        browser.execute_script("document.querySelector('tr[data-row]').focus()")  # as j or Tab would
        focused = browser.execute_script(MEASURE)[0]

        assert not focused["anyCut"]
    finally:
        browser.quit()

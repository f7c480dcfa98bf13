"""A list filtered by text (the memories list, the queue) pages exactly as a plain filter of every
row would, whichever way it finds its page (issue 29): among the matches' ids when they are few,
else among the next rows in order, read a bounded stretch at a time (a common word fills a page
there; past a burst of other memories a page stops short, says how far it looked, and its link
goes on from there). Forwards to the end and back to the start, across the stretches' edges, for
both orders, one tenant's rows never another's."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_review.memories import search
from memory_review.memories.models import Memory
from memory_review.review import lists, paging
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def _pages(tenant, user, data, *, backwards_from=None, size=4):
    filters = lists.MemoryFilters(data, tenant=tenant)
    assert filters.is_valid()
    base = Memory.objects.for_tenant(tenant)
    seen, after, before = [], None, backwards_from
    while True:
        listing = lists.listing(base, filters, user=user, after=after, before=before, size=size)
        rows = [row.pk for row in listing.rows]
        seen = rows + seen if before else seen + rows
        if before and listing.page.prev_cursor:
            before = listing.page.prev_cursor
        elif not before and listing.page.next_cursor:
            after = listing.page.next_cursor
        else:
            return seen, listing


@pytest.fixture
def burst(acme, globex):
    """Invoices among the oldest and middle memories, then a burst of twelve others at the end;
    the other tenant's invoices written last of all."""
    for i in range(36):
        make_memory(acme, subject=f"invoice {i}" if i % 3 == 0 and i < 24 else f"delivery window {i}")
    for i in range(5):
        make_memory(globex, subject=f"invoice from globex {i}")


@pytest.mark.parametrize("order", ["recent", "oldest"])
@pytest.mark.parametrize("counted", [1000, 2])  # every match counted (by ids), or more than counted
@pytest.mark.parametrize("walk", [2000, 5])  # the page among the walked rows, or past them too
def test_every_page_of_a_search_is_a_plain_filter_of_the_rows(
    acme, lead, burst, monkeypatch, settings, order, counted, walk
):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", counted)
    settings.REVIEW_BULK_MAX = counted
    monkeypatch.setattr(paging, "WALK", walk)
    ordering = lists.LIST_ORDERS[order]
    wanted = list(
        Memory.objects.for_tenant(acme)
        .filter(subject__icontains="INVOICE")
        .order_by(*ordering)
        .values_list("pk", flat=True)
    )

    forwards, last = _pages(acme, lead, {"q": "invoice", "order": order})

    assert forwards == wanted and len(wanted) == 8
    assert last.size.more == (counted < len(wanted))


@pytest.mark.parametrize("walk", [2000, 5])
def test_paging_back_from_the_last_page_reaches_the_first_in_order(
    acme, lead, burst, monkeypatch, settings, walk
):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 2)
    settings.REVIEW_BULK_MAX = 2
    monkeypatch.setattr(paging, "WALK", walk)
    filters = lists.MemoryFilters({"q": "invoice"}, tenant=acme)
    assert filters.is_valid()
    base = Memory.objects.for_tenant(acme)
    forwards, after = [], None
    while True:
        listing = lists.listing(base, filters, user=lead, after=after, before=None, size=3)
        forwards += [row.pk for row in listing.rows]
        if not listing.page.next_cursor:
            break
        after = listing.page.next_cursor
    last = [row.pk for row in listing.rows]
    back, before = [], listing.page.prev_cursor
    while before:
        listing = lists.listing(base, filters, user=lead, after=None, before=before, size=3)
        back = [row.pk for row in listing.rows] + back
        before = listing.page.prev_cursor

    assert last and back + last == forwards == sorted(forwards, reverse=True)


def test_a_page_past_a_burst_stops_short_and_says_how_far_it_looked(
    client, acme, lead, burst, monkeypatch, settings
):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 2)
    settings.REVIEW_BULK_MAX = 2
    monkeypatch.setattr(paging, "WALK", 5)
    client.force_login(lead)

    first = client.get("/t/acme/memories/?q=invoice").content.decode()

    # the newest twelve are the burst: five read, none an invoice, and the way on
    assert "None of the 5" in first and 'rel="next"' in first
    after = first.split('rel="next" href="?', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "q=invoice" in after


def test_a_search_past_its_walk_asks_a_bounded_number_of_queries(acme, lead, burst, monkeypatch, settings):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 2)
    settings.REVIEW_BULK_MAX = 2
    monkeypatch.setattr(paging, "WALK", 5)
    filters = lists.MemoryFilters({"q": "invoice"}, tenant=acme)
    assert filters.is_valid()
    for column in ("subject", "content"):  # drawn once every ten minutes a process, not a page
        search.sample(column, acme.pk)

    with CaptureQueriesContext(connection) as asked:
        listing = lists.listing(
            Memory.objects.for_tenant(acme), filters, user=lead, after=None, before=None, size=4
        )

    assert listing.rows == [] and listing.page.looked_past == 5 and listing.page.next_cursor
    # the count (from the text index; or, for a word the sample calls common, along the list's
    # first rows: their edge and their matches), the stretch walked, its matches; nothing more
    # however far the matches lie
    searching = [q["sql"] for q in asked.captured_queries if "memories_memory" in q["sql"].split("WHERE")[0]]
    assert len(searching) <= 4, searching

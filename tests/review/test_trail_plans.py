"""The trail filtered by subject, paged to its end and back, equals a plain filter of every move:
read by the matches' ids (few) and walked in windows (many), with cursors across windows."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.review import audit_trail
from tests.factories import flagged

pytestmark = pytest.mark.django_db


def _pages(tenant, text, *, backwards_from=None, **more):
    filters = audit_trail.TrailFilters({"subject": text, **more}, tenant=tenant)
    assert filters.is_valid()
    seen, after, before = [], None, backwards_from
    while True:
        page = audit_trail.trail_page(
            filters.filter(audit_trail.trail(tenant)), tenant, filters.ordering, after=after, before=before
        )
        seen = [row.seq for row in page.rows] + seen if before else seen + [row.seq for row in page.rows]
        if before and page.prev_cursor:
            before = page.prev_cursor
        elif not before and page.next_cursor:
            after = page.next_cursor
        else:
            return seen


@pytest.mark.parametrize("few", [1000, 2])  # by ids, or walked in windows of 3, then 6, up to 8 moves
def test_every_page_of_the_trail_by_subject_is_a_plain_filter_of_the_trail(acme, policy, monkeypatch, few):
    monkeypatch.setattr(audit_trail, "FEW_SUBJECTS", few)
    monkeypatch.setattr(audit_trail, "TRAIL_PAGE", 4)
    monkeypatch.setattr(audit_trail, "FIRST_WINDOW", 3)
    monkeypatch.setattr(audit_trail, "WINDOW", 8)
    for i in range(30):  # matches spread between runs of other moves, none in the newest twelve
        flagged(acme, policy, subject=f"warranty claim {i}" if i % 2 == 0 and i < 18 else f"delivery {i}")
    wanted = sorted(
        (t.seq for t in Transition.objects.filter(tenant=acme).select_related("memory")
         if t.memory and "WARRANTY" in t.memory.subject.upper()),
        reverse=True,
    )  # fmt: skip
    assert len(wanted) > 4  # more than one page

    newest_first = _pages(acme, "Warranty")
    assert newest_first == wanted
    head = audit_trail.TrailFilters({"subject": "warranty"}, tenant=acme)
    head.is_valid()
    last = audit_trail.trail_page(
        head.filter(audit_trail.trail(acme)), acme, head.ordering, after=None, before=None
    )
    assert last.next_cursor  # and back from the second page's first row to the top
    second = audit_trail.trail_page(
        head.filter(audit_trail.trail(acme)), acme, head.ordering, after=last.next_cursor, before=None
    )
    assert _pages(acme, "warranty", backwards_from=second.prev_cursor) == wanted[:4]


@pytest.mark.parametrize("most", [1000, 6])  # walked to a page's end, or stopped short every 6 moves
def test_a_page_of_a_common_subject_stops_short_after_its_walk_and_goes_on_from_there(
    client, acme, policy, auditor, monkeypatch, most
):
    monkeypatch.setattr(audit_trail, "FEW_SUBJECTS", 2)
    monkeypatch.setattr(audit_trail, "TRAIL_PAGE", 4)
    monkeypatch.setattr(audit_trail, "FIRST_WINDOW", 3)
    monkeypatch.setattr(audit_trail, "WINDOW", 3)
    monkeypatch.setattr(audit_trail, "WALK_MOST", most)
    for i in range(24):  # the matches among the oldest moves, then a burst of others
        flagged(acme, policy, subject=f"warranty claim {i}" if i < 9 else f"delivery {i}")
    wanted = sorted(
        (t.seq for t in Transition.objects.filter(tenant=acme).select_related("memory")
         if t.memory and "WARRANTY" in t.memory.subject.upper()),
        reverse=True,
    )  # fmt: skip

    assert _pages(acme, "warranty") == wanted  # every match reached, none twice, in order
    filters = audit_trail.TrailFilters({"subject": "warranty"}, tenant=acme)
    assert filters.is_valid()
    first = audit_trail.trail_page(
        filters.filter(audit_trail.trail(acme)), acme, filters.ordering, after=None, before=None
    )
    assert (first.looked_past, bool(first.rows)) == ((6, False) if most == 6 else (0, True))
    client.force_login(auditor)
    page = client.get("/t/acme/audit/", {"subject": "warranty"}).content.decode()
    assert ("None of the 6 moves next in this order matches" in page) == (most == 6)
    assert 'rel="next"' in page


def test_a_few_memories_moves_between_dates_page_by_time_both_ways(acme, policy, monkeypatch):
    """The few path pages in Python (paging.page_among) in the trail's order between dates:
    newest first by time, then by the chain's order."""
    monkeypatch.setattr(audit_trail, "TRAIL_PAGE", 3)
    start = timezone.now() - timedelta(days=3)
    for i in range(14):  # a move an hour, alternately a match; two at the same moment
        with time_machine.travel(start + timedelta(hours=i // 2 * 2 if i in (6, 7) else i), tick=False):
            flagged(acme, policy, subject=f"warranty claim {i}" if i % 2 == 0 or i == 7 else f"delivery {i}")
    rows = Transition.objects.filter(tenant=acme).select_related("memory")
    wanted = [
        t.seq
        for t in sorted(rows, key=lambda t: (t.created_at, t.seq), reverse=True)
        if "WARRANTY" in t.memory.subject.upper()
    ]
    since = start.date().isoformat()

    forwards = _pages(acme, "warranty", since=since)
    filters = audit_trail.TrailFilters({"subject": "warranty", "since": since}, tenant=acme)
    assert filters.is_valid() and filters.ordering == ("-created_at", "-seq")
    first = audit_trail.trail_page(
        filters.filter(audit_trail.trail(acme)), acme, filters.ordering, after=None, before=None
    )
    second = audit_trail.trail_page(
        filters.filter(audit_trail.trail(acme)), acme, filters.ordering, after=first.next_cursor, before=None
    )

    assert forwards == wanted and len(wanted) == 8
    assert _pages(acme, "warranty", backwards_from=second.prev_cursor, since=since) == wanted[:3]

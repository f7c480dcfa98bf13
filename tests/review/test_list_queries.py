"""Every list a person reads costs the same number of queries however many rows it shows: one
row's missing column (a deferred field read per row) is an N+1 the benchmark saw at 200,000
memories before any test did. Each list, in each status, with rows of every shape: moved by the
lifecycle or never moved, claimed, assigned by hand and by a rule."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_review.memories.models import MemoryStatus
from memory_review.workflow import assignment
from memory_review.workflow.claims import claim_take
from tests.factories import flagged, make_memory, memory_in

pytestmark = pytest.mark.django_db

PAGES = [
    "/t/acme/",
    "/t/acme/review/",
    "/t/acme/review/?assigned=mine",
    "/t/acme/review/?q=item",
    "/t/acme/review/changes/",
    "/t/acme/review/team/",
    "/t/acme/memories/",
    *(f"/t/acme/memories/?status={status}" for status in MemoryStatus.values),
]


def grow(acme, policy, lead, reviewer, n: int, *, round: str) -> None:
    assignment.rule_create(tenant=acme, to=reviewer, by=lead, kind="preference")
    for i in (f"{round}{k}" for k in range(n)):
        for status in MemoryStatus.values:
            memory_in(acme, status)
        make_memory(acme, subject=f"item never moved {i}")
        held = flagged(acme, policy, subject=f"item claimed {i}")
        claim_take(memory=held, user=reviewer)
        assignment.assign(memory=flagged(acme, policy, subject=f"item given {i}"), to=reviewer, by=lead)
        flagged(acme, policy, subject=f"item by rule {i}", kind="preference")


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        answer = client.get(url)
    assert answer.status_code == 200, url
    return len(captured)


def test_no_list_costs_a_query_a_row(client, acme, policy, lead, reviewer):
    client.force_login(lead)
    grow(acme, policy, lead, reviewer, 2, round="a")
    queries(client, "/t/acme/review/?q=item")  # a search's sample is drawn once every ten minutes a process
    few = {url: queries(client, url) for url in PAGES}

    grow(acme, policy, lead, reviewer, 6, round="b")
    many = {url: queries(client, url) for url in PAGES}

    assert many == few


def test_the_list_of_all_memories_says_its_size_from_the_counts_the_writers_keep(
    client, acme, policy, lead, reviewer
):
    """Unfiltered or by status, the list's size and the bulk actions it offers come from the
    counts by status (no count over every memory); any other filter counts. Each agrees with the
    rows themselves."""
    import re

    from memory_review.memories.models import Memory

    client.force_login(lead)
    grow(acme, policy, lead, reviewer, 2, round="a")
    mine = Memory.objects.for_tenant(acme)
    for url, rows in [
        ("/t/acme/memories/", mine),
        *((f"/t/acme/memories/?status={s}", mine.filter(status=s)) for s in MemoryStatus.values),
        ("/t/acme/memories/?age=7d", mine),
        ("/t/acme/memories/?age=older", mine.none()),
    ]:
        body = client.get(url).content.decode()
        total = re.search(r'<strong id="list-total"[^>]*>(\d+)<', body).group(1)
        assert int(total) == rows.count(), url
    # Only frozen memories can be unfrozen: the offer follows the statuses there are.
    body = client.get(f"/t/acme/memories/?status={MemoryStatus.ACTIVE}").content.decode()
    assert 'value="unfreeze"' not in body
    frozen = client.get(f"/t/acme/memories/?status={MemoryStatus.FROZEN}").content.decode()
    assert 'value="unfreeze"' in frozen


def test_the_queue_says_its_size_from_the_writers_counts_and_counts_only_when_filtered(
    client, acme, policy, lead, reviewer
):
    from memory_review.memories.models import Memory

    client.force_login(lead)
    grow(acme, policy, lead, reviewer, 2, round="a")
    waiting = Memory.objects.for_tenant(acme).needs_review()

    with CaptureQueriesContext(connection) as unfiltered:
        whole = client.get("/t/acme/review/")
    filtered = client.get("/t/acme/review/?q=claimed")

    assert whole.context["listing"].total == waiting.count()
    assert not any("COUNT(" in q["sql"].upper() and "memories_memory" in q["sql"] for q in unfiltered)
    assert filtered.context["listing"].total == waiting.filter(subject__contains="claimed").count() == 2


def test_a_list_matching_more_than_is_counted_says_more_than_and_offers_no_bulk_action(
    client, acme, lead, monkeypatch, settings
):
    from memory_review.review import lists

    monkeypatch.setattr(lists, "counted_up_to", lambda: 3)
    settings.REVIEW_BULK_MAX = 3  # a list counts at least as far as a bulk action reaches
    for i in range(5):
        make_memory(acme, subject=f"refund {i}")
    make_memory(acme, subject="delivery")
    client.force_login(lead)

    many = client.get("/t/acme/memories/?q=refund")
    few = client.get("/t/acme/memories/?q=refund%203")

    body = many.content.decode()
    assert (many.context["listing"].total, many.context["listing"].more) == (3, True)
    assert '<strong id="list-total">more than 3</strong> memories matching' in body
    assert "data-bulk-too-many" in body and "Act on all" not in body
    assert len(many.context["listing"].rows) == 5  # the page itself is whole
    assert (few.context["listing"].total, few.context["listing"].more) == (1, False)
    assert "Act on all 1 memory" in few.content.decode()

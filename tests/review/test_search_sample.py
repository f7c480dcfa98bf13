"""How a search chooses its way in from a sample of the tenant's own memories (issue 29, at
2,000,000 memories a tenant): a phrase reads the text index for its rare word only, then checks
the whole phrase; a word the sample calls common is counted along the list's first and last rows
before its text index's bitmap is read; the trail by a common subject is walked, not counted.
Whichever way, the rows are exactly a plain filter's."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_review.audit.models import Transition
from memory_review.memories import search, tallies
from memory_review.memories.models import Memory
from memory_review.review import audit_trail, lists, paging
from tests.factories import flagged, make_memory

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the sample is drawn with PostgreSQL's TABLESAMPLE"
)


@pytest.fixture(autouse=True)
def fresh_samples():
    search._SAMPLES.clear()
    yield
    search._SAMPLES.clear()


def _matches(tenant, column, text):
    return set(
        Memory.objects.filter(search.contains(column, text, tenant_id=tenant.pk)).values_list("pk", flat=True)
    )


def test_a_phrase_finds_what_a_plain_filter_finds_whichever_word_narrows_it(acme, globex):
    for i in range(40):
        make_memory(acme, subject=f"billing {i:07d} for cust-{i % 7}")
    make_memory(globex, subject="billing 0000004 for cust-4")
    for text in ("billing 0000004 for cust-4", "0000004 FOR", "for cust-4", "Billing", "ing 00000"):
        wanted = set(
            Memory.objects.for_tenant(acme).filter(subject__icontains=text).values_list("pk", flat=True)
        )
        assert _matches(acme, "subject", text) == wanted, text
    assert len(_matches(acme, "subject", "billing 0000004 for cust-4")) == 1


@postgres_only
def test_the_index_is_asked_for_the_rare_word_and_the_whole_phrase_is_checked(acme):
    for i in range(40):
        make_memory(acme, subject=f"billing {i:07d} for cust-{i % 7}")
    assert search.narrowest("subject", "billing 0000044 for cust-4", tenant_id=acme.pk) == "0000044"
    # Every word of the phrase in the sample: the phrase's trigrams together narrow more.
    assert search.narrowest("subject", "billing for", tenant_id=acme.pk) == "billing for"
    # A word of three characters, absent from the sample, is too short to narrow alone (one trigram).
    assert search.narrowest("subject", "billing 9z9", tenant_id=acme.pk) == "billing 9z9"
    with CaptureQueriesContext(connection) as captured:
        found = Memory.objects.filter(
            search.contains("subject", "billing 0000044 for cust-4", tenant_id=acme.pk)
        ).values_list("subject", flat=True)
        assert list(found) == []
    [query] = [q["sql"] for q in captured.captured_queries if "memories_memory" in q["sql"]]
    # The rare word's keys alone (its trigrams, the tenant in each), then the whole phrase.
    assert f"@> '{{{acme.pk}:000,{acme.pk}:004,{acme.pk}:044}}'::text[]" in query
    assert "LIKE UPPER('%billing 0000044 for cust-4%')" in query


@postgres_only
def test_a_word_is_common_in_the_tenant_that_holds_it_not_in_the_next(acme, globex):
    for i in range(60):
        make_memory(acme, subject=f"relocation {i}" if i % 2 else f"delivery {i}")
        make_memory(globex, subject=f"delivery {i}")
    assert search.common("subject", "relocation", tenant_id=acme.pk, at_least=0.2)
    assert not search.common("subject", "relocation", tenant_id=globex.pk, at_least=0.2)
    assert not search.common("subject", "relocation", tenant_id=acme.pk, at_least=0.6)


@postgres_only
def test_a_small_tenant_in_a_large_table_is_sampled_by_its_keys(acme, globex, monkeypatch):
    """The table's pages hold about 4.7% of its rows at SAMPLE_ROWS 20: globex's thirty would
    give one or two; drawn by its keys it gets the twenty, every one its own."""
    monkeypatch.setattr(search, "SAMPLE_ROWS", 20)
    for i in range(400):
        make_memory(acme, subject=f"delivery {i}")
    for i in range(30):
        make_memory(globex, subject=f"loyalty {i}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")

    small = search.sample("subject", globex.pk)

    assert len(small) == 20 and all(value.startswith("LOYALTY") for value in small)
    assert all(value.startswith("DELIVERY") for value in search.sample("subject", acme.pk))


def _stretch_read(sql: str) -> bool:
    """The end of a stretch of the list read in order (paging._stretch, COUNT_WALK at 20)."""
    return "OFFSET 19" in sql


def _size(tenant, text):
    filters = lists.MemoryFilters({"q": text}, tenant=tenant)
    assert filters.is_valid()
    base = Memory.objects.for_tenant(tenant)
    memories = lists.filtered(base, filters, user=None)
    unsearched = lists.filtered(base, filters, user=None, text=False)
    return lists.size_of(memories, filters, unsearched=unsearched, counts=tallies.counts(tenant))


@postgres_only
@pytest.mark.parametrize(
    "where, more",
    [
        ("everywhere", True),  # found among the first rows
        ("oldest", True),  # the newest are a burst of others: found among the last rows
        ("both_ends", True),  # neither end holds enough alone; both together do
        ("middle", False),  # at neither end: counted from the text index, exactly
    ],
)
def test_a_common_word_is_counted_along_the_list_first_and_the_count_is_right(
    acme, lead, monkeypatch, settings, where, more
):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 10)
    settings.REVIEW_BULK_MAX = 10
    monkeypatch.setattr(paging, "COUNT_WALK", 20)
    monkeypatch.setattr(lists, "WALK_WORTH", 5)  # ninety memories: as if a busy tenant's
    for i in range(90):
        holds = {"everywhere": i % 2, "oldest": i < 30, "middle": 40 <= i < 48, "both_ends": i < 6 or i > 83}[
            where
        ]
        make_memory(acme, subject=f"loyalty {i}" if holds else f"delivery {i}")
    monkeypatch.setattr(lists, "COMMON_SHARE", 0.05)  # the middle's eight in ninety count as common too

    with CaptureQueriesContext(connection) as queries:
        size = _size(acme, "loyalty")

    walked = [q["sql"] for q in queries.captured_queries if _stretch_read(q["sql"])]
    assert walked, "the list's rows were walked first"
    checks = [
        q["sql"]
        for q in queries.captured_queries
        if "LIKE UPPER('%loyalty%')" in q["sql"] and "ORDER BY" in q["sql"]
    ]
    # The walk checks the text on each row it reads: no text keys computed for each (50 us a row).
    assert checks and not any("memory_text_keys" in sql for sql in checks)
    assert size.more == more
    wanted = Memory.objects.for_tenant(acme).filter(subject__icontains="loyalty").count()
    assert size.n == (10 if more else wanted) and (more or wanted == 8)


@postgres_only
def test_a_common_word_found_at_the_two_ends_says_more_than_without_the_index(
    acme, lead, monkeypatch, settings
):
    """The two ends hold 20 matches, short of the 30 the list counts to. The list says "more than
    19" (true: 45 match) and never reads the text index's bitmap."""
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 30)
    monkeypatch.setattr(lists, "LOWER_BOUND", 10)
    settings.REVIEW_BULK_MAX = 10
    monkeypatch.setattr(paging, "COUNT_WALK", 20)
    monkeypatch.setattr(lists, "WALK_WORTH", 5)
    for i in range(90):
        make_memory(acme, subject=f"loyalty {i}" if i % 2 else f"delivery {i}")

    with CaptureQueriesContext(connection) as queries:
        size = _size(acme, "loyalty")

    assert (size.n, size.more, size.ids) == (19, True, None)
    assert Memory.objects.for_tenant(acme).filter(subject__icontains="loyalty").count() == 45
    fenced = [q["sql"] for q in queries.captured_queries if "'enable_indexscan', 'off'" in q["sql"]]
    assert not fenced, "the text index was read for a count the two ends settled"


def test_more_than_is_a_round_number_below_what_was_found():
    assert [lists._fewer_than(n) for n in (11, 101, 150, 501, 800, 801, 812)] == [
        10,
        100,
        100,
        500,
        700,
        800,
        800,
    ]


@postgres_only
def test_the_trail_by_a_common_subject_is_walked_not_counted_and_is_a_plain_filter(acme, policy, monkeypatch):
    monkeypatch.setattr(audit_trail, "TRAIL_PAGE", 4)
    monkeypatch.setattr(audit_trail, "FIRST_WINDOW", 3)
    monkeypatch.setattr(audit_trail, "WINDOW", 8)
    for i in range(24):
        flagged(acme, policy, subject=f"loyalty {i}" if i % 2 else f"delivery {i}")
    filters = audit_trail.TrailFilters({"subject": "loyalty"}, tenant=acme)
    assert filters.is_valid()
    assert filters.filter(audit_trail.trail(acme)).subject_matches == "many"  # walked, never counted

    seen, after = [], None
    while True:
        page = audit_trail.trail_page(
            filters.filter(audit_trail.trail(acme)), acme, filters.ordering, after=after, before=None
        )
        seen += [row.seq for row in page.rows]
        if not page.next_cursor:
            break
        after = page.next_cursor
    wanted = sorted(
        (t.seq for t in Transition.objects.filter(tenant=acme).select_related("memory")
         if t.memory and "LOYALTY" in t.memory.subject.upper()),
        reverse=True,
    )  # fmt: skip
    assert seen == wanted and len(wanted) >= 12


@postgres_only
def test_a_common_word_in_a_short_list_is_counted_from_the_text_index(acme, lead, monkeypatch, settings):
    """Walking the list's two ends costs more than a small bitmap: only a list whose matches by
    the sample's share reach WALK_WORTH is walked."""
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 10)
    settings.REVIEW_BULK_MAX = 10
    monkeypatch.setattr(paging, "COUNT_WALK", 20)
    for i in range(90):
        make_memory(acme, subject=f"loyalty {i}" if i % 2 else f"delivery {i}")

    with CaptureQueriesContext(connection) as queries:
        size = _size(acme, "loyalty")

    assert not [q["sql"] for q in queries.captured_queries if _stretch_read(q["sql"])]
    assert size.more


@postgres_only
def test_the_list_says_more_than_and_its_bulk_form_leaves_the_exact_count_to_the_preview(
    client, acme, lead, monkeypatch, settings
):
    """A lower bound under the bulk limit may still be a set a bulk action takes: the form is
    offered ("more than 19"), and the preview counts the set exactly and refuses it (45 > 30)."""
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 30)
    monkeypatch.setattr(lists, "LOWER_BOUND", 10)
    monkeypatch.setattr(paging, "COUNT_WALK", 20)
    monkeypatch.setattr(lists, "WALK_WORTH", 5)
    settings.REVIEW_BULK_MAX = 30
    for i in range(90):
        make_memory(acme, subject=f"loyalty {i}" if i % 2 else f"delivery {i}")
    client.force_login(lead)

    page = client.get("/t/acme/memories/", {"q": "loyalty"}).content.decode()
    assert '<strong id="list-total">more than 19</strong>' in page
    assert "Act on all more than 19 memories" in page and "data-bulk-too-many" not in page

    preview = client.post(
        "/t/acme/bulk/", {"list_name": "memories", "q": "loyalty", "action": "freeze", "reason": "x"}
    )
    assert preview.status_code == 400 and "45 memories match" in preview.content.decode()

"""The tenant's text keys (memories/0015, search.TextKeys): a search reads the posting lists of
its own tenant's trigrams and finds exactly what a plain case-insensitive `contains` finds, for
any text a person types: a piece of a word, words across punctuation, accents, other scripts,
text too short for a trigram; and never a row of another tenant, also one whose id begins the
same ("1:" is no key of tenant 11)."""

import pytest
from django.db import connection

from memory_review.assessments.models import PromotionCandidate
from memory_review.memories import search
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant
from tests.factories import make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the text keys are PostgreSQL's pg_trgm"),
]

SUBJECTS = [
    "billing 0000044 for cust-44",
    "Invoices overdue: ACME-7 (re-sent)",
    "éclair order for Zoë's café",
    "Straße und Größe",
    "Ελληνικά τιμολόγια",
    "配送の住所",
    "refund_policy.v2 draft",
    "ab",
    "payout to IBAN DE44 5001",
]


def _pieces(text: str):
    """Every piece of `text` up to 12 characters long, and the whole of it."""
    yield text
    for start in range(len(text)):
        for end in range(start + 1, min(len(text), start + 12) + 1):
            yield text[start:end]


@pytest.fixture
def near(acme):
    """A tenant whose id begins with acme's (acme 3, near 31), holding the same subjects."""
    return Tenant.objects.create(pk=acme.pk * 10 + 1, slug="near", name="Near Co")


def test_every_piece_of_every_subject_is_found_as_a_plain_contains_finds_it(acme, near, globex):
    for subject in SUBJECTS:
        make_memory(acme, subject=subject, content=subject.upper())
        make_memory(near, subject=subject, content=subject)
    make_memory(globex, subject="relocation of the billing team")
    mine = Memory.objects.for_tenant(acme)
    wanted_of = {
        text: set(mine.filter(subject__icontains=text).values_list("pk", flat=True))
        for subject in SUBJECTS
        for text in set(_pieces(subject)) | {"relocation", "ZZZ", " for ", "-4", "44 5"}
    }
    for text, wanted in wanted_of.items():
        found = Memory.objects.filter(search.contains("subject", text, tenant_id=acme.pk))
        assert set(found.values_list("pk", flat=True)) == wanted, text
    assert len(wanted_of) > 400


def test_the_keys_hold_the_tenant_and_leave_out_what_reaches_past_the_texts_ends(acme):
    keys = list(search.probe("invoice", tenant_id=acme.pk))
    assert keys == sorted(f"{acme.pk}:{t}" for t in ("inv", "nvo", "voi", "oic", "ice"))
    # A word inside the text is whole in every row that holds the text: its padded keys count.
    assert f"{acme.pk}:  f" in search.probe("a foo-b", tenant_id=acme.pk)
    # Non-ASCII trigrams are hashed by pg_trgm ("0x..."): the ends are still left out.
    assert len(search.probe("éclair", tenant_id=acme.pk)) == 4
    # No run of three letters: no key, but a word the text closes on its left ("4" after "-").
    assert search.probe("ab", tenant_id=acme.pk) == ()
    assert search.probe("t-4", tenant_id=acme.pk) == (f"{acme.pk}:  4",)


def test_a_candidates_subject_is_searched_by_its_own_tenants_keys(acme, globex):
    """The candidates' index (assessments/0016) is the same expression the search writes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE %s ORDER BY indexname",
            ["%memory_text_keys%"],
        )
        indexes = dict(cursor.fetchall())
    assert sorted(indexes) == [
        "candidate_subject_keys",
        "memory_content_keys",
        "memory_queue_content_keys",
        "memory_queue_subject_keys",
        "memory_subject_keys",
    ]
    assert "memory_text_keys(tenant_id, (subject)::text)" in indexes["candidate_subject_keys"]
    query = PromotionCandidate.objects.filter(search.contains("subject", "refund", tenant_id=acme.pk))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "candidate_subject_keys" in plan


def test_the_planner_knows_how_common_a_word_is_from_the_uppercased_texts_statistics(acme):
    """memories/0016: a walk checks `UPPER(col) LIKE`, which without statistics of the expression
    the planner takes for one row in 200 (and then walked another index at 2,000,000 memories)."""
    for i in range(300):
        make_memory(acme, subject=f"invoice {i}" if i % 2 else f"delivery {i}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT stxname FROM pg_statistic_ext WHERE stxrelid = 'memories_memory'::regclass")
        assert {"memory_subject_upper_stats", "memory_content_upper_stats"} <= {row[0] for row in cursor}
        cursor.execute("ANALYZE memories_memory")
        sql = "SELECT id FROM memories_memory WHERE tenant_id = %s AND UPPER(subject::text) LIKE %s"
        cursor.execute("EXPLAIN " + sql, [acme.pk, "%INVOICE%"])
        plan = cursor.fetchone()[0]
    estimated = int(plan.split("rows=")[1].split()[0])
    assert 100 <= estimated <= 200, plan  # 150 hold it; the default guess would say 2

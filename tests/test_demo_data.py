"""The demo's data copied back in (tests/demo_data.py) is what seeding writes, row for row."""

import pytest
from django.db import connection, transaction

from memory_review.audit import verification
from memory_review.tenancy.models import Tenant
from tests import demo_data
from tests.factories import make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the copy is PostgreSQL's; elsewhere every test seeds"
    ),
]


def every_row() -> dict[str, str]:
    """Each table's rows, hashed in an order of their own."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        tables = demo_data._tables()
        digest = "md5(string_agg(md5(t::text), ',' ORDER BY md5(t::text)))"
        cursor.execute(
            " UNION ALL ".join(f"SELECT %s, count(*), {digest} FROM {quote(n)} t" for n in tables), tables
        )
        return {table: (n, digest) for table, n, digest in cursor.fetchall()}


@pytest.mark.parametrize("history", [False, True], ids=["stories", "with history"])
def test_the_copy_is_the_seed_row_for_row_and_new_rows_follow_it(monkeypatch, history):
    monkeypatch.setattr(demo_data, "_COPIES", {})
    seeded, real = [], demo_data._seed
    monkeypatch.setattr(demo_data, "_seed", lambda history: (seeded.append(history), real(history)))

    empty = every_row()
    sid = transaction.savepoint()
    demo_data.seed_demo(history=history)
    seeded_rows = every_row()
    transaction.savepoint_rollback(sid)
    assert every_row() == empty

    demo_data.seed_demo(history=history)
    assert seeded == [history]  # the second came from the copy
    assert every_row() == seeded_rows
    assert sum(n for n, _ in seeded_rows.values()) > sum(n for n, _ in empty.values()) + 1000

    acme = Tenant.objects.get(slug="acme")
    assert verification.problem_in(acme) is None  # its chain and seals, under this run's key
    make_memory(acme, subject="after the copy")  # a new row takes an id the copy does not hold

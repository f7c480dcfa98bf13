"""The demo's data copied back in (tests/demo_data.py) is what seeding writes, row for row."""

import sys
from pathlib import Path

import pytest
from django.db import connection, transaction

from memory_review.audit import verification
from memory_review.tenancy.models import Tenant
from tests import demo_data
from tests.factories import make_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the copy is PostgreSQL's; elsewhere every test seeds"
    ),
]


@pytest.mark.parametrize("history", [False, True], ids=["stories", "with history"])
def test_the_copy_is_the_seed_row_for_row_and_new_rows_follow_it(monkeypatch, history):
    from attack_drill import fingerprint  # each table's rows, hashed

    monkeypatch.setattr(demo_data, "_COPIES", {})
    seeded, real = [], demo_data._seed
    monkeypatch.setattr(demo_data, "_seed", lambda history: (seeded.append(history), real(history)))

    empty, rows_before = fingerprint(), sum(demo_data._row_counts().values())
    sid = transaction.savepoint()
    demo_data.seed_demo(history=history)
    seeded_rows = fingerprint()
    transaction.savepoint_rollback(sid)
    assert fingerprint() == empty

    demo_data.seed_demo(history=history)
    assert seeded == [history]  # the second came from the copy
    assert fingerprint() == seeded_rows
    assert sum(demo_data._row_counts().values()) > rows_before + 1000

    acme = Tenant.objects.get(slug="acme")
    assert verification.problem_in(acme) is None  # its chain and seals, under this run's key
    make_memory(acme, subject="after the copy")  # a new row takes an id the copy does not hold

"""A tenant's settings rows (the audit plan, the trust rules) are one a tenant: two leads saving
the first at the same moment both succeed, and the later save is the one kept, not a 500.
PostgreSQL only: SQLite has one writer at a time, so the two cannot both find no row."""

import threading

import pytest
from django.db import connection, connections

from memory_review.audit import verification
from memory_review.memories import holds
from memory_review.memories.models import TrustRules
from memory_review.quality import schedule
from memory_review.quality.models import AuditPlan

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite has one writer at a time (make test runs the PostgreSQL pass)",
)

WRITERS = {
    "trust rules": (
        TrustRules,
        lambda tenant, n: holds.set_rules(tenant, hold_classes=["tool"] if n else ["import"], by=f"user:{n}"),
    ),
    "audit plan": (
        AuditPlan,
        lambda tenant, n: schedule.set_plan(
            tenant,
            by=f"user:{n}",
            every_days=1 + n,
            precision=0.03,
            confidence=0.95,
            budget=500,
            share=0.2,
            gate_target=None,
        ),  # fmt: skip
    ),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", WRITERS)
def test_two_first_saves_at_once_both_succeed_and_one_row_is_kept(acme, monkeypatch, name):
    model, write = WRITERS[name]
    both_looked = threading.Barrier(2, timeout=10)
    saved = model.save
    first_try = threading.local()

    tried_again = []

    def save(row, *args, **kwargs):  # each writer's first save waits until both found no row
        if getattr(first_try, "done", False):
            tried_again.append(row.changed_by)  # the writer whose insert lost, saving over the row
        else:
            first_try.done = True
            both_looked.wait()
        saved(row, *args, **kwargs)

    monkeypatch.setattr(model, "save", save)
    failures = []

    def writer(n: int) -> None:
        try:
            write(acme, n)
        except Exception as error:  # noqa: BLE001 (what the lead would have met, kept for the assert)
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert failures == []
    rows = list(model.objects.filter(tenant=acme))
    assert len(tried_again) == 1  # one insert lost the race and was tried again
    assert len(rows) == 1 and rows[0].changed_by == tried_again[0]  # the later save is the one kept
    assert verification.problem_in(acme) is None

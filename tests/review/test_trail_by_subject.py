"""The audit trail by subject, few matches or many, and the connection settings that keep a page's
query from paying PostgreSQL's JIT compile (issue 17)."""

import pytest
from django.db import connection

from memory_review.review import audit_trail
from tests.factories import flagged

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("few", [1000, 2])  # the matches' ids, or each move's subject read as it goes
def test_the_trail_by_subject_shows_every_move_of_the_matching_memories_newest_first(
    client, acme, policy, auditor, monkeypatch, few
):
    monkeypatch.setattr(audit_trail, "FEW_SUBJECTS", few)
    wanted = [flagged(acme, policy, subject=f"warranty claim {i}") for i in range(4)]
    others = [flagged(acme, policy, subject=f"delivery window {i}") for i in range(3)]
    client.force_login(auditor)

    rows = client.get("/t/acme/audit/", {"subject": "WARRANTY"}).context["listing"].rows

    assert {row.memory_id for row in rows} == {m.pk for m in wanted}
    assert not {row.memory_id for row in rows} & {m.pk for m in others}
    assert [row.seq for row in rows] == sorted((row.seq for row in rows), reverse=True)
    assert all(row.memory.subject.startswith("warranty claim") for row in rows)  # read whole for the page


def test_a_subject_no_memory_holds_shows_no_move(client, acme, policy, auditor):
    flagged(acme, policy, subject="delivery window")
    client.force_login(auditor)

    assert client.get("/t/acme/audit/", {"subject": "warranty"}).context["listing"].rows == []


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's JIT: this run is on SQLite")
def test_the_apps_postgresql_connections_do_not_jit_compile_queries():
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)

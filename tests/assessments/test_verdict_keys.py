"""The verdict's keys are the application's to keep, not the database's (models.Verdict, issue
30): what the database's checks guarded is still guarded, by the ORM's PROTECT and by the seals."""

import io

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import ProtectedError

from memory_review.assessments.models import Verdict
from memory_review.audit import verification
from memory_review.oracle.scripts import GENERATED, SQL_DIR
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db

KEYS = ("tenant", "assessment", "memory", "event", "shadow_policy")


def test_every_key_of_a_vote_is_kept_by_the_application():
    fields = {f.name: f for f in Verdict._meta.concrete_fields if f.is_relation}
    assert set(fields) == set(KEYS)  # a key added later is one more check a vote: decide it here
    assert [name for name, f in fields.items() if f.db_constraint] == []


@pytest.mark.parametrize("named", ["memory", "event", "assessment"])
def test_the_application_still_refuses_to_delete_a_row_a_vote_names(acme, policy, named):
    verdict = judged(make_memory(acme), policy)
    row = getattr(verdict, named)

    with pytest.raises(ProtectedError), transaction.atomic():
        row.delete()

    assert type(row).objects.filter(pk=row.pk).exists()
    assert Verdict.objects.filter(pk=verdict.pk).exists()


def test_the_votes_assessment_deleted_by_plain_sql_is_named_by_its_seal(acme, policy, orphans_allowed):
    """No trigger or key turned off: the database lets the DELETE through, its keys checked there
    and then (before, the votes' key to their assessment refused it; a memory or an event is
    still held by other rows' keys: its feed rows, its memories), and verify_audit names the row
    by the seal it leaves behind."""
    verdict = judged(make_memory(acme), policy)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM assessments_assessment WHERE id = %s", [verdict.assessment_id])
    connection.check_constraints()  # what the commit would check, now

    problem = verification.problem_in(acme)

    assert f"assessment {verdict.assessment_id} was deleted around the application (sealed at #" in str(
        problem
    )


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite remakes the whole table for any AlterField; the PostgreSQL run checks the SQL",
)
def test_the_migration_back_adds_the_five_constraints_and_nothing_else():
    """Back, as `migrate` would run it on this database (forwards finds no constraint here to
    drop: the test database is migrated). Forwards is the rendered Oracle script's, below."""
    out = io.StringIO()
    call_command("sqlmigrate", "assessments", "0019", backwards=True, stdout=out)
    body = [line for line in out.getvalue().splitlines() if line and not line.startswith("--")][1:-1]
    assert len(body) == 5, body
    for key, line in zip(sorted(KEYS), sorted(body), strict=True):
        assert line.startswith('ALTER TABLE "assessments_verdict" ADD CONSTRAINT'), line
        assert f'FOREIGN KEY ("{key}_id")' in line, line


def test_the_migration_forwards_only_drops_the_five_constraints_on_oracle():
    script = (SQL_DIR / GENERATED).read_text()
    block = script.split("-- assessments.0019_verdict_keys_unchecked\n", 1)[1].split("\n\n-- ", 1)[0]
    body = [line for line in block.splitlines() if line and not line.startswith("--")]
    assert len(body) == 5, body
    assert all(line.startswith('ALTER TABLE "ASSESSMENTS_VERDICT" DROP CONSTRAINT') for line in body), body

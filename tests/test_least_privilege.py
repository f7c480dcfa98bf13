"""The app's database user holds only what the code needs (memory_review/tenancy/grants.py):
every table has a decision, and on PostgreSQL the real flows run under exactly those grants
while what the code never does is refused."""

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.assessments.models import Verdict
from memory_review.audit import verification
from memory_review.compliance.erasure import erase_subject
from memory_review.integrity.db_context import clear_tenant, set_tenant
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, SourceEvent
from memory_review.memories.services import event_record
from memory_review.tenancy.grants import APP_GRANTS, unmapped
from tests.factories import make_memory

ROLE = "memory_app_least"


@pytest.mark.django_db
def test_every_table_in_the_schema_has_a_decision():
    assert unmapped(connection.introspection.table_names()) == []
    assert APP_GRANTS["django_migrations"].privileges == ()
    for append_only in (
        "audit_transition",
        "audit_seal",
        "assessments_verdict",
        "assessments_assessmentrestart",
    ):
        assert "UPDATE" not in APP_GRANTS[append_only].privileges
    assert not [
        t
        for t, g in APP_GRANTS.items()
        if "DELETE" in g.privileges and not t.startswith(("auth_", "django_", "axes_", "tenancy_membership"))
    ]


@pytest.fixture
def as_least_privileged_app(db):
    if connection.vendor != "postgresql":
        pytest.skip("grants are enforced by PostgreSQL in make test's second pass (SQLite has none)")
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {ROLE}")  # rolled back with the test's transaction
    call_command("grant_app_role", ROLE, verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {ROLE}")
    yield
    clear_tenant()
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")


def refused(sql: str) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    except DatabaseError as exc:
        return "permission denied" in str(exc)
    return False


def test_the_engine_works_under_the_least_privileges(acme, policy, jev, as_least_privileged_app):
    set_tenant(acme.pk)
    stale = make_memory(
        acme, subject="delivery-address", content="Deliveries go to the Paris office.", user_id="cust-9"
    )
    event = event_record(
        tenant=acme, source="chat", text="Deliveries go to the Lyon office from now on.", user_id="cust-9",
        thread_id="t-9",
    )  # fmt: skip
    forwarded = event_record(
        tenant=acme, source="email", user_id="cust-1",
        text="Forwarded: Deliveries go to the Lyon office from now on. Thanks",
    )  # fmt: skip

    assessment = run_invalidation(observe_event(event=event, enqueue=lambda a: None).pk, jev=jev)

    assert assessment.state == "done", assessment.error
    assert Verdict.objects.filter(assessment=assessment, applied=True).exists()
    memory = Memory.objects.get(pk=stale.pk)
    assert memory.status != "active"
    frozen = make_memory(acme, subject="greeting")
    transition(
        obj=frozen,
        action="freeze",
        actor=Actor("user", "1"),
        reason="pinned",
        seen_version=frozen.row_version,
    )
    erasure = erase_subject(tenant=acme, user_id="cust-9", reason="customer asked", requested_by="user:1")
    assert erasure.events_erased == 2 and SourceEvent.objects.get(pk=event.pk).erased_at is not None
    assert SourceEvent.objects.get(pk=event.pk).thread_id.startswith("erased-")  # a keyed pseudonym
    assert "Lyon" not in SourceEvent.objects.get(pk=forwarded.pk).text  # the quote, as a span
    assert verification.problem_in(acme) is None
    result, written = verification.verify_and_checkpoint(acme, by="system:test")  # records its line
    assert result.intact and written is not None and result.checkpoint_lines == 1


def test_what_the_code_never_does_is_refused(acme, as_least_privileged_app):
    set_tenant(acme.pk)

    assert refused("DELETE FROM memories_sourceevent")
    assert refused("UPDATE memories_sourceevent SET source = 'api'")  # only erasure's columns
    assert refused("UPDATE assessments_verdict SET still_true = 0")  # votes are never rewritten
    assert refused("DELETE FROM assessments_verdict")
    assert refused("UPDATE audit_transition SET actor = 'user:1'")  # only an erasure's blanking
    assert refused("UPDATE audit_seal SET digest = ''")
    assert refused("DELETE FROM audit_auditchain")
    assert refused("DELETE FROM memories_memory")
    assert refused("SELECT * FROM django_migrations")
    assert not refused("SELECT COUNT(*) FROM memories_memory")  # the probe itself can pass

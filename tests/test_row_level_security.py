"""PostgreSQL enforces the tenant boundary too, for a role that owns no tables (DESIGN §6)."""

import importlib

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from memory_review.integrity import db_context
from memory_review.integrity.db_context import clear_tenant, set_tenant, tenant_context
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, SourceEvent
from tests.factories import make_memory

RLS_MIGRATIONS = [
    "memory_review.audit.migrations.0003_postgres_rls",
    "memory_review.review.migrations.0002_postgres_rls",
]
# Tables whose own migration turns row-level security on beside creating them.
RLS_WITH_THEIR_TABLE = {
    "memories_memorytally",
    "audit_auditverification",
    "memories_dualcontrol",
    "assessments_assessmentrestart",
    "calibration_policyproposal",
    "calibration_replayset",
    "audit_seal",
    "workflow_assignment",
    "workflow_assignmentrule",
    "workflow_reviewtarget",
    "memories_memorychange",
    "agents_receipt",
    "agents_webhookendpoint",
    "agents_webhookdelivery",
    "agents_webhookattempt",
    "agents_notice",
    "jobfiles_jobfile",
    "audit_verificationrun",
    "quality_auditsample",
    "quality_audititem",
    "quality_auditlabel",
    "quality_auditplan",
    "memories_trustrules",
    "quality_gatechange",
    "assessments_screeningowed",
}


def tenant_tables() -> set[str]:
    return {
        model._meta.db_table
        for model in apps.get_models()
        if any(field.name == "tenant" for field in model._meta.fields) and model._meta.app_label != "tenancy"
    }


def test_every_table_that_carries_a_tenant_has_a_policy():
    policied = {table for name in RLS_MIGRATIONS for table in importlib.import_module(name).TABLES}
    assert tenant_tables() == policied | RLS_WITH_THEIR_TABLE


@pytest.mark.django_db
def test_every_table_that_carries_a_tenant_has_row_level_security_in_the_database():
    if connection.vendor != "postgresql":
        pytest.skip("row-level security is PostgreSQL's (make test's second pass); Oracle uses VPD")
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_policies WHERE policyname = 'tenant_isolation'")
        policied = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT relname FROM pg_class WHERE relrowsecurity")
        enforced = {row[0] for row in cursor.fetchall()}
    assert tenant_tables() <= policied & enforced


@pytest.fixture
def as_app_role(db):
    """Queries run as a role that owns nothing, as production's web and worker do."""
    if connection.vendor != "postgresql":
        pytest.skip("row-level security is PostgreSQL's (make test's second pass); Oracle uses VPD")
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE memory_app_probe")  # rolled back with the test's transaction
        cursor.execute(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO memory_app_probe"
        )
        cursor.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO memory_app_probe")
        cursor.execute("SET LOCAL ROLE memory_app_probe")
    yield
    clear_tenant()
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")


@pytest.fixture
def two_tenants_of_memories(acme, globex):
    return [make_memory(acme), make_memory(acme)], [make_memory(globex)]


def test_without_a_tenant_in_the_context_nothing_is_visible(two_tenants_of_memories, as_app_role):
    assert Memory.objects.count() == 0
    assert SourceEvent.objects.count() == 0


def test_with_a_tenant_set_only_its_rows_are_visible(acme, two_tenants_of_memories, as_app_role):
    mine, theirs = two_tenants_of_memories
    set_tenant(acme.pk)

    assert set(Memory.objects.values_list("pk", flat=True)) == {m.pk for m in mine}
    assert not Memory.objects.filter(pk=theirs[0].pk).exists()  # even asked for by id


def test_writing_a_row_for_another_tenant_is_refused(acme, globex, two_tenants_of_memories, as_app_role):
    mine, theirs = two_tenants_of_memories
    set_tenant(acme.pk)

    with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
        SourceEvent.objects.create(tenant=globex, source="chat", text="planted", text_hash="x")
    updated = Memory.objects.filter(pk=theirs[0].pk).update(confidence=0.1)

    assert updated == 0


def test_verify_audit_walks_the_chain_under_the_app_role(acme, capsys):
    if connection.vendor != "postgresql":
        pytest.skip("row-level security is PostgreSQL's (make test's second pass)")
    memory = make_memory(acme)
    for action in ("freeze", "unfreeze"):
        transition(
            obj=memory,
            action=action,
            actor=Actor("user", "1"),
            reason=action,
            seen_version=memory.row_version,
        )
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE memory_app_probe")
    # The app's own grants: it records what it found (sealed) for the auditor's workspace.
    call_command("grant_app_role", "memory_app_probe", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL ROLE memory_app_probe")

    call_command("verify_audit", tenant="acme")

    assert "tenant acme: intact, 2 transitions" in capsys.readouterr().out


def test_a_task_inside_a_request_gives_the_request_its_tenant_back(acme, globex):
    set_tenant(acme.pk)
    with tenant_context(globex.pk):
        assert db_context._current.get() == globex.pk
    assert db_context._current.get() == acme.pk
    clear_tenant()


@pytest.mark.django_db(transaction=True)
def test_a_connection_whose_tenant_cannot_be_cleared_is_closed_so_no_later_user_inherits_it(acme):
    """Workers and web threads keep their connections (issue 30): a session whose tenant could
    not be cleared must not be handed to the next task or request still naming it."""
    if connection.vendor != "postgresql":
        pytest.skip("the session setting is PostgreSQL's (make test's second pass)")
    import psycopg

    set_tenant(acme.pk)
    settings_dict = connection.settings_dict
    with psycopg.connect(
        host=settings_dict["HOST"], port=settings_dict["PORT"], user=settings_dict["USER"],
        dbname=settings_dict["NAME"], autocommit=True,
    ) as other:  # fmt: skip
        other.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])

    with pytest.raises(DatabaseError):
        clear_tenant()

    assert connection.connection is None and db_context.current_tenant() is None
    with connection.cursor() as cursor:  # a new session, with no tenant
        cursor.execute("SELECT current_setting('app.tenant_id', true)")
        assert cursor.fetchone()[0] in (None, "")


@pytest.mark.django_db(transaction=True)  # outside a transaction, as a worker's task runs
def test_a_task_that_leaves_its_tenant_set_hands_the_next_task_a_connection_without_it(acme):
    """The signal around each task of a real worker (memory_review/celery.py)."""
    from types import SimpleNamespace

    from memory_review.celery import _keep_connections_as_a_request_does as around_a_task

    set_tenant(acme.pk)  # as a task that never cleared it would leave it
    around_a_task(task=SimpleNamespace(request=SimpleNamespace(is_eager=False)))

    assert db_context.current_tenant() is None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('app.tenant_id', true)")
            assert cursor.fetchone()[0] in (None, "")

"""The tamper-evident audit trail: a per-tenant hash chain and `verify_audit` (DESIGN §2)."""

import hashlib

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from memory_review.audit import chain, verification
from memory_review.audit.models import Transition
from memory_review.integrity import heads
from memory_review.lifecycle import Actor, transition
from tests.factories import make_memory, without_append_only_trigger


def churn(tenant, memories: int = 10) -> None:
    """Several transitions per memory: flag, freeze, unfreeze, contradict, restore."""
    steps = [
        ("policy", "flag"),
        ("user", "freeze"),
        ("user", "unfreeze"),
        ("policy", "contradict"),
        ("user", "restore"),
    ]
    for _ in range(memories):
        memory = make_memory(tenant)
        for kind, action in steps:
            transition(
                obj=memory,
                action=action,
                actor=Actor(kind, "9"),
                reason=f"{action} in test",
                seen_version=memory.row_version,
            )


@pytest.fixture
def two_chains(acme, globex):
    churn(acme)
    churn(globex, memories=6)


@pytest.mark.django_db
def test_the_chains_of_two_tenants_are_intact_after_many_transitions(acme, globex, two_chains):
    assert verification.problem_in(acme) is None
    assert verification.problem_in(globex) is None
    assert list(Transition.objects.for_tenant(acme).order_by("seq").values_list("seq", flat=True)) == list(
        range(1, 51)
    )
    assert Transition.objects.for_tenant(globex).count() == 30


@pytest.mark.django_db
def test_each_row_points_at_the_hash_of_the_row_before_it(acme, two_chains):
    rows = list(Transition.objects.for_tenant(acme).order_by("seq"))
    assert rows[0].prev_hash == heads.GENESIS
    assert all(later.prev_hash == earlier.hash for earlier, later in zip(rows, rows[1:], strict=False))


@pytest.mark.django_db
def test_verify_audit_passes_on_intact_chains(acme, two_chains, capsys):
    call_command("verify_audit")
    out = capsys.readouterr().out
    assert "tenant acme: intact, 50 transitions" in out
    assert "tenant globex: intact, 30 transitions" in out


@pytest.mark.django_db
def test_an_edited_reason_is_caught_and_named(acme, globex, two_chains, capsys):
    row = Transition.objects.for_tenant(acme).get(seq=17)
    without_append_only_trigger(
        "UPDATE audit_transition SET reason = %s WHERE id = %s", ["nothing to see", row.pk]
    )

    with pytest.raises(CommandError, match="broken in 1 tenant"):
        call_command("verify_audit")

    err = capsys.readouterr().err
    assert f"tenant acme: chain broken at #17 (transition id {row.pk}): its reason was edited" in err
    assert verification.problem_in(globex) is None


@pytest.mark.usefixtures("orphans_allowed")  # the change feed's rows cite the removed row
@pytest.mark.django_db
def test_a_removed_row_is_caught_and_named(acme, two_chains):
    row = Transition.objects.for_tenant(acme).get(seq=23)
    without_append_only_trigger("DELETE FROM audit_transition WHERE id = %s", [row.pk])

    problem = verification.problem_in(acme)

    assert problem.seq == 23
    assert "row #23 was removed (next row is #24)" in str(problem)


@pytest.mark.usefixtures("orphans_allowed")  # the change feed's rows cite the removed row
@pytest.mark.django_db
def test_a_removed_last_row_is_caught_by_the_chain_head(acme, two_chains):
    row = Transition.objects.for_tenant(acme).get(seq=50)
    without_append_only_trigger("DELETE FROM audit_transition WHERE id = %s", [row.pk])

    problem = verification.problem_in(acme)

    assert "the chain ends at #49 but its head says #50" in str(problem)


@pytest.mark.django_db
def test_verify_audit_checks_one_tenant_when_asked(acme, globex, two_chains, capsys):
    row = Transition.objects.for_tenant(acme).get(seq=3)
    without_append_only_trigger("UPDATE audit_transition SET actor = %s WHERE id = %s", ["user:1", row.pk])

    call_command("verify_audit", tenant="globex")
    assert "tenant globex: intact" in capsys.readouterr().out
    with pytest.raises(CommandError):
        call_command("verify_audit", tenant="acme")
    with pytest.raises(CommandError, match="no tenant with slug 'initech'"):
        call_command("verify_audit", tenant="initech")


@pytest.mark.django_db
@pytest.mark.parametrize("sql", ["UPDATE audit_transition SET reason = 'x'", "DELETE FROM audit_transition"])
def test_the_database_refuses_to_change_or_remove_audit_rows(acme, two_chains, sql):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert Transition.objects.count() == 80
    assert verification.problem_in(acme) is None


def test_a_rows_hash_is_pinned_so_no_backend_or_refactor_changes_it_silently():
    """docs/audit.md describes this computation; tools/verify_export.py repeats it."""
    from datetime import UTC, datetime

    from memory_review.integrity.keys import Keyring

    key = bytes(range(32))
    row = Transition(
        tenant_id=1, seq=1, memory_id=7, candidate_id=None, from_status="active", to_status="frozen",
        action="freeze", actor="user:3", reason="legal hold", verdict_id=None, row_version=2,
        request_id=None, prev_hash=heads.GENESIS, key_id="k1",
        content_hash=hashlib.sha256(b"Invoices go to billing@acme.example").hexdigest(),
        reason_mac=chain.text_mac("legal hold", key), request_id_mac=chain.text_mac(None, key),
        created_at=datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=UTC),
    )  # fmt: skip
    assert row.reason_mac == REASON_MAC
    assert chain.canonical_row(row) == (
        b'{"action":"freeze","actor":"user:3","candidate_id":null,"content_hash":"'
        + row.content_hash.encode()
        + b'","created_at":"2026-11-29T10:00:00.123456+00:00","from_status":"active","key_id":"k1",'
        b'"memory_id":7,"prev_hash":"' + heads.GENESIS.encode() + b'","reason_mac":"' + REASON_MAC.encode()
        + b'","request_id_mac":null,"row_version":2,"seq":1,"tenant_id":1,"to_status":"frozen",'
        b'"verdict_id":null}'
    )  # fmt: skip
    assert chain.row_hash(row, Keyring("k1", {"k1": key})) == PINNED
    # Its own digest, while it waits for its position: the same form without seq and prev_hash.
    assert chain.leaf_mac(row, Keyring("k1", {"k1": key})) == PINNED_LEAF


# The same by openssl, independently of this code base (docs/audit.md shows the commands).
REASON_MAC = "de04577284de4c164d9f7baacb2b7514d3c1904dc4afaa324fde23f32578de33"
PINNED = "ac5cebcc668a8b2f3af722580fab121e8bf874a3f9a9765e05f1836a6137948f"
PINNED_LEAF = "3535317dfcf0f273a5cad9d4919746e9e451c2e8043105315df7ea27dd151b7a"

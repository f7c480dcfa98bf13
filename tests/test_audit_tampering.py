"""What a database administrator might do to the audit trail behind the application's back, and
how verify_audit catches each: the chain is keyed (HMAC with a key outside the database),
checkpoints are kept outside it too, and every status must be explained by a transition."""

import hashlib
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory_review.audit import chain, checkpoints
from memory_review.audit.keys import Keyring
from memory_review.audit.models import AuditChain, Transition
from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import Memory
from tests.factories import make_memory, without_append_only_trigger

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(acme):
    """Twelve memories, each flagged then approved: 24 transitions."""
    for _ in range(12):
        memory = make_memory(acme)
        for kind, action in (("policy", "flag"), ("user", "approve")):
            transition(
                obj=memory,
                action=action,
                actor=Actor(kind, "3"),
                reason=action,
                seen_version=memory.row_version,
            )
    return acme


def sql(statement: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def rehash_without_the_key(tenant, start: int) -> None:
    """Rewrite a row and every row after it the way an attacker without the key would: each hash
    recomputed with plain SHA-256 over the same canonical form, each link repaired, the head too."""
    rows = list(Transition.objects.for_tenant(tenant).filter(seq__gte=start).order_by("seq"))
    prev = Transition.objects.for_tenant(tenant).get(seq=start - 1).hash
    for row in rows:
        row.prev_hash = prev
        row.reason = "nothing happened here" if row.seq == start else row.reason
        row.hash = hashlib.sha256(chain.canonical(row)).hexdigest()
        without_append_only_trigger(
            "UPDATE audit_transition SET reason = %s, prev_hash = %s, hash = %s WHERE id = %s",
            [row.reason, row.prev_hash, row.hash, row.pk],
        )
        prev = row.hash
    sql("UPDATE audit_auditchain SET head_hash = %s WHERE tenant_id = %s", [prev, tenant.pk])


def test_an_intact_trail_verifies_against_its_checkpoint(trail, capsys):
    checkpoints.write(trail)
    call_command("verify_audit")
    assert (
        "tenant acme: intact, 24 transitions, checked against the checkpoint of #24"
        in capsys.readouterr().out
    )


def test_a_row_rehashed_without_the_key_is_caught_at_that_row(trail):
    rehash_without_the_key(trail, start=7)

    problem = chain.verify(trail)

    assert (problem.seq, problem.problem) == (
        7,
        "row was edited or forged (its hash no longer matches its contents)",
    )


def test_a_forged_row_appended_with_its_head_is_caught(trail):
    last = Transition.objects.for_tenant(trail).get(seq=24)
    forged = Transition(
        tenant_id=trail.pk, seq=25, memory_id=last.memory_id, from_status="active", to_status="deleted",
        action="forget", actor="user:3", reason="forged", row_version=4, created_at=last.created_at,
        prev_hash=last.hash, key_id=last.key_id,
    )  # fmt: skip
    forged.hash = chain.row_hash(forged, Keyring(last.key_id, {last.key_id: b"a guess at the key".ljust(32)}))
    forged.save(force_insert=True)
    sql("UPDATE audit_auditchain SET seq = 25, head_hash = %s WHERE tenant_id = %s", [forged.hash, trail.pk])

    problem = chain.verify(trail)

    assert problem.seq == 25 and "edited or forged" in problem.problem


def test_an_unkeyed_row_is_a_forgery(trail):
    row = Transition.objects.for_tenant(trail).get(seq=24)
    without_append_only_trigger("UPDATE audit_transition SET key_id = NULL WHERE id = %s", [row.pk])

    assert "names no key" in chain.verify(trail).problem


def test_a_tail_cut_together_with_its_head_is_caught_by_the_checkpoint(trail):
    checkpoints.write(trail)
    kept = Transition.objects.for_tenant(trail).get(seq=20)
    without_append_only_trigger("DELETE FROM audit_transition WHERE tenant_id = %s AND seq > 20", [trail.pk])
    sql("UPDATE audit_auditchain SET seq = 20, head_hash = %s WHERE tenant_id = %s", [kept.hash, trail.pk])
    assert chain.verify(trail) is not None  # the memories' statuses no longer match either

    problem = chain.verify(trail, checkpoint=checkpoints.latest(trail))

    assert problem.seq == 24 and "recorded #24, but the chain now ends at #20" in problem.problem


def test_a_head_rolled_back_leaves_rows_beyond_it(trail):
    earlier = Transition.objects.for_tenant(trail).get(seq=18)
    sql("UPDATE audit_auditchain SET seq = 18, head_hash = %s WHERE tenant_id = %s", [earlier.hash, trail.pk])

    problem = chain.verify(trail)

    assert problem.seq == 19 and "beyond the chain's head (#18)" in problem.problem


def test_a_status_written_straight_into_the_table_is_caught(trail):
    memory = Memory.objects.for_tenant(trail).order_by("pk").first()
    sql("UPDATE memories_memory SET status = 'frozen' WHERE id = %s", [memory.pk])

    problem = chain.verify(trail)

    assert f"memory {memory.pk} is frozen at version 3, but its audit trail says active at version 3" in str(
        problem
    )


def test_a_row_inserted_beyond_the_head_is_named_and_blocks_the_next_transition_clearly(trail):
    last = Transition.objects.for_tenant(trail).get(seq=24)
    stray = Transition.objects.create(
        tenant_id=trail.pk, seq=25, memory_id=last.memory_id, from_status="active", to_status="frozen",
        action="freeze", actor="user:3", reason="stray", row_version=4, created_at=last.created_at,
        prev_hash=last.hash, hash="0" * 64, key_id=last.key_id,
    )  # fmt: skip
    memory = make_memory(trail)

    with pytest.raises(
        LifecycleError, match=rf"row #25 \(transition id {stray.pk}\) beyond its head \(#24\)"
    ):
        transition(obj=memory, action="flag", actor=Actor.policy("v1"), reason="x", seen_version=1)
    assert "beyond the chain's head (#24)" in chain.verify(trail).problem
    memory.refresh_from_db()
    assert memory.status == "active"  # nothing was changed


def test_an_edited_checkpoint_file_is_reported(trail, settings):
    checkpoints.write(trail)
    path = f"{settings.AUDIT_CHECKPOINT_DIR}/acme.jsonl"
    record = json.loads(open(path).read())
    record["seq"] = 3
    with open(path, "a") as file:
        file.write(json.dumps(record) + "\n")

    with pytest.raises(CommandError, match="broken in 1 tenant"):
        call_command("verify_audit")
    with pytest.raises(checkpoints.CheckpointError, match="its signature does not match"):
        checkpoints.latest(trail)


def test_a_row_signed_with_a_key_we_do_not_hold_is_named(trail, settings):
    settings.AUDIT_KEY_ID = "k-new"  # the key changed id, and nobody kept the old one

    problem = chain.verify(trail)

    assert problem.seq == 1 and "signed with key 'test-key', which is not in the keyring" in problem.problem


def test_after_a_key_rotation_old_and_new_rows_verify(trail, settings, tmp_path):
    from tests.conftest import TEST_AUDIT_KEY, TEST_AUDIT_KEY_ID

    keys = tmp_path / "audit-key.json"
    keys.write_text(
        json.dumps({"current": "k2", "keys": {TEST_AUDIT_KEY_ID: TEST_AUDIT_KEY, "k2": "7a" * 32}})
    )
    settings.AUDIT_KEY, settings.AUDIT_KEY_FILE = "", str(keys)
    memory = make_memory(trail)

    transition(
        obj=memory, action="flag", actor=Actor.policy("v1"), reason="after the rotation", seen_version=1
    )

    assert Transition.objects.for_tenant(trail).get(seq=25).key_id == "k2"
    assert chain.verify(trail) is None
    assert AuditChain.objects.get(tenant=trail).seq == 25

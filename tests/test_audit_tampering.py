"""What a database administrator might do to the audit trail's chains and checkpoints behind the
application's back, and how verify_audit catches each: both chains (transitions, seals) are keyed
(HMAC with a key outside the database), checkpoints are kept outside it too and chained line to
line, every verification remembers how much of the checkpoint file it read, and every status must
be explained by a transition. tests/test_seal_tampering.py does the same for the sealed rows."""

import hashlib
import json
from datetime import timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from memory_review.audit import chain, checkpoints, verification
from memory_review.audit.models import AuditChain, Seal, Transition
from memory_review.audit.tasks import checkpoint_all
from memory_review.integrity.keys import Keyring
from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import Memory
from tests.factories import make_memory, without_append_only_trigger

# Rows deleted around the application orphan the change feed's rows that cite them, on purpose.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("orphans_allowed")]


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
        row.hash = hashlib.sha256(chain.canonical_row(row)).hexdigest()
        without_append_only_trigger(
            "UPDATE audit_transition SET reason = %s, prev_hash = %s, hash = %s WHERE id = %s",
            [row.reason, row.prev_hash, row.hash, row.pk],
        )
        prev = row.hash
    sql("UPDATE audit_auditchain SET head_hash = %s WHERE tenant_id = %s", [prev, tenant.pk])


def test_an_intact_trail_verifies_against_its_checkpoint(trail, capsys):
    checkpoints.write(trail)
    seals = Seal.objects.filter(tenant=trail).count()  # each memory, its event, each feed change
    assert seals == 61
    call_command("verify_audit")
    assert (
        f"tenant acme: intact, 24 transitions and {seals} seals, checked against the checkpoint of #24"
        in capsys.readouterr().out
    )


def test_a_row_rehashed_without_the_key_is_caught_at_that_row(trail):
    rehash_without_the_key(trail, start=7)

    problem = verification.problem_in(trail)

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

    problem = verification.problem_in(trail)

    assert problem.seq == 25 and "edited or forged" in problem.problem


def test_history_rewritten_with_the_key_and_checkpointed_again_is_caught_by_the_older_line(trail):
    """Whoever holds the key can sign a rewritten chain and append a checkpoint that vouches for it,
    but not take back the line already kept outside the database."""
    checkpoints.write(trail)
    ring, key = keyring_and_key()
    prev = Transition.objects.for_tenant(trail).get(seq=6).hash
    for row in Transition.objects.for_tenant(trail).filter(seq__gte=7).order_by("seq"):
        if row.seq == 7:
            row.reason, row.reason_mac = "nothing happened here", chain.text_mac("nothing happened here", key)
        row.prev_hash = prev
        row.hash, row.leaf = chain.row_hash(row, ring), chain.leaf_mac(row, ring)
        without_append_only_trigger(
            "UPDATE audit_transition SET reason = %s, reason_mac = %s, prev_hash = %s, hash = %s, leaf = %s "
            "WHERE id = %s",
            [row.reason, row.reason_mac, row.prev_hash, row.hash, row.leaf, row.pk],
        )
        prev = row.hash
    sql("UPDATE audit_auditchain SET head_hash = %s WHERE tenant_id = %s", [prev, trail.pk])
    assert "not the row the checkpoint" in str(verification.problem_in(trail))
    checkpoints.write(trail)  # a new line, signed with the key, for the rewritten head

    problem = verification.problem_in(trail)

    assert "#24 is not the row the checkpoint of" in str(problem)
    assert "the chain was rewritten" in str(problem)


def keyring_and_key():
    from memory_review.integrity.keys import keyring

    ring = keyring()
    return ring, ring.key(ring.current)


def test_an_unkeyed_row_is_a_forgery(trail):
    row = Transition.objects.for_tenant(trail).get(seq=24)
    without_append_only_trigger("UPDATE audit_transition SET key_id = NULL WHERE id = %s", [row.pk])

    assert "names no key" in verification.problem_in(trail).problem


def test_a_tail_cut_together_with_its_head_is_caught_by_the_seals_and_the_checkpoint(trail):
    checkpoints.write(trail)
    kept = Transition.objects.for_tenant(trail).get(seq=20)
    without_append_only_trigger("DELETE FROM audit_transition WHERE tenant_id = %s AND seq > 20", [trail.pk])
    sql("UPDATE audit_auditchain SET seq = 20, head_hash = %s WHERE tenant_id = %s", [kept.hash, trail.pk])

    problem = verification.problem_in(trail)
    with open(checkpoints.path_for(trail), "w"):
        pass  # the seals alone catch it, without the checkpoint too
    without_checkpoint = verification.problem_in(trail)

    assert "the checkpoint of" in str(problem) and "recorded #24, but the chain now ends at #20" in str(
        problem
    )
    assert "a seal was written when the transitions' chain reached #24, but the chain now ends at #20" in str(
        without_checkpoint
    )


def test_the_whole_trail_truncated_with_every_status_reset_is_caught(trail):
    without_append_only_trigger("DELETE FROM audit_transition WHERE tenant_id = %s", [trail.pk])
    sql("UPDATE audit_auditchain SET seq = 0, head_hash = %s WHERE tenant_id = %s", ["0" * 64, trail.pk])
    sql("UPDATE memories_memory SET status = 'active', row_version = 1 WHERE tenant_id = %s", [trail.pk])

    problem = verification.problem_in(trail)

    assert "a seal was written when the transitions' chain reached #24, but the chain now ends at #0" in str(
        problem
    )


def test_a_head_rolled_back_leaves_rows_beyond_it(trail):
    earlier = Transition.objects.for_tenant(trail).get(seq=18)
    sql("UPDATE audit_auditchain SET seq = 18, head_hash = %s WHERE tenant_id = %s", [earlier.hash, trail.pk])

    problem = verification.problem_in(trail)

    assert problem.seq == 19 and "beyond the chain's head (#18)" in problem.problem


def test_a_status_written_straight_into_the_table_is_caught(trail):
    memory = Memory.objects.for_tenant(trail).order_by("pk").first()
    sql("UPDATE memories_memory SET status = 'frozen' WHERE id = %s", [memory.pk])

    problem = verification.problem_in(trail)

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
    assert "beyond the chain's head (#24)" in verification.problem_in(trail).problem
    memory.refresh_from_db()
    assert memory.status == "active"  # nothing was changed


def test_an_edited_checkpoint_file_is_reported(trail, settings):
    checkpoints.write(trail)
    path = checkpoints.path_for(trail)
    record = json.loads(path.read_text())
    record["seq"] = 3
    with open(path, "a") as file:
        file.write(json.dumps(record) + "\n")

    with pytest.raises(CommandError, match="broken in 1 tenant"):
        call_command("verify_audit")
    with pytest.raises(checkpoints.CheckpointError, match="line 2: its signature does not match"):
        checkpoints.read(trail)


def checkpointed_three_times(tenant) -> None:
    for _ in range(3):
        checkpoints.write(tenant)
        verification.verify_and_record(tenant, by="system:test")


def test_the_newest_checkpoint_lines_deleted_are_reported(trail):
    checkpointed_three_times(trail)
    path = checkpoints.path_for(trail)
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines()[:1]))

    problem = verification.problem_in(trail)

    assert f"the checkpoint file {path} has 1 line(s), but the verification of" in str(problem)
    assert "read 3: its newest lines were removed" in str(problem)


def test_a_checkpoint_file_removed_is_reported(trail):
    checkpointed_three_times(trail)
    checkpoints.path_for(trail).unlink()

    problem = verification.problem_in(trail)

    assert f"the checkpoint file {checkpoints.path_for(trail)} is missing, but the verification of" in str(
        problem
    )


def test_a_checkpoint_line_removed_from_the_middle_is_reported(trail):
    checkpointed_three_times(trail)
    path = checkpoints.path_for(trail)
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[2] + "\n" + lines[2] + "\n")  # as long as before

    problem = verification.problem_in(trail)

    assert "line 2: it does not follow the line before it: lines were removed or changed" in str(problem)


def test_a_verification_that_saw_no_file_does_not_make_a_missing_one_fine(trail):
    checkpointed_three_times(trail)
    checkpoints.path_for(trail).unlink()
    assert not verification.verify_and_record(trail, by="system:test").intact

    assert "is missing" in str(verification.problem_in(trail))


def test_checkpoints_that_stopped_are_reported_and_the_job_resumes_them(trail, settings):
    checkpoints.write(trail)
    later = timezone.now() + timedelta(minutes=2 * settings.AUDIT_CHECKPOINT_MINUTES + 6)
    with time_machine.travel(later, tick=False):
        problem = verification.problem_in(trail)
        assert checkpoint_all() == 1
        after = verification.latest(trail)

    assert "older than the 10-minute interval allows: checkpoints stopped" in str(problem)
    assert after.intact and after.checkpoint_lines == 2


def test_a_trail_edited_while_checkpoints_were_stopped_is_never_checkpointed_over(trail, settings):
    checkpoints.write(trail)
    lines_before = len(checkpoints.read(trail).checkpoints)
    row = Transition.objects.for_tenant(trail).get(seq=7)
    without_append_only_trigger("UPDATE audit_transition SET reason = %s WHERE id = %s", ["nothing", row.pk])
    later = timezone.now() + timedelta(minutes=2 * settings.AUDIT_CHECKPOINT_MINUTES + 6)
    with time_machine.travel(later, tick=False):
        written = checkpoint_all()
        after = verification.latest(trail)

    assert written == 0
    assert len(checkpoints.read(trail).checkpoints) == lines_before
    assert not after.intact and "chain broken at #7" in after.problem


def test_a_fresh_install_is_not_checked_yet_rather_than_intact(acme, capsys):
    assert verification.latest(acme) is None
    call_command("verify_audit")

    assert "tenant acme: intact, 0 transitions and 1 seals, not checkpointed yet" in capsys.readouterr().out


def test_a_seal_edited_removed_or_cut_with_its_head_is_named(trail):
    checkpoints.write(trail)
    seals = Seal.objects.for_tenant(trail).order_by("seq")
    middle, last = seals[5], seals.last()
    without_append_only_trigger("UPDATE audit_seal SET digest = %s WHERE id = %s", ["f" * 64, middle.pk])
    edited = verification.problem_in(trail)
    without_append_only_trigger("DELETE FROM audit_seal WHERE id = %s", [middle.pk])
    removed = verification.problem_in(trail)
    without_append_only_trigger(
        "DELETE FROM audit_seal WHERE tenant_id = %s AND seq > %s", [trail.pk, middle.seq - 1]
    )
    before = seals.get(seq=middle.seq - 1)
    sql(
        "UPDATE audit_auditchain SET seal_seq = %s, seal_hash = %s WHERE tenant_id = %s",
        [before.seq, before.hash, trail.pk],
    )
    cut = verification.problem_in(trail)

    assert f"seals' ledger broken at #{middle.seq}: seal was edited or forged" in str(edited)
    assert f"seals' ledger broken at #{middle.seq}: seal #{middle.seq} was removed" in str(removed)
    assert f"recorded #{last.seq}, but the seals' ledger now ends at #{before.seq}" in str(cut)


def test_a_seal_head_rolled_back_leaves_seals_beyond_it(trail):
    earlier = Seal.objects.for_tenant(trail).order_by("-seq")[3]
    sql(
        "UPDATE audit_auditchain SET seal_seq = %s, seal_hash = %s WHERE tenant_id = %s",
        [earlier.seq, earlier.hash, trail.pk],
    )

    problem = verification.problem_in(trail)

    assert f"seal lies beyond the ledger's head (#{earlier.seq})" in str(problem)


def test_a_transitions_text_blanked_around_the_application_is_named(trail):
    row = Transition.objects.for_tenant(trail).get(seq=5)
    without_append_only_trigger(
        "UPDATE audit_transition SET reason = '[erased]', erased_by = 1 WHERE id = %s", [row.pk]
    )

    problem = verification.problem_in(trail)

    assert f"chain broken at #5 (transition id {row.pk}): its text was blanked around the application" in str(
        problem
    )


def test_a_tenant_deleted_with_everything_it_had_is_reported_by_its_checkpoints(acme, globex, capsys):
    checkpoints.write(acme)
    sql("UPDATE tenancy_tenant SET slug = 'gone' WHERE id = %s", [acme.pk])  # as good as gone

    with pytest.raises(CommandError, match="broken"):
        call_command("verify_audit")

    assert f"{checkpoints.path_for(acme)} names tenant acme ({acme.pk}), which is not in the database" in (
        capsys.readouterr().err
    )


def test_a_deactivated_tenant_is_still_verified(acme, capsys):
    sql("UPDATE tenancy_tenant SET is_active = %s WHERE id = %s", [False, acme.pk])

    with pytest.raises(CommandError):
        call_command("verify_audit")

    assert f"tenant {acme.pk} was changed around the application" in capsys.readouterr().err


def test_a_row_signed_with_a_key_we_do_not_hold_is_named(trail, settings):
    settings.AUDIT_KEY_ID = "k-new"  # the key changed id, and nobody kept the old one

    problem = verification.problem_in(trail)

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
    assert verification.problem_in(trail) is None
    assert AuditChain.objects.get(tenant=trail).seq == 25

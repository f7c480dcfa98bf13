"""Issue 27, item 4: checkpoints with no blind window. The line the checkpoint job writes is
recorded (sealed) in the database at once, so removing it is named by the very next
verification; each line can be copied to a witness the database's administrators cannot write;
and verify_audit warns when the database and the checkpoints share a host and a user."""

import logging

import pytest
from django.core.management import CommandError, call_command

from memory_review.audit import checkpoints, verification
from memory_review.audit.tasks import checkpoint_all
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkpointed(acme):
    make_memory(acme)
    assert checkpoint_all() == 1
    make_memory(acme)
    assert checkpoint_all() == 1
    return acme


def test_the_newest_line_removed_right_after_the_job_wrote_it_is_named(checkpointed):
    path = checkpoints.path_for(checkpointed)
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    path.write_text(lines[0] + "\n")  # no verification has read line 2 yet

    problem = verification.problem_in(checkpointed)

    assert f"the checkpoint file {path} has 1 line(s)" in str(problem)
    assert "read 2: its newest lines were removed" in str(problem)


def test_every_line_is_copied_to_the_witness_command(acme, settings, tmp_path):
    witness = tmp_path / "witness"
    witness.mkdir()
    settings.AUDIT_CHECKPOINT_COPY_COMMAND = f"sh -c 'cat >> {witness}/$CHECKPOINT_TENANT.jsonl'"
    make_memory(acme)
    checkpoint_all()
    checkpoint_all()

    copied = (witness / "acme.jsonl").read_text()
    assert copied == checkpoints.path_for(acme).read_text() and copied.count("\n") == 2


def test_a_copy_that_fails_is_logged_and_the_local_line_is_kept(acme, settings, caplog):
    settings.AUDIT_CHECKPOINT_COPY_COMMAND = "sh -c 'echo bucket refused >&2; exit 3'"
    with caplog.at_level(logging.ERROR, logger="memory_review.audit.checkpoints"):
        assert checkpoint_all() == 1

    assert "audit checkpoint of acme not copied" in caplog.text and "bucket refused" in caplog.text
    assert verification.problem_in(acme) is None
    assert len(checkpoints.path_for(acme).read_text().splitlines()) == 1


def test_verify_audit_warns_while_database_and_checkpoints_share_this_host(checkpointed, capsys):
    call_command("verify_audit")

    said = capsys.readouterr()
    assert "tenant acme: intact" in said.out
    assert "warning: the checkpoints" in said.err and "share this host" in said.err


def test_no_warning_once_each_line_is_copied_elsewhere(checkpointed, settings, capsys):
    settings.AUDIT_CHECKPOINT_COPY_COMMAND = "true"
    call_command("verify_audit")

    assert "warning" not in capsys.readouterr().err


def test_a_broken_trail_still_fails_the_command_with_the_warning_beside(checkpointed, capsys):
    path = checkpoints.path_for(checkpointed)
    path.unlink()
    with pytest.raises(CommandError, match="audit trail broken in 1 tenant"):
        call_command("verify_audit")
    said = capsys.readouterr().err
    assert "is missing" in said and "warning: the checkpoints" in said

"""Where the audit key comes from, and the clear errors when it is wrong; the checkpoint job."""

import json
import stat

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from memory_review.audit import checkpoints
from memory_review.audit.tasks import checkpoint_all
from memory_review.integrity import keys


@pytest.mark.parametrize(
    ("value", "problem"), [("not hex", "must be hexadecimal"), ("ab" * 16, "must be at least 32 bytes")]
)
def test_a_bad_key_in_the_environment_is_refused_by_name(settings, value, problem):
    settings.AUDIT_KEY = value
    with pytest.raises(ImproperlyConfigured, match=f"AUDIT_KEY {problem}"):
        keys.keyring()


def test_a_named_key_file_must_exist_and_hold_its_current_key(settings, tmp_path):
    settings.AUDIT_KEY, settings.AUDIT_KEY_FILE = "", str(tmp_path / "missing.json")
    with pytest.raises(ImproperlyConfigured, match="does not exist"):
        keys.keyring()
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"current": "k9", "keys": {"k1": "11" * 32}}))
    settings.AUDIT_KEY_FILE = str(broken)
    with pytest.raises(ImproperlyConfigured, match="the current key 'k9' is not among its keys"):
        keys.keyring()


def test_the_demo_key_file_is_made_once_readable_by_its_owner_only(settings, tmp_path):
    settings.AUDIT_KEY, settings.VAR_DIR = "", tmp_path
    settings.AUDIT_KEY_FILE = str(tmp_path / "audit-key.json")

    first = keys.keyring()
    again = keys.keyring()

    assert first == again and len(first.key(first.current)) == 32
    assert stat.S_IMODE((tmp_path / "audit-key.json").stat().st_mode) == 0o600


@pytest.mark.django_db
def test_the_checkpoint_command_and_job_append_one_signed_line_a_tenant(acme, globex, settings, capsys):
    call_command("audit_checkpoint")
    assert checkpoint_all() == 2

    out = capsys.readouterr().out
    assert (
        "tenant acme: checkpoint at transition #0" in out
        and "tenant globex: checkpoint at transition #0" in out
    )
    lines = (checkpoints.Path(settings.AUDIT_CHECKPOINT_DIR) / "acme.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[-1])["signature"]
    found = checkpoints.read(acme)
    assert (found.lines, found.newest.seq, found.newest.seal_seq) == (
        2,
        0,
        4,
    )  # the tenant, two verifications, and the line the first one's job wrote, recorded in it
    assert json.loads(lines[1])["prev"] == checkpoints.line_hash(lines[0])

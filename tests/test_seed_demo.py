"""`seed_demo` gives a newcomer real-looking work, and running it twice changes nothing."""

import pytest
from django.apps import apps
from django.core.management import call_command

from memory_review.audit import verification
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Tenant


def row_counts() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


@pytest.mark.django_db
def test_seeding_twice_gives_the_same_counts(capsys):
    call_command("seed_demo")
    first = row_counts()
    call_command("seed_demo")

    assert row_counts() == first
    assert "Nothing changed" in capsys.readouterr().out


@pytest.mark.django_db
def test_the_demo_lead_logs_in_and_sees_the_review_queue(client):
    call_command("seed_demo", "--no-history")
    login = client.post("/accounts/login/", {"username": "acme-lead", "password": "demo"})
    assert login.status_code == 302, "the demo's password logs in through the login form"

    response = client.get("/t/acme/review/")

    assert response.status_code == 200
    queue = response.context["listing"].rows
    assert len(queue) >= 12
    assert all(memory.tenant.slug == "acme" for memory in queue)
    assert queue[0].content in response.content.decode()


@pytest.mark.django_db
def test_the_demo_has_work_in_every_status_weeks_of_history_and_labels_for_calibration():
    from datetime import timedelta

    from memory_review.assessments.models import PromotionCandidate, Verdict
    from memory_review.audit.models import Transition
    from memory_review.calibration import evidence, labeling

    call_command("seed_demo")
    for tenant in Tenant.objects.all():
        memories = Memory.objects.for_tenant(tenant)
        assert memories.count() >= 60
        for status in MemoryStatus.values:
            assert memories.filter(status=status).exists(), f"{tenant.slug} has no {status} memory"
        assert memories.needs_review().count() >= 12
        assert verification.problem_in(tenant) is None  # the history's moves are on the chain, in order

    acme = Tenant.objects.get(slug="acme")
    _, policy = labeling.active_policy(acme)
    found = evidence.invalidation(acme, policy)
    assert found.labeled.gold >= 200 and found.labeled.awaiting_ruling > 0  # a lead has rulings to make
    assert found.sweep.best.strict > found.sweep.baseline.strict  # the sweep has something to say
    assert evidence.promotion(acme, policy).n >= 40
    assert labeling.labeler_agreement(acme, "verdict", names={}).fleiss > 0.6
    flagged = sorted(Memory.objects.for_tenant(acme).needs_review().values_list("flagged_at", flat=True))
    times = list(Transition.objects.for_tenant(acme).order_by("seq").values_list("created_at", flat=True))

    assert flagged[-1] - flagged[0] > timedelta(days=14)  # the queue's ages mean something
    assert times == sorted(times) and times[-1] - times[0] > timedelta(days=30)
    assert Verdict.objects.for_tenant(acme).filter(shadow_disposition__isnull=False).exists()
    decided = PromotionCandidate.objects.for_tenant(acme).filter(reviewer_decision__isnull=False)
    assert decided.count() >= 10 and decided.filter(disagreement=True).exists()
    assert Memory.objects.for_tenant(acme).filter(verdicts__isnull=False).distinct().count() >= 20

"""When sampled audits are drawn (issue 31, item 1): a tenant's plan (daily by default), kept
sealed when a lead sets it and refused by name when out of range; the hourly job draws each
population when it is due, the decisions over periods that follow one another."""

from datetime import timedelta

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from memory_review.audit import verification
from memory_review.lifecycle import Actor, transition
from memory_review.quality import schedule, tasks
from memory_review.quality.models import AuditPlan, AuditSample
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def kill(memory):
    memory.refresh_from_db()
    transition(
        obj=memory, action="contradict", actor=Actor.policy("v1"), reason="x", seen_version=memory.row_version
    )


@pytest.fixture
def memories(acme):
    return [make_memory(acme, source="email", kind="preference") for _ in range(8)]


def test_a_tenant_without_a_plan_is_drawn_daily_and_then_not_again_until_a_day_has_passed(acme, memories):
    kill(memories[0])
    now = timezone.now()

    assert schedule.plan_of(acme).pk is None and schedule.plan_of(acme).every_days == 1
    assert schedule.draw_due(now) == 2  # both populations

    drawn = {s.population: s for s in AuditSample.objects.for_tenant(acme)}
    assert set(drawn) == {"unreviewed", "decisions"}
    assert {s.drawn_by for s in drawn.values()} == {"system:audit-schedule"}
    assert drawn["decisions"].period_start == now - timedelta(days=1) and drawn["decisions"].period_end == now
    assert drawn["decisions"].items == 1 and drawn["unreviewed"].items == 7
    assert schedule.draw_due(now + timedelta(hours=5)) == 0
    assert schedule.draw_due(now + timedelta(days=1)) == 2
    later = AuditSample.objects.for_tenant(acme).filter(population="decisions").order_by("-drawn_at").first()
    assert later.period_start == now  # the next period starts where the last one ended


def test_a_plan_of_zero_days_draws_nothing_and_a_weekly_one_waits_a_week(acme, memories):
    now = timezone.now()
    schedule.set_plan(acme, by="user:1", every_days=0, precision=0.05, confidence=0.9, budget=100, share=0.2)
    assert schedule.draw_due(now) == 0

    schedule.set_plan(acme, by="user:1", every_days=7, precision=0.05, confidence=0.9, budget=100, share=0.2)
    assert schedule.draw_due(now) == 2
    sample = AuditSample.objects.for_tenant(acme).get(population="unreviewed")
    assert (sample.precision, sample.confidence, sample.budget) == (0.05, 0.9, 100)
    assert schedule.draw_due(now + timedelta(days=6)) == 0
    assert schedule.draw_due(now + timedelta(days=7)) == 2


def test_an_inactive_tenant_is_not_drawn(acme, memories):
    acme.is_active = False
    acme.save()
    assert schedule.draw_due() == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("every_days", 400, "every_days: is days between draws, 0 (off) to 365; got 400"),
        ("precision", 0.5, "precision: is a half-width of 0.005 to 0.2 (0.03: +-3 points); got 0.5"),
        ("confidence", 0.97, "confidence: is one of 0.8, 0.9, 0.95 or 0.99; got 0.97"),
        ("budget", 0, "budget: is the labels a draw may ask for, 1 to 20,000; got 0"),
        ("share", 1.5, "share: is the stream's share for audit items, 0 to 1; got 1.5"),
    ],
)
def test_a_plan_out_of_range_is_refused_by_name_and_nothing_is_written(acme, field, value, message):
    asked = {
        "every_days": 1,
        "precision": 0.03,
        "confidence": 0.95,
        "budget": 400,
        "share": 0.25,
        field: value,
    }
    with pytest.raises(schedule.PlanRefused) as refused:
        schedule.set_plan(acme, by="user:1", **asked)
    assert str(refused.value) == message and refused.value.field == field
    assert not AuditPlan.objects.exists()


def test_a_plan_is_one_row_a_tenant_changed_in_place_and_sealed(acme):
    schedule.set_plan(
        acme, by="user:1", every_days=3, precision=0.03, confidence=0.95, budget=400, share=0.25
    )
    schedule.set_plan(acme, by="user:2", every_days=1, precision=0.02, confidence=0.99, budget=900, share=0.5)

    plan = AuditPlan.objects.get(tenant=acme)
    assert (plan.every_days, plan.precision, plan.budget, plan.share, plan.changed_by) == (
        1,
        0.02,
        900,
        0.5,
        "user:2",
    )
    assert verification.problem_in(acme) is None


def test_the_draw_now_task_draws_as_the_plan_says_for_the_lead_who_asked(acme, memories):
    schedule.set_plan(acme, by="user:1", every_days=1, precision=0.1, confidence=0.9, budget=5, share=0.25)

    assert tasks.draw(acme.pk, "unreviewed", "user:9") == 5  # the budget caps the one stratum of 8
    sample = AuditSample.objects.for_tenant(acme).get()
    assert (sample.drawn_by, sample.budget, sample.confidence) == ("user:9", 5, 0.9)


def test_a_tenant_already_drawing_is_passed_over_and_one_tenants_failure_stops_no_other(
    acme, globex, memories, monkeypatch
):
    make_memory(globex)
    with schedule.drawing(acme) as mine:
        assert mine
        assert schedule.draw_due() == 2  # globex's two; acme's draw runs elsewhere
        with pytest.raises(Retry):  # "Draw now" waits its turn too
            tasks.draw(acme.pk, "unreviewed", "user:9")
    assert not AuditSample.objects.filter(tenant=acme).exists()

    real = schedule.draw_for

    def failing(tenant, population, **kwargs):
        if tenant == acme:
            raise RuntimeError("the database went away")
        return real(tenant, population, **kwargs)

    monkeypatch.setattr(schedule, "draw_for", failing)
    later = timezone.now() + timedelta(days=1)
    assert schedule.draw_due(later) == 2  # globex drawn again, acme's failure logged

"""When sampled audits are drawn (issue 31, item 1): a tenant's plan, as its lead set it (with the
gate's target, quality/gate.py), and the scheduled draw that follows it, with the gate measured
again. Beat asks every hour (`draw_due`); a population is drawn again
once its newest scheduled or hand-made draw is `every_days` old. The decisions drawn are those
since the previous decisions draw ended (the plan's period the first time), so periods follow
one another without a gap or an overlap, and their rates can be compared (quality/health.py)."""

import logging
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from memory_review.integrity.context import acting_as
from memory_review.integrity.db_context import tenant_context
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.rows import save_one_row

from . import gate, notices, sampling
from .models import AuditPlan, AuditSample, Population

logger = logging.getLogger(__name__)
SCHEDULE = "system:audit-schedule"
DRAW_LOCK_SECONDS = 600
DEFAULT = AuditPlan(every_days=1, precision=0.03, confidence=0.95, budget=400, share=0.25, gate_target=None)
LONGEST = 365  # days between draws a plan may ask for
CONFIDENCES = (0.8, 0.9, 0.95, 0.99)


class PlanRefused(ValueError):
    """A plan that cannot be kept as asked; `field` names what is wrong, and nothing is written."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def plan_of(tenant: Tenant) -> AuditPlan:
    """The tenant's plan, or the defaults (unsaved) while its lead has not set one."""
    found = AuditPlan.objects.for_tenant(tenant).first()
    if found is not None:
        return found
    return AuditPlan(
        tenant=tenant, every_days=DEFAULT.every_days, precision=DEFAULT.precision,
        confidence=DEFAULT.confidence, budget=DEFAULT.budget, share=DEFAULT.share,
    )  # fmt: skip


def set_plan(
    tenant: Tenant,
    *,
    by: str,
    every_days: int,
    precision: float,
    confidence: float,
    budget: int,
    share: float,
    gate_target: float | None = None,
) -> AuditPlan:
    """Keep the plan a lead set, sealed, and measure the gate against its target at once;
    PlanRefused naming the first field out of range, with nothing written."""
    checks = (
        ("every_days", every_days, 0 <= every_days <= LONGEST, f"days between draws, 0 (off) to {LONGEST}"),
        (
            "precision",
            precision,
            0.005 <= precision <= 0.2,
            "a half-width of 0.005 to 0.2 (0.03: +-3 points)",
        ),
        ("confidence", confidence, confidence in CONFIDENCES, "one of 0.8, 0.9, 0.95 or 0.99"),
        ("budget", budget, 1 <= budget <= 20_000, "the labels a draw may ask for, 1 to 20,000"),
        ("share", share, 0 <= share <= 1, "the stream's share for audit items, 0 to 1"),
        (
            "gate_target",
            gate_target,
            gate_target is None or 0.5 <= gate_target < 1,
            "the precision the policy must be measured at to kill alone, 0.5 to 0.999, or none",
        ),
    )
    for field, value, ok, meaning in checks:
        if not ok:
            raise PlanRefused(field, f"is {meaning}; got {value}")

    def fill(plan: AuditPlan) -> None:
        plan.every_days, plan.precision, plan.confidence = every_days, precision, confidence
        plan.budget, plan.share, plan.changed_by, plan.changed_at = budget, share, by, timezone.now()
        plan.gate_target = gate_target

    with transaction.atomic(), acting_as(by):
        plan = save_one_row(AuditPlan, tenant, fill)
        gate.refresh(tenant, by=by)
    return plan


def newest(tenant: Tenant, population: str) -> AuditSample | None:
    return AuditSample.objects.for_tenant(tenant).filter(population=population).order_by("-drawn_at").first()


def due(tenant: Tenant, now: datetime) -> list[str]:
    """The populations whose next draw is due under the tenant's plan."""
    plan = plan_of(tenant)
    if plan.every_days == 0:
        return []
    found = []
    for population in Population.values:
        last = newest(tenant, population)
        if last is None or now - last.drawn_at >= timedelta(days=plan.every_days) - timedelta(minutes=5):
            found.append(population)
    return found


def draw_for(
    tenant: Tenant, population: str, *, by: str, now: datetime | None = None, seed: str | None = None
) -> AuditSample:
    """A draw as the plan says; for decisions, over the period since the last decisions draw.
    `seed`: a draw made again, or the demo's own (a new one otherwise)."""
    now = now or timezone.now()
    plan = plan_of(tenant)
    start = None
    if population == Population.DECISIONS:
        last = newest(tenant, population)
        start = last.period_end if last is not None else now - timedelta(days=max(plan.every_days, 1))
    return sampling.draw(
        tenant=tenant, population=population, by=by, precision=plan.precision,
        confidence=plan.confidence, most=plan.budget, start=start, end=now, seed=seed,
    )  # fmt: skip


def draw_due(now: datetime | None = None) -> int:
    """Beat's hourly job: every active tenant's due draws, its gate measured again, and its agents
    told of a regression the labels since have shown (quality/notices.py). Answers how many were
    drawn. One tenant's failure is logged and the others still drawn and told."""
    now = now or timezone.now()
    drawn = 0
    for tenant in Tenant.objects.filter(is_active=True).order_by("pk"):
        # Told before the draws: a period drawn now and not labeled yet would be the newest, and
        # the notice's sentence is the newest period's. Not under the draw's lock: a notice is
        # written once whoever writes it.
        try:
            with tenant_context(tenant.pk), acting_as(SCHEDULE):
                notices.notify_regressions(tenant)
        except Exception:
            logger.exception("memory health: tenant %s's regression notices failed", tenant.pk)
        try:
            with tenant_context(tenant.pk), acting_as(SCHEDULE), drawing(tenant) as mine:
                if not mine:
                    continue  # another draw of this tenant's runs now
                for population in due(tenant, now):
                    draw_for(tenant, population, by=SCHEDULE, now=now)
                    drawn += 1
                gate.refresh(tenant, by=SCHEDULE, now=now)  # what the labels since measured
        except Exception:
            logger.exception("sampled audits: tenant %s's scheduled draws failed", tenant.pk)
    return drawn


@contextmanager
def drawing(tenant: Tenant):
    """Whether this process may draw for the tenant now: one draw at a time a tenant (beat's, a
    lead's "Draw now"), so two never take the same period. A lock in the cache, kept at most
    DRAW_LOCK_SECONDS (a draw over 2,000,000 memories takes about 4 s)."""
    key = f"quality-drawing:{tenant.pk}"
    mine = cache.add(key, "1", DRAW_LOCK_SECONDS)
    try:
        yield mine
    finally:
        if mine:
            cache.delete(key)

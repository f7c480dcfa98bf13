"""The memory health page (issue 31, item 5): how wrong the memory is, by sampled audits, with
intervals (quality/health.py), the labels still missing, the held memories, and the tenant's
audit plan, which a lead sets and can draw from at once."""

from celery import current_app
from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_review import params
from memory_review.assessments import screening
from memory_review.memories import holds, trust
from memory_review.memories.models import HELD, Memory, MemoryStatus, TrustRules
from memory_review.quality import health, results, schedule
from memory_review.quality.models import AuditItem, Population
from memory_review.quality.tasks import DRAW_TASK

from .. import health_charts
from ..access import require_lead
from .base import page, tenant_view

HELD_SHOWN = 20


class PlanForm(forms.Form):
    every_days = forms.IntegerField(
        min_value=0, max_value=schedule.LONGEST, label="Draw every (days; 0: no schedule)"
    )
    points = forms.FloatField(min_value=0.5, max_value=20, label="Precision asked of each stratum (± points)")
    confidence = forms.TypedChoiceField(
        coerce=float, choices=[(c, f"{c:.0%}") for c in schedule.CONFIDENCES], label="Confidence"
    )
    budget = forms.IntegerField(min_value=1, max_value=20_000, label="Labels a draw may ask for, at most")
    share = forms.IntegerField(
        min_value=0, max_value=100, label="Share of the labeling stream for audit items (%)"
    )
    gate = forms.FloatField(
        required=False, min_value=50, max_value=99.9,
        label="The policy kills alone where its measured precision is at least (%; blank: no gate)",
    )  # fmt: skip


class TrustForm(forms.Form):
    hold = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Hold for a person what comes from",
        choices=[(name, trust.WORDS[name]) for name in trust.CLASSES if name != trust.PERSON],
    )  # fmt: skip


def _require_reader(membership) -> None:
    if not (membership.can_lead or membership.can_audit):
        raise PermissionDenied("memory health is for support leads, compliance auditors and admins")


def _initial(plan) -> dict:
    return {
        "every_days": plan.every_days, "points": round(plan.precision * 100, 2),
        "confidence": plan.confidence, "budget": plan.budget, "share": round(plan.share * 100),
        "gate": None if plan.gate_target is None else round(plan.gate_target * 100, 1),
    }  # fmt: skip


def _page(request: HttpRequest, membership, *, form=None, trust_form=None, status: int = 200) -> HttpResponse:
    tenant = membership.tenant
    rules = TrustRules.objects.for_tenant(tenant).first()
    found = [health.health(tenant, population) for population in Population.values]
    held = Memory.objects.for_tenant(tenant).filter(status=MemoryStatus.NEEDS_REVIEW, flagged_for=HELD)
    plan = schedule.plan_of(tenant)
    split = [pair for h in found for p in h.trend for pair in p.split] if membership.can_lead else []
    shown = [p.sample for h in found for p in h.trend]
    return page(
        request, membership, "review/memory_health.html", status=status,
        populations=[(h, health.sentence(h), health_charts.trend_chart(h)) for h in found],
        held=list(held.order_by("-flagged_at", "-pk")[:HELD_SHOWN]), held_count=held.count_up_to(999),
        plan=plan, form=form or PlanForm(initial=_initial(plan)), chart_least=health_charts.LEAST,
        rules=rules, trust_form=trust_form or TrustForm(initial={"hold": rules.held if rules else []}),
        owed=screening.owed(tenant), disputes=results.disputes_in(split),
        rulings=results.rulings_of(tenant, request.user, shown) if membership.can_lead else [],
    )  # fmt: skip


@require_GET
@tenant_view
def memory_health(request: HttpRequest, membership) -> HttpResponse:
    _require_reader(membership)
    return _page(request, membership)


@require_POST
@tenant_view
def plan_set(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    form = PlanForm(request.POST)
    if not form.is_valid():
        return _page(request, membership, form=form, status=400)
    data = form.cleaned_data
    try:
        schedule.set_plan(
            membership.tenant, by=f"user:{request.user.pk}", every_days=data["every_days"],
            precision=data["points"] / 100, confidence=data["confidence"], budget=data["budget"],
            share=data["share"] / 100, gate_target=None if data["gate"] is None else data["gate"] / 100,
        )  # fmt: skip
    except schedule.PlanRefused as refused:
        form.add_error(None, str(refused))
        return _page(request, membership, form=form, status=400)
    messages.success(request, "The audit plan is kept: the next draws follow it.")
    return redirect("memory-health", membership.tenant.slug)


@require_POST
@tenant_view
def draw_now(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    population = request.POST.get("population", "")
    if population not in Population.values:
        named = ", ".join(Population.values)
        messages.error(request, f"Nothing was drawn: the population is one of {named}.")
        return redirect("memory-health", membership.tenant.slug)
    args = (membership.tenant.pk, population, f"user:{request.user.pk}")
    transaction.on_commit(lambda: current_app.signature(DRAW_TASK, args=args).delay())
    messages.success(request, "A worker is drawing the sample: it shows here when it is sealed.")
    return redirect("memory-health", membership.tenant.slug)


@require_POST
@tenant_view
def trust_set(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    form = TrustForm(request.POST)
    if not form.is_valid():
        return _page(request, membership, trust_form=form, status=400)
    holds.set_rules(membership.tenant, hold_classes=form.cleaned_data["hold"], by=f"user:{request.user.pk}")
    held = ", ".join(trust.WORDS[name] for name in form.cleaned_data["hold"]) or "no class"
    messages.success(request, f"From now on a memory from {held} waits for a person before agents read it.")
    return redirect("memory-health", membership.tenant.slug)


@require_POST
@tenant_view
def rule(request: HttpRequest, membership) -> HttpResponse:
    """A lead's ruling on an audit item its labelers disagree on: it decides the item."""
    require_lead(membership)
    return _on_item(
        request, membership, "Nothing was ruled",
        lambda item: results.rule(
            item=item, lead=request.user, outcome=request.POST.get("outcome", ""),
            note=request.POST.get("note", ""),
        ),
        "Ruled on audit item a{pk}: the labelers' answers are kept beside it.",
    )  # fmt: skip


@require_POST
@tenant_view
def rule_withdraw(request: HttpRequest, membership) -> HttpResponse:
    """A lead takes back their own ruling: the item waits for a ruling again."""
    require_lead(membership)
    return _on_item(
        request, membership, "Nothing was withdrawn",
        lambda item: results.withdraw_ruling(item=item, lead=request.user),
        "Your ruling on audit item a{pk} is withdrawn: its labelers' answers decide it again.",
    )  # fmt: skip


def _on_item(request: HttpRequest, membership, refused: str, act, done: str) -> HttpResponse:
    """`act` on the audit item the form names, saying what was done or why nothing was, and back
    to the disputes."""
    item = AuditItem.objects.for_tenant(membership.tenant).filter(pk=_pk(request.POST.get("item"))).first()
    if item is None:
        messages.error(request, f"{refused}: no such audit item here.")
    else:
        try:
            act(item)
        except results.LabelError as error:
            messages.error(request, f"{refused}: {error}")
        else:
            messages.success(request, done.format(pk=item.pk))
    return redirect(reverse("memory-health", args=[membership.tenant.slug]) + "#disputes-title")


def _pk(value: str | None) -> int | None:
    """The audit item's id, or None for anything params does not read as one."""
    return int(value) if value and not params.id_problem(value, params.column_max(AuditItem)) else None

"""Promotion candidates (shadow mode: the policy's decision is recorded, a reviewer decides) and
the disagreements between the shadow policy and people, or the active policy."""

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from memory_review import params, textlimits
from memory_review.assessments.models import CandidateStatus, PromotionCandidate
from memory_review.assessments.promotion import candidate_decide
from memory_review.audit.models import MOVES_NEWEST_FIRST
from memory_review.calibration import figures
from memory_review.lifecycle import Actor, LifecycleError, StaleVersion
from memory_review.tenancy.names import actor_names

from .. import disagreements
from ..access import get_candidate_for, require_reviewer, works_blind
from ..paging import keyset_page
from .base import page, tenant_view
from .blind import candidate_evidence, refused_when_blind

OPEN = [CandidateStatus.PROPOSED, CandidateStatus.NEEDS_REVIEW]
SHOWS = {"open": "Waiting for a reviewer", "decided": "Decided", "all": "All"}

# Newest first, in the (tenant, id) index's order, the tenant given as its range alone: given
# `tenant_id = x`, PostgreSQL drops a constant column from the order and walked the primary key
# backwards past another tenant's newer candidates (20,000 of them at two tenants of 200,000).
NEWEST_FIRST = ("-tenant_id", "-id")


@require_GET
@tenant_view
@refused_when_blind("the promotion list shows each candidate's votes and what the policy decided")
def promotion_list(request: HttpRequest, membership) -> HttpResponse:
    show = request.GET.get("show") if request.GET.get("show") in SHOWS else "open"
    tenant = membership.tenant
    candidates = PromotionCandidate.objects.tenant_range(tenant)
    candidates = candidates.select_related("source_event", "assessment")
    if show == "open":
        candidates = candidates.filter(status__in=OPEN)
    elif show == "decided":
        candidates = candidates.exclude(status__in=OPEN)
    listing = keyset_page(
        candidates, NEWEST_FIRST, size=50, after=request.GET.get("after"), before=request.GET.get("before")
    )
    return page(request, membership, "review/promotion_list.html", listing=listing, show=show, shows=SHOWS)


@require_GET
@tenant_view
def promotion_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    candidate = get_candidate_for(membership, pk)
    if works_blind(membership):
        return candidate_evidence(request, membership, candidate)
    history = list(candidate.transitions.order_by(*MOVES_NEWEST_FIRST))
    names = actor_names([*(move.actor for move in history), candidate.reviewed_by])
    for move in history:
        move.actor_name = names[move.actor]
    return page(
        request,
        membership,
        "review/promotion_detail.html",
        candidate=candidate,
        history=history,
        reviewed_by=names.get(candidate.reviewed_by),
        is_open=candidate.status in OPEN,
    )


class DecideForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    reason = textlimits.CharField(max_length=900, strip=True)
    seen_version = forms.IntegerField(
        min_value=1, max_value=params.column_max(PromotionCandidate, "row_version")
    )


@require_POST
@tenant_view
def promotion_decide(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_reviewer(membership)
    candidate = get_candidate_for(membership, pk)
    form = DecideForm(request.POST)
    if not form.is_valid():
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(errors)}")
        return redirect("promotion-detail", membership.tenant.slug, candidate.pk)
    try:
        candidate = candidate_decide(
            candidate=candidate,
            action=form.cleaned_data["decision"],
            actor=Actor.user(request.user),
            reason=form.cleaned_data["reason"],
            seen_version=form.cleaned_data["seen_version"],
            request_id=request.request_id,
        )
    except StaleVersion:
        messages.error(request, "Someone decided this candidate since you loaded it: nothing was changed.")
    except LifecycleError as exc:
        messages.error(request, f"Nothing was changed: {exc}")
    else:
        verb = (
            "approved: the memory is written" if candidate.status == CandidateStatus.APPROVED else "rejected"
        )
        note = " The policy would have decided otherwise: a disagreement." if candidate.disagreement else ""
        messages.success(request, f"Candidate {verb}.{note}")
    return redirect("promotion-detail", membership.tenant.slug, candidate.pk)


@require_GET
@tenant_view
@refused_when_blind("the disagreements page sets the policies against the reviewers and the labelers")
def disagreement_list(request: HttpRequest, membership) -> HttpResponse:
    tenant = membership.tenant
    shown = figures.read("disagreements", tenant)
    promotion_cases, shadow_cases = disagreements.kept_cases(shown.value) if shown.ready else ([], [])
    return page(
        request,
        membership,
        "review/disagreements.html",
        shown=shown,
        **(shown.value or {}),
        promotion_cases=promotion_cases,
        shadow_cases=shadow_cases,
    )

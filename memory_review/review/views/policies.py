"""Compare a candidate policy with the active one over every stored vote, propose it with its
evidence (a lead), and adopt or decline it (an admin who did not propose it) (issue 9, item 3)."""

import json
from dataclasses import fields
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits
from memory_review.assessments.models import PolicyVersion
from memory_review.assessments.policy import Thresholds
from memory_review.calibration import adoption, figures, labeling
from memory_review.calibration.models import PolicyProposal
from memory_review.quality import gate
from memory_review.tenancy.names import display_name

from .. import words
from ..access import require_admin, require_lead
from .base import page, tenant_view
from .blind import refused_when_blind

NUMBERS = [f.name for f in fields(Thresholds) if f.name != "review_only_sources"]


class ThresholdsForm(forms.Form):
    """Every number of a policy, each in [0, 1]; left out, the active policy's value."""

    def __init__(self, data, *, active: Thresholds):
        super().__init__(data)
        self.active = active
        for name in NUMBERS:
            self.fields[name] = forms.FloatField(min_value=0, max_value=1, required=False)

    def thresholds(self) -> Thresholds:
        """The candidate; ValueError names what is wrong with it."""
        values = self.active.to_data()
        values.update({name: value for name, value in self.cleaned_data.items() if value is not None})
        return Thresholds.from_data(values)


def _candidate(request: HttpRequest, active: Thresholds) -> tuple[Thresholds | None, list[str]]:
    form = ThresholdsForm(request.GET if request.method == "GET" else request.POST, active=active)
    if not form.is_valid():
        return None, [f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()]
    try:
        return form.thresholds(), []
    except ValueError as error:
        return None, [str(error)]


@require_GET
@tenant_view
@refused_when_blind("comparing policies lists the votes a policy would decide otherwise, and how")
def policy_compare(request: HttpRequest, membership) -> HttpResponse:
    tenant = membership.tenant
    version, active = labeling.active_policy(tenant)
    candidate, problems = _candidate(request, active)
    shown = figures.read("compare", tenant, candidate=candidate.to_data()) if candidate else None
    comparison = shown.value if shown else None
    names = (
        words.subjects(
            tenant,
            memories=[memory for _, memory, _, _ in comparison.stored.changes[:200]],
            candidates=[pk for pk, _, _ in comparison.promotions.changes[:200]],
        )
        if comparison
        else {}
    )
    return page(
        request,
        membership,
        "review/policy_compare.html",
        status=400 if problems else 200,
        version=version,
        active=active,
        candidate=candidate,
        problems=problems,
        shown=shown,
        comparison=comparison,
        names=names,
        numbers=[(name, getattr(active, name), getattr(candidate or active, name)) for name in NUMBERS],
        origin=request.GET.get("origin", "typed in")[:100],
        modes=adoption.MODES,
        gate_shown=gate.preview_shown(tenant, candidate) if candidate else None,
    )


class ProposeForm(forms.Form):
    mode = forms.ChoiceField(choices=[(mode, mode) for mode in adoption.MODES])
    reason = textlimits.CharField(max_length=1000, strip=True)
    origin = forms.CharField(max_length=100, required=False)


@require_POST
@tenant_view
def policy_propose(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    tenant = membership.tenant
    _, active = labeling.active_policy(tenant)
    candidate, problems = _candidate(request, active)
    form = ProposeForm(request.POST)
    if not form.is_valid():
        problems += [f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()]
    if problems:
        for problem in problems:
            messages.error(request, f"Nothing was proposed: {problem}")
        return _back_to_the_candidate(request, tenant)
    # The numbers the lead saw on the comparison: kept, or counted now on a small tenant.
    comparison = figures.read("compare", tenant, candidate=candidate.to_data()).value
    gate_shown = gate.preview_shown(tenant, candidate)
    waiting = [
        words for words, ready in (
            ("its comparison", comparison is not None),
            ("what the gate would do with it", gate_shown is None or gate_shown.ready),
        ) if not ready
    ]  # fmt: skip
    if waiting:
        counting = f"{' and '.join(waiting)} {'are' if len(waiting) > 1 else 'is'} still being counted"
        messages.error(request, f"Nothing was proposed yet: {counting}. Try again shortly.")
        return _back_to_the_candidate(request, tenant)
    proposal = adoption.propose(
        tenant,
        request.user,
        thresholds=candidate,
        mode=form.cleaned_data["mode"],
        reason=form.cleaned_data["reason"],
        evidence={
            **comparison.evidence(origin=form.cleaned_data["origin"] or "typed in"),
            "gate": gate.preview_evidence(gate_shown),
        },
    )
    messages.success(request, f"Proposal {proposal.pk} is waiting for an admin to adopt it.")
    return redirect("policy-list", tenant.slug)


def _back_to_the_candidate(request: HttpRequest, tenant) -> HttpResponse:
    """Back to the comparison of the same candidate (its numbers only: never the CSRF token in a URL)."""
    kept = {name: request.POST[name] for name in [*NUMBERS, "origin"] if request.POST.get(name)}
    return redirect(reverse("policy-compare", args=[tenant.slug]) + "?" + urlencode(kept))


@require_GET
@tenant_view
@refused_when_blind("the policies page lists memories the active policy would decide otherwise")
def policy_list(request: HttpRequest, membership) -> HttpResponse:
    tenant = membership.tenant
    proposals = list(
        PolicyProposal.objects.for_tenant(tenant)
        .select_related("proposed_by", "decided_by", "policy")
        .order_by("-pk")[:50]
    )
    for proposal in proposals:
        proposal.proposer_name = display_name(proposal.proposed_by)
        proposal.decider_name = display_name(proposal.decided_by) if proposal.decided_by else None
        proposal.evidence_json = json.dumps(proposal.evidence, indent=2, sort_keys=True)
    shown = figures.read("redecided", tenant)
    changes = shown.value or {"count": 0, "first": []}
    return page(
        request,
        membership,
        "review/policies.html",
        proposals=proposals,
        versions=PolicyVersion.objects.for_tenant(tenant).order_by("-number")[:50],
        shown=shown,
        redecided=changes["first"],
        redecided_count=changes["count"],
        names=words.subjects(tenant, memories=[verdict.memory_id for verdict, _ in changes["first"]]),
        gate=gate.standing(tenant),
        gate_shown=gate.preview_shown(tenant, labeling.active_policy(tenant)[1]),
    )


@require_POST
@tenant_view
def policy_adopt(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_admin(membership, "only an admin adopts a policy; a support lead proposes one")
    try:
        version = adoption.adopt(membership.tenant, request.user, pk, note=request.POST.get("note", ""))
    except adoption.AdoptionError as error:
        messages.error(request, f"Nothing was adopted: {error}")
    else:
        messages.success(request, f"Policy {version.label} is now the {version.mode} policy.")
    return redirect("policy-list", membership.tenant.slug)


@require_POST
@tenant_view
def policy_decline(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_admin(membership, "only an admin adopts a policy; a support lead proposes one")
    try:
        adoption.decline(membership.tenant, request.user, pk, note=request.POST.get("note", ""))
    except adoption.AdoptionError as error:
        messages.error(request, f"Nothing was changed: {error}")
    else:
        messages.success(request, f"Proposal {pk} declined.")
    return redirect("policy-list", membership.tenant.slug)

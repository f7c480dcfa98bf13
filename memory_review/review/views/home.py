"""Where a person lands: their tenants, and a tenant's state at a glance."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from memory_review.agents import webhooks
from memory_review.audit.models import MOVES_NEWEST_FIRST, Transition
from memory_review.calibration import figures
from memory_review.compliance import dual_control
from memory_review.memories import selectors
from memory_review.tenancy.access import tenants_for
from memory_review.tenancy.models import Role
from memory_review.tenancy.names import actor_names
from memory_review.workflow import assignment
from memory_review.workflow.models import Claim

from .. import team_page, words
from ..access import works_blind
from .base import page, tenant_view


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    tenants = tenants_for(request.user)
    if len(tenants) == 1:
        return redirect("tenant-home", slug=tenants[0].slug)
    return render(request, "review/home.html", {"tenants": tenants})


@require_GET
@tenant_view
def tenant_home(request: HttpRequest, membership) -> HttpResponse:
    if works_blind(membership):  # the counts and moves are what the policy made of the votes
        return page(request, membership, "review/labeler_home.html")
    tenant = membership.tenant
    recent = list(
        Transition.objects.for_tenant(tenant)
        .select_related("memory", "candidate")
        .only(
            "seq",
            "created_at",
            "from_status",
            "to_status",
            "actor",
            "reason",
            "memory__id",
            "memory__subject",
            "candidate__id",
            "candidate__subject",
        )
        .order_by(*MOVES_NEWEST_FIRST)[:10]
    )
    names = actor_names(move.actor for move in recent)
    for move in recent:
        move.actor_name = names[move.actor]
    words.in_words(recent, tenant)
    claims = Claim.objects.for_tenant(tenant).held().filter(holder=request.user).select_related("memory")
    waiting = dual_control.pending(tenant).exclude(requested_by=request.user) if membership.can_lead else None
    return page(
        request,
        membership,
        "review/tenant_home.html",
        counts=selectors.status_counts(tenant),
        recent=recent,
        my_claims=claims.order_by("expires_at")[:20],
        waiting_for_me=list(waiting[:10]) if waiting is not None else [],
        assigned_to_me=_assigned_to(request.user, tenant) if membership.can_review else 0,
        past_target=assignment.past_target(tenant),
        target_hours=assignment.target_hours(tenant.pk),
        disabled_webhooks=list(webhooks.disabled_notices(tenant)[:5])
        if membership.role == Role.ADMIN
        else [],
    )


def _assigned_to(user, tenant) -> int | None:
    """What waits for this reviewer, as the team page counts it (a kept figure on a large tenant:
    review/team_page.py); None while its first count runs."""
    waiting = team_page.waiting(figures.read("team_waiting", tenant))
    return None if waiting is None else waiting.get(user.pk, (0, None))[0]

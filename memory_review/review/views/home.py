"""Where a person lands: their tenants, and a tenant's state at a glance."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from memory_review.audit.models import Transition
from memory_review.memories import selectors
from memory_review.tenancy.access import tenants_for

from ..models import Claim
from ..names import actor_names
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
    tenant = membership.tenant
    recent = list(
        Transition.objects.for_tenant(tenant)
        .select_related("memory")
        .only(
            "seq",
            "created_at",
            "from_status",
            "to_status",
            "actor",
            "reason",
            "memory__id",
            "memory__subject",
            "candidate_id",
        )
        .order_by("-seq")[:10]
    )
    names = actor_names(move.actor for move in recent)
    for move in recent:
        move.actor_name = names[move.actor]
    claims = Claim.objects.for_tenant(tenant).held().filter(holder=request.user).select_related("memory")
    return page(
        request,
        membership,
        "review/tenant_home.html",
        counts=selectors.status_counts(tenant),
        recent=recent,
        my_claims=claims.order_by("expires_at")[:20],
    )

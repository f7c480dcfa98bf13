"""Review screens: short function views; rules live in services and selectors."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from memory_review.assessments import selectors as assessment_selectors
from memory_review.audit.models import Transition
from memory_review.memories import selectors
from memory_review.tenancy.access import get_membership, tenants_for

QUEUE_PAGE = 50


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    tenants = tenants_for(request.user)
    if len(tenants) == 1:
        return redirect("tenant-home", slug=tenants[0].slug)
    return render(request, "review/home.html", {"tenants": tenants})


def _render(request: HttpRequest, membership, template: str, **context) -> HttpResponse:
    """Every tenant page knows the tenant and the viewer's role (the header shows both)."""
    return render(request, template, {"membership": membership, "tenant": membership.tenant, **context})


@require_GET
@login_required
def tenant_home(request: HttpRequest, slug: str) -> HttpResponse:
    membership = get_membership(request.user, slug)
    tenant = membership.tenant
    recent = Transition.objects.for_tenant(tenant).select_related("memory").order_by("-seq")[:10]
    return _render(
        request, membership, "review/tenant_home.html", counts=selectors.status_counts(tenant), recent=recent
    )


@require_GET
@login_required
def review_queue(request: HttpRequest, slug: str) -> HttpResponse:
    membership = get_membership(request.user, slug)
    page = Paginator(selectors.review_queue(membership.tenant), QUEUE_PAGE).get_page(request.GET.get("page"))
    return _render(request, membership, "review/review_queue.html", page=page, memories=page.object_list)


@require_GET
@login_required
def assessment_list(request: HttpRequest, slug: str) -> HttpResponse:
    membership = get_membership(request.user, slug)
    assessments = assessment_selectors.recent_assessments(membership.tenant)
    return _render(request, membership, "review/assessment_list.html", assessments=assessments)


@require_GET
@login_required
def assessment_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    membership = get_membership(request.user, slug)
    assessment = assessment_selectors.assessment_for(membership.tenant, pk)
    # While a worker is on it, htmx polls and swaps only the results region.
    template = "review/assessment_detail.html" + ("#results" if request.htmx else "")
    verdicts = assessment_selectors.verdicts_of(assessment)
    return _render(request, membership, template, assessment=assessment, verdicts=verdicts)

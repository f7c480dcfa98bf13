"""What each Jev assessment cost and what it moved."""

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory_review.assessments import selectors
from memory_review.assessments.models import Disposition

from ..paging import BadCursor, keyset_page
from .base import page, tenant_view

# An assessment with more verdicts than this hides its unrelated ones unless asked.
HIDE_UNRELATED_ABOVE = 20
VERDICT_PAGE = 50


@require_GET
@tenant_view
def assessment_list(request: HttpRequest, membership) -> HttpResponse:
    assessments = selectors.assessments_of(membership.tenant)
    try:
        listing = keyset_page(
            assessments, ("-id",), size=50, after=request.GET.get("after"), before=request.GET.get("before")
        )
    except BadCursor:
        listing = keyset_page(assessments, ("-id",), size=50)
    return page(request, membership, "review/assessment_list.html", listing=listing)


@require_GET
@tenant_view
def assessment_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    assessment = selectors.assessment_for(membership.tenant, pk)
    verdicts = selectors.verdicts_of(assessment)
    total = verdicts.count()
    unrelated = request.GET.get("unrelated")
    hide_unrelated = unrelated == "hide" or (unrelated != "show" and total > HIDE_UNRELATED_ABOVE)
    if hide_unrelated:
        verdicts = verdicts.exclude(disposition=Disposition.UNRELATED)
    shown = Paginator(verdicts, VERDICT_PAGE).get_page(request.GET.get("page"))
    # While a worker is on it, htmx polls and swaps only the results region.
    template = "review/assessment_detail.html" + ("#results" if request.htmx else "")
    return page(
        request,
        membership,
        template,
        assessment=assessment,
        verdicts=shown,
        total=total,
        hide_unrelated=hide_unrelated,
        candidate=selectors.candidate_of(assessment),
    )

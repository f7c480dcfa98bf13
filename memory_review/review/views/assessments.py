"""What each Jev assessment cost and what it moved."""

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits
from memory_review.assessments import selectors
from memory_review.assessments.models import Disposition
from memory_review.assessments.recovery import CannotRetry, retry_failed
from memory_review.lifecycle import Actor
from memory_review.tenancy.names import actor_names

from .. import words
from ..access import require_lead
from ..paging import BadCursor, keyset_page
from .base import page, tenant_view
from .blind import refused_when_blind

# An assessment with more verdicts than this hides its unrelated ones unless asked.
HIDE_UNRELATED_ABOVE = 20
VERDICT_PAGE = 50


@require_GET
@tenant_view
@refused_when_blind("the assessments list counts the memories each assessment's votes moved")
def assessment_list(request: HttpRequest, membership) -> HttpResponse:
    assessments = selectors.assessments_of(membership.tenant)
    listing = keyset_page(
        assessments, ("-id",), size=50, after=request.GET.get("after"), before=request.GET.get("before")
    )
    return page(request, membership, "review/assessment_list.html", listing=listing)


class RetryForm(forms.Form):
    note = textlimits.CharField(max_length=500, required=False, strip=True, label="Why (optional)")


@require_GET
@tenant_view
@refused_when_blind("an assessment's page lists every vote it took and what the policy made of it")
def assessment_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    return _detail(request, membership, pk)


@require_POST
@tenant_view
def assessment_retry(request: HttpRequest, membership, pk: int) -> HttpResponse:
    """A lead queues a failed assessment again (Jev was down, say); the restart is recorded."""
    require_lead(membership)
    assessment = selectors.assessment_for(membership.tenant, pk)
    form = RetryForm(request.POST)
    if not form.is_valid():
        return _detail(request, membership, pk, retry_form=form, status=400)
    try:
        retry_failed(
            assessment=assessment, actor=str(Actor.user(request.user)), note=form.cleaned_data["note"]
        )
    except CannotRetry as exc:
        return _detail(request, membership, pk, retry_error=str(exc), status=409)
    messages.success(request, f"Assessment {assessment.pk} queued again.")
    return redirect("assessment-detail", membership.tenant.slug, assessment.pk)


def _detail(request, membership, pk: int, *, retry_form=None, retry_error=None, status=200) -> HttpResponse:
    assessment = selectors.assessment_for(membership.tenant, pk)
    counts = selectors.verdict_counts(assessment)
    unrelated = request.GET.get("unrelated")
    hide_unrelated = unrelated == "hide" or (unrelated != "show" and counts.verdicts > HIDE_UNRELATED_ABOVE)
    try:
        voted = keyset_page(
            selectors.verdicts_of(assessment, with_unrelated=not hide_unrelated),
            selectors.VOTED_ORDER, size=VERDICT_PAGE, after=request.GET.get("after"),
            before=request.GET.get("before"),
        )  # fmt: skip
    except BadCursor as exc:
        voted, page_error, status = None, f"{exc}: start again from the first page", 400
    else:
        page_error = None
    # Settled by code (no votes to rank them by) come after the voted ones, on their last page.
    at_end = voted is not None and not voted.next_cursor
    settled = list(selectors.settled_by_code(assessment)[:VERDICT_PAGE]) if at_end else []
    # While a worker is on it, htmx polls and swaps only the results region.
    template = "review/assessment_detail.html" + ("#results" if request.htmx else "")
    restarts = list(assessment.restarts.order_by("-created_at"))
    names = actor_names(restart.actor for restart in restarts)
    for restart in restarts:
        restart.actor_name = names[restart.actor]
    words.in_words([assessment], membership.tenant)
    query = request.GET.copy()
    for cursor in ("after", "before"):
        query.pop(cursor, None)
    return page(
        request,
        membership,
        template,
        status=status,
        assessment=assessment,
        verdicts=voted,
        settled=settled,
        page_error=page_error,
        counts=counts,
        dispositions=_in_order(counts.by_disposition),
        hide_unrelated=hide_unrelated,
        query=query.urlencode(),
        candidate=selectors.candidate_of(assessment),
        restarts=restarts,
        retry_form=retry_form or RetryForm(),
        retry_error=retry_error,
    )


def _in_order(by_disposition: dict[str, int]) -> list[tuple[str, int]]:
    """(disposition in words, verdicts) in the policy table's order, for the counts' row."""
    return [(label, by_disposition[value]) for value, label in Disposition.choices if value in by_disposition]

"""Reassessment on change, one click each (issue 9, item 7): what rested on a guideline that no
longer holds, judged again or sent to a person; and the memories an adopted policy would decide
otherwise, decided again from their stored votes."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from memory_review.assessments import reassessment
from memory_review.assessments.models import PolicyVersion
from memory_review.lifecycle import Actor

from ..access import get_memory_for, require_lead
from .base import tenant_view


@require_POST
@tenant_view
def memory_reassess(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_lead(membership)
    memory = get_memory_for(membership, pk)
    actor = Actor.user(request.user)
    if not reassessment.worth_reassessing(memory):
        messages.error(request, "Nothing was queued: this memory still holds, or is not a guideline.")
    elif request.POST.get("how") == "review":
        moved = reassessment.send_to_review(memory, actor=actor)
        messages.success(
            request, f"{moved} memor{'y' if moved == 1 else 'ies'} sent to review, with the reason."
        )
    else:
        try:
            assessment = reassessment.reassess(memory, actor=actor)
        except reassessment.ReassessmentError as error:
            messages.error(request, f"Nothing was queued: {error}.")
        else:
            messages.success(request, f"Reassessment queued: {len(assessment.targets)} memories.")
            return redirect("assessment-detail", membership.tenant.slug, assessment.pk)
    return redirect("memory-detail", membership.tenant.slug, memory.pk)


@require_POST
@tenant_view
def policy_redecide(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    version = PolicyVersion.objects.for_tenant(membership.tenant).active()
    try:
        assessment = reassessment.redecide(membership.tenant, version, actor=Actor.user(request.user))
    except reassessment.ReassessmentError as error:
        messages.error(request, f"Nothing was decided again: {error}.")
        return redirect("policy-list", membership.tenant.slug)
    messages.success(request, f"Decided again under {version.label}: {len(assessment.targets)} memories.")
    return redirect("assessment-detail", membership.tenant.slug, assessment.pk)

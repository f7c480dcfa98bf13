"""Reads the assessment screens share."""

from django.db.models import Count, Q
from django.shortcuts import get_object_or_404

from memory_review.tenancy.models import Tenant

from .models import Assessment, Verdict


def recent_assessments(tenant: Tenant, limit: int = 50):
    return (
        Assessment.objects.for_tenant(tenant)
        .select_related("event", "policy")
        .annotate(
            n_verdicts=Count("verdicts"),
            n_applied=Count("verdicts", filter=Q(verdicts__applied=True)),
        )
        .order_by("-pk")[:limit]
    )


def assessment_for(tenant: Tenant, pk: int) -> Assessment:
    """The tenant's assessment or a 404 (another tenant's is a 404 too)."""
    return get_object_or_404(Assessment.objects.for_tenant(tenant).select_related("event", "policy"), pk=pk)


def verdicts_of(assessment: Assessment):
    """Verdicts with their memory and the transition each caused, bearing ones first."""
    return (
        Verdict.objects.filter(assessment=assessment)
        .select_related("memory")
        .prefetch_related("transitions")
        .order_by("-bears", "pk")
    )

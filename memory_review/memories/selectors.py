"""Reads that several screens share."""

from django.db.models import Count, OuterRef, Subquery

from memory_review.tenancy.models import Tenant

from .models import Memory, MemoryStatus


def status_counts(tenant: Tenant) -> list[tuple[str, str, int]]:
    """(status, label, count) for every status, zeros included, in lifecycle order."""
    counts = dict(Memory.objects.for_tenant(tenant).values_list("status").annotate(n=Count("id")).order_by())
    return [(status.value, status.label, counts.get(status.value, 0)) for status in MemoryStatus]


def review_queue(tenant: Tenant):
    """needs_review memories, oldest change first, each with why it was flagged: the reason and
    actor of the move into review, and the assessment whose verdict caused it."""
    from memory_review.audit.models import Transition

    flagged = Transition.objects.filter(memory=OuterRef("pk"), to_status=MemoryStatus.NEEDS_REVIEW).order_by(
        "-seq"
    )
    return (
        Memory.objects.for_tenant(tenant)
        .needs_review()
        .select_related("source_event")
        .annotate(
            flag_reason=Subquery(flagged.values("reason")[:1]),
            flag_actor=Subquery(flagged.values("actor")[:1]),
            flag_assessment=Subquery(flagged.values("verdict__assessment_id")[:1]),
        )
        .order_by("updated_at", "id")
    )

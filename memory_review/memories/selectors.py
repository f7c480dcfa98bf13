"""Reads that several screens share."""

from django.db.models import Count

from memory_review.tenancy.models import Tenant

from .models import Memory, MemoryStatus


def status_counts(tenant: Tenant) -> list[tuple[str, str, int]]:
    """(status, label, count) for every status, zeros included, in lifecycle order."""
    counts = dict(Memory.objects.for_tenant(tenant).values_list("status").annotate(n=Count("id")).order_by())
    return [(status.value, status.label, counts.get(status.value, 0)) for status in MemoryStatus]

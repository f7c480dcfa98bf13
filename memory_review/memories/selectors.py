"""Reads that several screens share."""

from memory_review.tenancy.models import Tenant

from . import tallies
from .models import MemoryStatus


def status_counts(tenant: Tenant) -> list[tuple[str, str, int]]:
    """(status, label, count) for every status, zeros included, in lifecycle order."""
    counts = tallies.counts(tenant)
    return [(status.value, status.label, counts.get(status.value, 0)) for status in MemoryStatus]

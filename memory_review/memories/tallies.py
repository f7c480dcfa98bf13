"""Counts of a tenant's memories by status, kept as memories are written and moved, so reading
them costs a few rows a status however many memories there are (the tenant's home page). Each
write adds to one of a status's stripes at random, so concurrent writers rarely wait for each
other (MemoryTally.STRIPES)."""

import random

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Sum

from memory_review.tenancy.models import Tenant

from .models import Memory, MemoryStatus, MemoryTally


def tally_add(*, tenant_id: int, status: str, delta: int) -> None:
    """Within the caller's transaction: the status's count moves by `delta` (in one stripe)."""
    stripe = random.randrange(MemoryTally.STRIPES)
    row = MemoryTally.objects.filter(tenant_id=tenant_id, of_status=status, stripe=stripe)
    if row.update(n=F("n") + delta):
        return
    try:
        with transaction.atomic():  # the stripe's first memory in this status
            MemoryTally.objects.create(tenant_id=tenant_id, of_status=status, stripe=stripe, n=delta)
    except IntegrityError:  # a concurrent writer created it first
        row.update(n=F("n") + delta)


def tally_move(*, tenant_id: int, from_status: str, to_status: str) -> None:
    # Always in the same order, whichever way the memory moves, so two opposite moves never
    # each hold the row the other waits for.
    for status, delta in sorted(((from_status, -1), (to_status, 1))):
        tally_add(tenant_id=tenant_id, status=status, delta=delta)


def counts(tenant: Tenant) -> dict[str, int]:
    return summed(MemoryTally.objects.for_tenant(tenant))


def summed(tallies) -> dict[str, int]:
    """Each status's stripes added up."""
    return dict(tallies.values_list("of_status").annotate(n=Sum("n")).order_by())


def counted(tenant: Tenant) -> dict[str, int]:
    """The same, counted from the memories themselves."""
    return dict(Memory.objects.for_tenant(tenant).values_list("status").annotate(n=Count("id")).order_by())


@transaction.atomic
def recount(tenant: Tenant) -> dict[str, int]:
    """Rebuild the tenant's counts from its memories: after a bulk load that bypassed the
    writers, or to check them."""
    actual = counted(tenant)
    MemoryTally.objects.for_tenant(tenant).filter(stripe__gt=0).update(n=0)
    for status in MemoryStatus.values:
        MemoryTally.objects.update_or_create(
            tenant=tenant, of_status=status, stripe=0, defaults={"n": actual.get(status, 0)}
        )
    return actual

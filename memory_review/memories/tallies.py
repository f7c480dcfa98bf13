"""Counts of a tenant's memories by status, kept as memories are written and moved, so reading
them costs seven rows however many memories there are (the tenant's home page)."""

from django.db import IntegrityError, transaction
from django.db.models import Count, F

from memory_review.tenancy.models import Tenant

from .models import Memory, MemoryStatus, MemoryTally


def tally_add(*, tenant_id: int, status: str, delta: int) -> None:
    """Within the caller's transaction: the status's count moves by `delta`."""
    if MemoryTally.objects.filter(tenant_id=tenant_id, of_status=status).update(n=F("n") + delta):
        return
    try:
        with transaction.atomic():  # the tenant's first memory in this status
            MemoryTally.objects.create(tenant_id=tenant_id, of_status=status, n=delta)
    except IntegrityError:  # a concurrent writer created it first
        MemoryTally.objects.filter(tenant_id=tenant_id, of_status=status).update(n=F("n") + delta)


def tally_move(*, tenant_id: int, from_status: str, to_status: str) -> None:
    # Always in the same order, whichever way the memory moves, so two opposite moves never
    # each hold the row the other waits for.
    for status, delta in sorted(((from_status, -1), (to_status, 1))):
        tally_add(tenant_id=tenant_id, status=status, delta=delta)


def counts(tenant: Tenant) -> dict[str, int]:
    return dict(MemoryTally.objects.for_tenant(tenant).values_list("of_status", "n"))


def counted(tenant: Tenant) -> dict[str, int]:
    """The same, counted from the memories themselves."""
    return dict(Memory.objects.for_tenant(tenant).values_list("status").annotate(n=Count("id")).order_by())


@transaction.atomic
def recount(tenant: Tenant) -> dict[str, int]:
    """Rebuild the tenant's counts from its memories: after a bulk load that bypassed the
    writers, or to check them."""
    actual = counted(tenant)
    for status in MemoryStatus.values:
        MemoryTally.objects.update_or_create(
            tenant=tenant, of_status=status, defaults={"n": actual.get(status, 0)}
        )
    return actual

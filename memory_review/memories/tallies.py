"""Counts of a tenant's memories by status, kept as memories are written and moved, so reading
them costs a few rows a status however many memories there are (the tenant's home page). Each
write adds to one of a status's stripes at random, so concurrent writers rarely wait for each
other (MemoryTally.STRIPES)."""

import random

from django.db import IntegrityError, connections, router, transaction
from django.db.models import Count, F, Sum

from memory_review.tenancy.models import Tenant

from .models import Memory, MemoryStatus, MemoryTally


def tally_add(*, tenant_id: int, status: str, delta: int) -> None:
    """Within the caller's transaction: the status's count moves by `delta` (in one stripe)."""
    _add(tenant_id, [(status, delta)])


def tally_move(*, tenant_id: int, from_status: str, to_status: str) -> None:
    # Always in the same order, whichever way the memory moves, so two opposite moves never
    # each hold the row the other waits for.
    _add(tenant_id, sorted(((from_status, -1), (to_status, 1))))


# Backends with INSERT ... ON CONFLICT DO UPDATE: a move's two stripes are one statement.
UPSERTS = {"postgresql", "sqlite"}


def _add(tenant_id: int, deltas: list[tuple[str, int]]) -> None:
    stripes = [(status, random.randrange(MemoryTally.STRIPES), delta) for status, delta in deltas]
    connection = connections[router.db_for_write(MemoryTally)]
    if connection.vendor in UPSERTS:
        quote, meta = connection.ops.quote_name, MemoryTally._meta
        table = quote(meta.db_table)
        tenant, status, stripe, n = (
            quote(meta.get_field(f).column) for f in ("tenant", "of_status", "stripe", "n")
        )
        rows = ", ".join(["(%s, %s, %s, %s)"] * len(stripes))
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({tenant}, {status}, {stripe}, {n}) VALUES {rows} "
                f"ON CONFLICT ({tenant}, {status}, {stripe}) DO UPDATE SET {n} = {table}.{n} + excluded.{n}",
                [value for row in stripes for value in (tenant_id, *row)],
            )
        return
    for status, stripe, delta in stripes:  # Oracle: an UPDATE, or the stripe's first row
        row = MemoryTally.objects.filter(tenant_id=tenant_id, of_status=status, stripe=stripe)
        if row.update(n=F("n") + delta):
            continue
        try:
            with transaction.atomic():
                MemoryTally.objects.create(tenant_id=tenant_id, of_status=status, stripe=stripe, n=delta)
        except IntegrityError:  # a concurrent writer created it first
            row.update(n=F("n") + delta)


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

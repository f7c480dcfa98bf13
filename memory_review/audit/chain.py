"""The per-tenant hash chain over Transition rows: how a row is hashed, appended and verified."""

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from memory_review.tenancy.models import Tenant

from .models import AuditChain, Transition

GENESIS = "0" * 64

# The fields a row's hash covers, in a fixed order. Changing this list breaks every chain.
HASHED_FIELDS = (
    "tenant_id",
    "seq",
    "memory_id",
    "candidate_id",
    "from_status",
    "to_status",
    "action",
    "actor",
    "reason",
    "verdict_id",
    "row_version",
    "request_id",
    "prev_hash",
)


def canonical(row: Transition) -> bytes:
    """A byte string that is the same for the same row on every backend."""
    payload = {name: getattr(row, name) for name in HASHED_FIELDS}
    payload["created_at"] = row.created_at.isoformat(timespec="microseconds")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def row_hash(row: Transition) -> str:
    return hashlib.sha256(canonical(row)).hexdigest()


def append(row: Transition) -> Transition:
    """Chain and save `row`. The caller holds a transaction; the chain head is locked here."""
    head, _ = AuditChain.objects.get_or_create(tenant_id=row.tenant_id, defaults={"head_hash": GENESIS})
    head = AuditChain.objects.select_for_update().get(pk=head.pk)
    row.seq = head.seq + 1
    row.prev_hash = head.head_hash
    row.hash = row_hash(row)
    row.save(force_insert=True)
    head.seq = row.seq
    head.head_hash = row.hash
    head.save(update_fields=["seq", "head_hash"])
    return row


@dataclass(frozen=True)
class Break:
    tenant: str
    seq: int
    transition_id: int | None
    problem: str

    def __str__(self) -> str:
        row = f" (transition id {self.transition_id})" if self.transition_id else ""
        return f"tenant {self.tenant}: chain broken at #{self.seq}{row}: {self.problem}"


def verify(tenant: Tenant) -> Break | None:
    """Walk the tenant's chain up to its head; return the first break, or None when intact.

    The head is read first, so rows appended while this runs are not mistaken for a break.
    """
    head = AuditChain.objects.for_tenant(tenant).first()
    expected_prev, expected_seq = GENESIS, 1
    for row in _rows(tenant, up_to=head.seq if head else None):
        if row.seq != expected_seq:
            return Break(
                tenant.slug, expected_seq, None, f"row #{expected_seq} was removed (next row is #{row.seq})"
            )
        if row.prev_hash != expected_prev:
            return Break(tenant.slug, row.seq, row.pk, "prev_hash does not match the row before it")
        if row_hash(row) != row.hash:
            return Break(
                tenant.slug, row.seq, row.pk, "row was edited (its hash no longer matches its contents)"
            )
        expected_prev, expected_seq = row.hash, row.seq + 1
    last_seq = expected_seq - 1
    if head is not None and (head.seq != last_seq or head.head_hash != expected_prev):
        return Break(
            tenant.slug,
            head.seq,
            None,
            f"the chain ends at #{last_seq} but its head says #{head.seq}: rows were removed from the end",
        )
    if head is None and Transition.objects.for_tenant(tenant).exists():
        return Break(tenant.slug, 1, None, "the chain has rows but no head")
    return None


def _rows(tenant: Tenant, *, up_to: int | None) -> Iterator[Transition]:
    rows = Transition.objects.for_tenant(tenant)
    if up_to is not None:
        rows = rows.filter(seq__lte=up_to)
    return rows.order_by("seq").iterator(chunk_size=2000)

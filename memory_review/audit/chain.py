"""The per-tenant audit chain over Transition rows: how a row is hashed, appended and verified.
The algorithm is written down for auditors in docs/audit.md; tools/verify_export.py checks an
export with the standard library alone. Change neither without the other.

Each row's hash is HMAC-SHA256 under a key kept outside the database (audit/keys.py), over the
row's canonical form, which includes the previous row's hash and the key's id. Every row is keyed
(migration audit.0004 re-signed the rows written before keys), so an unkeyed row is a forgery.
"""

import hashlib
import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import F, OuterRef, Q, Subquery

from memory_review.assessments.models import PromotionCandidate
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant

from .keys import Keyring, keyring
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


class ChainBroken(Exception):
    """The chain cannot take another row until an operator looks (verify_audit names why)."""


def canonical(row: Transition) -> bytes:
    """A byte string that is the same for the same row on every backend: the hashed fields,
    key_id and created_at as JSON with sorted keys, no spaces, UTF-8."""
    payload = {name: getattr(row, name) for name in HASHED_FIELDS}
    payload["key_id"] = row.key_id
    payload["created_at"] = row.created_at.isoformat(timespec="microseconds")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def row_hash(row: Transition, ring: Keyring | None = None) -> str:
    if row.key_id is None:
        raise ChainBroken(f"row #{row.seq} names no key: it was written around the application")
    key = (ring or keyring()).key(row.key_id)
    if key is None:
        raise ChainBroken(f"row #{row.seq} is signed with key {row.key_id!r}, which is not in the keyring")
    return hmac.new(key, canonical(row), hashlib.sha256).hexdigest()


def append(row: Transition) -> Transition:
    """Chain and save `row`. The caller holds a transaction; the chain head is locked here."""
    # By primary key and without a row limit: Oracle refuses FOR UPDATE with FETCH FIRST.
    try:
        head = AuditChain.objects.select_for_update().get(pk=row.tenant_id)
    except AuditChain.DoesNotExist:  # the tenant's first transition
        AuditChain.objects.get_or_create(tenant_id=row.tenant_id, defaults={"head_hash": GENESIS})
        head = AuditChain.objects.select_for_update().get(pk=row.tenant_id)
    stray = Transition.objects.filter(tenant_id=row.tenant_id, seq__gt=head.seq).order_by("seq").first()
    if stray is not None:
        raise ChainBroken(
            f"the audit chain has row #{stray.seq} (transition id {stray.pk}) beyond its head (#{head.seq}), "
            "written around the application or left by a rolled-back head: run verify_audit; nothing can "
            "change until an operator resolves it"
        )
    ring = keyring()
    row.seq = head.seq + 1
    row.prev_hash = head.head_hash
    row.key_id = ring.current
    row.hash = row_hash(row, ring)
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
        if not self.seq:  # not a row of the chain: the state it should explain
            return f"tenant {self.tenant}: {self.problem}"
        row = f" (transition id {self.transition_id})" if self.transition_id else ""
        return f"tenant {self.tenant}: chain broken at #{self.seq}{row}: {self.problem}"


def verify(tenant: Tenant, *, checkpoint=None, ring: Keyring | None = None) -> Break | None:
    """The tenant's first problem, or None: walk the chain up to its head (each row's link and
    keyed hash), then look for rows beyond the head, a tail cut or a head rolled back against
    `checkpoint` (the latest one written outside the database), and statuses changed without a
    transition.

    The head is read first, so rows appended while this runs are not mistaken for a break.
    """
    ring = ring or keyring()
    head = AuditChain.objects.for_tenant(tenant).first()
    expected_prev, expected_seq = GENESIS, 1
    hashes = {}
    for row in _rows(tenant, up_to=head.seq if head else 0):
        if row.seq != expected_seq:
            return Break(
                tenant.slug, expected_seq, None, f"row #{expected_seq} was removed (next row is #{row.seq})"
            )
        if row.prev_hash != expected_prev:
            return Break(tenant.slug, row.seq, row.pk, "prev_hash does not match the row before it")
        try:
            good = hmac.compare_digest(row_hash(row, ring), row.hash)
        except ChainBroken as exc:
            return Break(tenant.slug, row.seq, row.pk, str(exc))
        if not good:
            return Break(
                tenant.slug,
                row.seq,
                row.pk,
                "row was edited or forged (its hash no longer matches its contents)",
            )
        hashes[row.seq] = row.hash
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
    return (
        _beyond_head(tenant)
        or _against_checkpoint(tenant, checkpoint, last_seq, hashes)
        or _statuses_without_transitions(tenant)
    )


def _rows(tenant: Tenant, *, up_to: int) -> Iterator[Transition]:
    return (
        Transition.objects.for_tenant(tenant).filter(seq__lte=up_to).order_by("seq").iterator(chunk_size=2000)
    )


def _beyond_head(tenant: Tenant) -> Break | None:
    """Rows past the head (read afresh, so a transition committed meanwhile is not one)."""
    head = AuditChain.objects.for_tenant(tenant).first()
    stray = (
        Transition.objects.for_tenant(tenant).filter(seq__gt=head.seq if head else 0).order_by("seq").first()
    )
    if stray is None:
        return None
    return Break(
        tenant.slug,
        stray.seq,
        stray.pk,
        f"row lies beyond the chain's head (#{head.seq if head else 0}): appended around the application, "
        "or the head was rolled back",
    )


def _against_checkpoint(tenant: Tenant, checkpoint, last_seq: int, hashes: dict[int, str]) -> Break | None:
    """A signed checkpoint kept outside the database catches what the chain alone cannot: its
    tail cut together with the head, or the head rolled back to an earlier row."""
    if checkpoint is None:
        return None
    if checkpoint.seq > last_seq:
        return Break(
            tenant.slug,
            checkpoint.seq,
            None,
            f"the checkpoint of {checkpoint.at} recorded #{checkpoint.seq}, but the chain now ends at "
            f"#{last_seq}: rows were removed or the head was rolled back",
        )
    if checkpoint.seq and hashes.get(checkpoint.seq) != checkpoint.hash:
        return Break(
            tenant.slug,
            checkpoint.seq,
            None,
            f"row #{checkpoint.seq} is not the row the checkpoint of {checkpoint.at} recorded: "
            "the chain was rewritten",
        )
    return None


def _statuses_without_transitions(tenant: Tenant) -> Break | None:
    """Replay: every memory's and candidate's status and row version are those its last
    transition produced (a memory starts active, a candidate proposed, both at version 1), so a
    status written straight into the table is caught."""
    for model, relation, initial in (
        (Memory, "memory", "active"),
        (PromotionCandidate, "candidate", "proposed"),
    ):
        latest = Transition.objects.filter(**{relation: OuterRef("pk")}).order_by("-seq")
        # Spelled out for SQL's NULLs: "last_to = status" is unknown, not false, with no transition.
        unexplained = Q(last_to__isnull=False) & (~Q(last_to=F("status")) | ~Q(last_version=F("row_version")))
        touched = Q(last_to__isnull=True) & ~Q(status=initial, row_version=1)
        odd = (
            model.objects.for_tenant(tenant)
            .annotate(
                last_to=Subquery(latest.values("to_status")[:1]),
                last_version=Subquery(latest.values("row_version")[:1]),
            )
            .filter(unexplained | touched)
            .order_by("pk")
            .values("pk", "status", "row_version", "last_to", "last_version")
            .first()
        )
        if odd is not None:
            said = (
                f"{odd['last_to']} at version {odd['last_version']}"
                if odd["last_to"]
                else f"{initial} (no transition)"
            )
            return Break(
                tenant.slug,
                0,
                None,
                f"{relation} {odd['pk']} is {odd['status']} at version {odd['row_version']}, but its audit "
                f"trail says {said}: its status was changed without a transition",
            )
    return None

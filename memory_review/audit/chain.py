"""The per-tenant audit chain over Transition rows: how a row is hashed and appended. The
algorithm is written down for auditors in docs/audit.md; tools/verify_export.py checks an export
with the standard library alone. Change neither without the other.

Each row's hash is HMAC-SHA256 under a key kept outside the database (integrity/keys.py), over the
row's canonical form, which includes the previous row's hash and the key's id. Free text (the
reason, the request id) enters the hash only through its own keyed hash, stored beside it, so an
erasure can blank the text and the row still verifies. Every row is keyed (migrations audit.0004
and audit.0006 re-signed the rows written before), so an unkeyed row is a forgery.
"""

import hashlib
import hmac

from django.db import transaction

from memory_review.integrity import seals
from memory_review.integrity.heads import (
    ChainBroken,
    canonical,
    links_inline,
    lock_head,
    refuse_beyond,
    written,
)
from memory_review.integrity.keys import Keyring, keyring

from .models import Transition

# The fields a row's hash covers. Changing this list breaks every chain.
HASHED_FIELDS = (
    "tenant_id",
    "seq",
    "memory_id",
    "candidate_id",
    "from_status",
    "to_status",
    "action",
    "actor",
    "reason_mac",
    "verdict_id",
    "row_version",
    "request_id_mac",
    "content_hash",
    "prev_hash",
)
# What a row's own keyed digest (`leaf`) covers while it waits for a position: all but the two
# the sequencer adds (audit/sequencer.py).
POSITIONED = ("seq", "prev_hash")
# What an export carries beside them: the free text, and the erasure that blanked it if one did.
TEXT_FIELDS = ("reason", "request_id")
ERASED = "[erased]"
SEAL_KIND = "transition"  # the seals' ledger records each blanking of a transition's text


def text_mac(text: str | None, key: bytes) -> str | None:
    """The keyed hash a row's free text is sealed through (None for no text)."""
    if text is None:
        return None
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def canonical_row(row: Transition) -> bytes:
    """A byte string that is the same for the same row on every backend: the hashed fields,
    key_id and created_at as JSON with sorted keys, no spaces, UTF-8."""
    payload = {name: getattr(row, name) for name in HASHED_FIELDS}
    payload["key_id"] = row.key_id
    payload["created_at"] = row.created_at.isoformat(timespec="microseconds")
    return canonical(payload)


def canonical_leaf(row: Transition) -> bytes:
    """The row's canonical form without its position: what it is, whenever it is linked."""
    payload = {name: getattr(row, name) for name in HASHED_FIELDS if name not in POSITIONED}
    payload["key_id"] = row.key_id
    payload["created_at"] = row.created_at.isoformat(timespec="microseconds")
    return canonical(payload)


def _named(row: Transition) -> str:
    return f"row #{row.seq}" if row.seq is not None else f"unsequenced transition id {row.pk}"


def signing_key(row: Transition, ring: Keyring | None = None) -> bytes:
    if row.key_id is None:
        raise ChainBroken(f"{_named(row)} names no key: it was written around the application")
    key = (ring or keyring()).key(row.key_id)
    if key is None:
        raise ChainBroken(f"{_named(row)} is signed with key {row.key_id!r}, which is not in the keyring")
    return key


def row_hash(row: Transition, ring: Keyring | None = None) -> str:
    return hmac.new(signing_key(row, ring), canonical_row(row), hashlib.sha256).hexdigest()


def leaf_mac(row: Transition, ring: Keyring | None = None) -> str:
    return hmac.new(signing_key(row, ring), canonical_leaf(row), hashlib.sha256).hexdigest()


def text_problem(row: Transition, key: bytes) -> str | None:
    """Whether the row's free text is what its keyed hashes sealed (or was blanked by an
    erasure, which the seals' ledger must then record: audit/checks.py)."""
    if row.erased_by is not None:
        if row.reason != ERASED or row.request_id is not None:
            return f"row says erasure {row.erased_by} blanked its text, but the text is there"
        return None
    if text_mac(row.reason, key) != row.reason_mac:
        return "its reason was edited (it no longer matches its keyed hash)"
    if text_mac(row.request_id, key) != row.request_id_mac:
        return "its request id was edited (it no longer matches its keyed hash)"
    return None


def append(row: Transition) -> Transition:
    """Save `row` with its own keyed digest. Deferred sequencing: with no position, locking no
    tenant-wide row; the sequencer links it once it commits. Inline: linked now, under the
    tenant's head, held until the caller's transaction commits. The caller holds a transaction."""
    ring = keyring()
    key = ring.key(ring.current)
    row.seq = row.prev_hash = row.hash = None
    row.key_id = ring.current
    row.reason_mac = text_mac(row.reason, key)
    row.request_id_mac = text_mac(row.request_id, key)
    row.leaf = leaf_mac(row, ring)
    if not links_inline():
        row.save(force_insert=True)
        written(row.tenant_id)
        return row
    head = lock_head(row.tenant_id)
    refuse_beyond(Transition, row.tenant_id, head.seq, what="the audit chain has row", named="transition id")
    row.seq, row.prev_hash = head.seq + 1, head.head_hash
    row.hash = row_hash(row, ring)
    row.save(force_insert=True)
    head.seq, head.head_hash = row.seq, row.hash
    head.save(update_fields=["seq", "head_hash"])
    return row


def erased_digest(transition_id: int, tenant_id: int, erasure_id: int, key: bytes) -> str:
    """What the seals' ledger records when an erasure blanks a transition's text."""
    payload = {
        "kind": SEAL_KIND,
        "id": transition_id,
        "tenant_id": tenant_id,
        "fields": {"erased_by": erasure_id},
    }
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def erase_text(transitions, *, erasure_id: int) -> int:
    """Blank the reason and request id of these transitions for an erasure, and seal each
    blanking: the rows still verify through their keyed hashes (docs/audit.md, "Erasure")."""
    ring = keyring()
    key = ring.key(ring.current)
    with transaction.atomic():
        found = list(transitions.filter(erased_by__isnull=True).order_by("pk").values_list("pk", "tenant_id"))
        Transition.objects.filter(pk__in=[pk for pk, _ in found]).update(
            reason=ERASED, request_id=None, erased_by=erasure_id
        )
        by_tenant: dict[int, list] = {}
        for pk, tenant_id in found:
            entry = (SEAL_KIND, pk, seals.ERASE, erased_digest(pk, tenant_id, erasure_id, key))
            by_tenant.setdefault(tenant_id, []).append(entry)
        for tenant_id, entries in by_tenant.items():
            seals.append(tenant_id, entries, ring=ring, erasure=erasure_id)
    return len(found)

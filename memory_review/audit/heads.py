"""What both of a tenant's chains share: the canonical form, the genesis link and the head lock.

Every append, to the transitions or to the seals, first locks the tenant's one AuditChain row, so
appends are serialised in a single order and two writers never interleave a chain (or deadlock
taking the two heads in opposite orders).
"""

import json

from django.apps import apps

GENESIS = "0" * 64


class ChainBroken(Exception):
    """A chain cannot take another row until an operator looks (verify_audit names why)."""


def canonical(payload: dict) -> bytes:
    """JSON with sorted keys, no spaces, non-ASCII as itself, UTF-8 (docs/audit.md)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def lock_head(tenant_id: int):
    """The tenant's AuditChain row, locked for the caller's transaction (made on first use)."""
    chain_model = apps.get_model("audit", "AuditChain")
    # By primary key and without a row limit: Oracle refuses FOR UPDATE with FETCH FIRST.
    try:
        return chain_model.objects.select_for_update().get(pk=tenant_id)
    except chain_model.DoesNotExist:  # the tenant's first write
        chain_model.objects.get_or_create(tenant_id=tenant_id, defaults={"head_hash": GENESIS})
        return chain_model.objects.select_for_update().get(pk=tenant_id)

"""What both of a tenant's chains share: the canonical form, the genesis link, the head lock and
the writers' side of sequencing.

With AUDIT_SEQUENCER=deferred, writers append transitions, seals and feed changes with no position
and a keyed digest of their own (`leaf`), and lock nothing tenant-wide: `written()` then asks for
a sequencer run once their transaction commits, and the sequencer (audit/sequencer.py) gives the
committed rows their positions and links them, in batches. With `inline` (a process with no
worker beside it: docs/audit.md), each writer links its own rows as it writes them, holding the
tenant's AuditChain row until it commits.
"""

import json
import logging
from contextvars import ContextVar
from functools import partial

from celery import current_app
from django.apps import apps
from django.conf import settings
from django.core.cache import cache

from .commits import once_on_commit

GENESIS = "0" * 64
INLINE, DEFERRED = "inline", "deferred"
SEQUENCE_TASK = "memory_review.audit.tasks.sequence"
logger = logging.getLogger(__name__)


class ChainBroken(Exception):
    """A chain cannot take another row until an operator looks (verify_audit names why)."""


# One encoder for every digest: json.dumps with options builds a new one each call, and a
# hundred-vote event computes some 400 canonical forms.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(payload: dict) -> bytes:
    """JSON with sorted keys, no spaces, non-ASCII as itself, UTF-8 (docs/audit.md)."""
    return _CANONICAL.encode(payload).encode()


def lock_head(tenant_id: int):
    """The tenant's AuditChain row, locked for the caller's transaction (made on first use): by
    inline writers, and by the sequencer."""
    chain_model = apps.get_model("audit", "AuditChain")
    # By primary key and without a row limit: Oracle refuses FOR UPDATE with FETCH FIRST.
    try:
        return chain_model.objects.select_for_update().get(pk=tenant_id)
    except chain_model.DoesNotExist:  # the tenant's first write
        chain_model.objects.get_or_create(tenant_id=tenant_id, defaults={"head_hash": GENESIS})
        return chain_model.objects.select_for_update().get(pk=tenant_id)


def refuse_beyond(model, tenant_id: int, at: int, *, what: str, named: str, using: str = "default") -> None:
    """A row positioned past the head was written around the application (or left by a head
    rolled back): the next position is taken, so nothing is linked until an operator looks."""
    stray = (
        model.objects.using(using)
        .filter(tenant_id=tenant_id, seq__gt=at)
        .order_by("seq")
        .values_list("seq", "pk")
    ).first()
    if stray is not None:
        raise ChainBroken(
            f"{what} #{stray[0]} ({named} {stray[1]}) beyond its head (#{at}), written around the "
            "application or left by a rolled-back head: run verify_audit; nothing can change until an "
            "operator resolves it"
        )


# Set while the sequencer runs: the seals it writes for the feed positions it gives are its own
# to link, before it commits.
sequencing: ContextVar[bool] = ContextVar("audit_sequencing", default=False)


def links_inline() -> bool:
    """Whether writers link their own rows as they write them, under the tenant's head
    (AUDIT_SEQUENCER=inline), rather than leave them to the sequencer. The sequencer's own writes
    (the seals of the feed positions it gives) it links itself, before it commits."""
    return settings.AUDIT_SEQUENCER == INLINE and not sequencing.get()


def written(tenant_id: int, *, using: str = "default") -> None:
    """A writer has added rows that wait for a position: one sequencer run is asked for when its
    transaction commits, however many rows it wrote; a rollback drops the request with the rows."""
    if not sequencing.get():
        once_on_commit(("sequence", tenant_id), partial(nudge, tenant_id), using=using)


def flag(tenant_id: int) -> str:
    return f"audit:sequence:{tenant_id}"


def nudge(tenant_id: int) -> None:
    """Queue a sequencer run for the tenant, AUDIT_SEQUENCE_DELAY_MS from now, unless one is
    queued: the flag says one is, and is cleared once that run holds the head, before it reads, so
    rows committed later queue the next. So a tenant's runs come about one a delay, however many
    commits ask (beat's sweep may add one in AUDIT_SEQUENCE_SWEEP_SECONDS). A lost nudge (the cache
    or the broker down) waits for the sweep."""
    try:
        if cache.add(flag(tenant_id), 1, timeout=settings.AUDIT_SEQUENCE_FLAG_SECONDS):
            _queue(tenant_id)
    except Exception:  # the rows are committed and sealed by their own digests: never fail the write
        logger.warning("audit: no sequencer run could be queued; beat's sweep will link them", exc_info=True)


def nudge_again(tenant_id: int, *, held: int = 1) -> None:
    """Queue the flag's run again: a run that found another holding the head comes back after it,
    rather than wait for it. The flag is set anew (its TTL from now), so while the head is held
    writers' nudges queue nothing more and the tenant has one run coming, however long the holder
    takes. It comes `backoff(held)` later (`held` runs in a row have found the head held): a holder
    stuck for minutes (a session idle in its transaction) costs a task every few seconds, not five
    a second."""
    try:
        cache.set(flag(tenant_id), 1, timeout=settings.AUDIT_SEQUENCE_FLAG_SECONDS)
        _queue(tenant_id, held=held)
    except Exception:
        logger.warning("audit: no sequencer run could be queued again; beat will link them", exc_info=True)


def clear_flag(tenant_id: int) -> None:
    """The run the flag announced has the head: a commit from now on queues the next."""
    try:
        cache.delete(flag(tenant_id))
    except Exception:  # the next nudge may wait for the flag to lapse, or the sweep: nothing is lost
        logger.warning("audit: the cache did not answer", exc_info=True)


def backoff(held: int) -> float:
    """Seconds until the next run once `held` runs in a row found the head held: the delay for a
    commit's nudge (0) and the first two (a run that holds the head briefly, another run say, is
    waited out at the usual pace), then doubling, to at most beat's sweep period or half the
    flag's life (so the flag outlives the wait), whichever is less, and never below the delay."""
    delay = settings.AUDIT_SEQUENCE_DELAY_MS / 1000
    most = max(delay, min(settings.AUDIT_SEQUENCE_SWEEP_SECONDS, settings.AUDIT_SEQUENCE_FLAG_SECONDS / 2))
    return min(delay * 2 ** min(max(held - 2, 0), 16), most)


def _queue(tenant_id: int, *, held: int = 0) -> None:
    """A run AUDIT_SEQUENCE_DELAY_MS from now (later after runs that found the head held:
    `backoff`), a moment late so that one run links what many commits wrote (as a group commit
    does): a run costs a task and a dozen statements however few rows it links. A broker that
    refuses it takes the flag with it, so the next commit asks again rather than find a flag that
    announces nothing."""
    try:
        args = (tenant_id, held) if held else (tenant_id,)
        current_app.signature(SEQUENCE_TASK, args=args).apply_async(countdown=backoff(held))
    except Exception:
        clear_flag(tenant_id)
        raise

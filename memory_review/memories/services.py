"""Writes to memories and their evidence. Status changes go through lifecycle.transition()."""

from collections.abc import Sequence
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_review.lifecycle import Actor, LifecycleError, subject_taken, transition
from memory_review.tenancy.models import Tenant

from . import changes, trust
from .models import Memory, MemoryLink, SourceEvent, content_hash
from .tallies import tally_add

ERASED = "[erased]"


def clean_scope(value: str | None) -> str | None:
    # '' is NULL on Oracle: never let it mean something different from "broader".
    value = (value or "").strip()
    return value or None


def require_kind(kind: str) -> None:
    if kind not in Memory.Kind.values:
        raise ValueError(f"unknown kind {kind!r}; expected one of {Memory.Kind.values}")


def event_record(*, tenant: Tenant, **fields) -> SourceEvent:
    """One event: its source and text, and its scope, run and time if known (`_event`)."""
    event = _event(tenant, **fields)
    event.save(force_insert=True)
    return event


def events_record(*, tenant: Tenant, events: Sequence[dict]) -> list[SourceEvent]:
    """Record events, each given as `event_record`'s keywords, in one INSERT (SQLite: one for
    every 999 values) sealed by one ledger statement: the batch intake's, where ten events a POST
    were ten INSERTs and ten seals."""
    return SourceEvent.objects.bulk_create([_event(tenant, **fields) for fields in events])


def _event(
    tenant: Tenant,
    *,
    source: str,
    text: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    occurred_at: datetime | None = None,
) -> SourceEvent:
    if not text or not text.strip():
        raise ValueError("an event needs text")
    if source not in SourceEvent.Source.values:
        raise ValueError(f"unknown source {source!r}; expected one of {SourceEvent.Source.values}")
    return SourceEvent(
        tenant=tenant,
        source=source,
        text=text,
        text_hash=content_hash(text),
        user_id=clean_scope(user_id),
        agent_id=clean_scope(agent_id),
        thread_id=clean_scope(thread_id),
        run_id=clean_scope(run_id),
        occurred_at=occurred_at or timezone.now(),
    )


def _trust(event: SourceEvent, written_by: str, supersedes: Memory | None) -> str:
    """Its class (memories/trust.py): the least trusted of its event's and its predecessor's, but
    a person's own words are a person's."""
    own = trust.of_provenance(event.source, written_by)
    if supersedes is None or own == trust.PERSON and written_by.startswith("user:"):
        return own
    return trust.lowest(own, supersedes.trust)


@transaction.atomic
def memory_write(
    *,
    event: SourceEvent,
    kind: str,
    subject: str,
    content: str,
    written_by: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    thread_id: str | None = None,
    confidence: float = 1.0,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    supersedes: Memory | None = None,
    seen_version: int | None = None,
    actor: Actor | None = None,
    reason: str | None = None,
    verdict=None,
    link_origin: str = MemoryLink.Origin.EXPLICIT,
    request_id: str | None = None,
) -> Memory:
    """Store a memory verbatim, tied to the event it came from.

    With `supersedes`, the old memory is moved to `superseded` by `actor` first (one live memory
    per subject and scope), and the new one enters as its next version, linked `supersedes`;
    `seen_version` is the old memory's row version the actor decided on (default: as passed);
    `verdict` is the vote that caused it, when a policy did; `link_origin` says who made the
    `supersedes` link (the agent, an assessment, or a reviewer's rewrite).
    """
    if event.erased_at is not None:
        raise LifecycleError(
            f"event {event.pk} was erased (right to forget): no memory can be written from it"
        )
    if not content or not content.strip():
        raise ValueError("a memory needs content")
    require_kind(kind)
    if not 0 <= confidence <= 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    version = 1
    if supersedes is not None:
        if actor is None:
            raise ValueError("superseding a memory needs an actor")
        transition(
            obj=supersedes,
            action="supersede",
            actor=actor,
            reason=reason or f"superseded by event {event.pk}",
            seen_version=supersedes.row_version if seen_version is None else seen_version,
            verdict=verdict,
            request_id=request_id,
        )
        version = supersedes.version + 1
    memory = Memory(
        tenant_id=event.tenant_id,
        source_event=event,
        channel=event.source,
        kind=kind,
        subject=subject.strip(),
        content=content,
        content_hash=content_hash(content),
        written_by=written_by,
        user_id=clean_scope(user_id),
        agent_id=clean_scope(agent_id),
        thread_id=clean_scope(thread_id),
        confidence=confidence,
        version=version,
        valid_from=valid_from or event.occurred_at,
        valid_until=valid_until,
        trust=_trust(event, written_by, supersedes),
    )
    holder = Memory.objects.holding_subject(memory).first()
    if holder is not None:
        raise LifecycleError(
            f"memory {holder.pk} already holds subject {memory.subject!r} in this scope "
            f"({memory.scope_label}); supersede it instead of writing a second live memory"
        )
    try:
        with transaction.atomic():
            memory.save(force_insert=True)
    except IntegrityError as exc:  # a concurrent write took the subject between check and insert
        raise subject_taken(memory, "write this memory") from exc
    tally_add(tenant_id=memory.tenant_id, status=memory.status, delta=1)
    changes.record(memory, changes.Kind.REWRITTEN if supersedes is not None else changes.Kind.CREATED)
    if supersedes is not None:
        Memory.objects.filter(pk=supersedes.pk).update(superseded_by=memory)
        supersedes.superseded_by = memory
        link_create(src=memory, dst=supersedes, kind=MemoryLink.Kind.SUPERSEDES, origin=link_origin)
    return memory


def link_create(*, src: Memory, dst: Memory, kind: str, origin: str) -> MemoryLink:
    if src.tenant_id != dst.tenant_id:
        raise ValueError("memories of different tenants cannot be linked")
    link, _ = MemoryLink.objects.get_or_create(
        tenant_id=src.tenant_id, src=src, dst=dst, kind=kind, defaults={"origin": origin}
    )
    return link


@transaction.atomic
def memory_forget(
    *, memory: Memory, actor: Actor, reason: str, seen_version: int, request_id: str | None = None
) -> Memory:
    """Erase the content; keep the row, its links and its audit trail. The content goes first,
    so the transition commits to what the memory holds after it (nothing, if the move is refused:
    one transaction)."""
    action = "erase" if actor.kind == "system" else "forget"
    now = timezone.now()
    erased = {"content": ERASED, "content_hash": content_hash(ERASED), "deleted_at": now}
    Memory.objects.filter(pk=memory.pk).update(**erased)
    transition(
        obj=memory,
        action=action,
        actor=actor,
        reason=reason,
        seen_version=seen_version,
        request_id=request_id,
    )
    memory.content, memory.content_hash, memory.deleted_at = ERASED, content_hash(ERASED), now
    return memory

"""The change feed's writer: every change to what is in force is recorded here, in the
transaction that makes it (lifecycle.transition() for moves, memory_write for new memories)."""

from django.db.models import Max
from django.dispatch import Signal
from django.utils import timezone

from memory_review.integrity.heads import links_inline, lock_head, written

from .models import Memory, MemoryChange

Kind = MemoryChange.Kind
# A move's kind in the feed; every other move is `moved` (from one status to another).
MOVE_KINDS = {"expire": Kind.EXPIRED, "forget": Kind.FORGOTTEN, "erase": Kind.ERASED}
# Sent with each change written, inside its transaction (the webhooks' outbox listens: agents/).
change_recorded = Signal()


def record(memory: Memory, kind: str, *, transition=None) -> MemoryChange:
    """Append the change. Deferred sequencing: without a feed position, which the tenant's
    sequencer gives once it commits (audit/sequencer.py), so no writer waits for another's
    commit. Inline: at the tenant's next position, under the tenant's chain head, held until the
    caller commits. Either way positions follow commit order and none is skipped."""
    inline = links_inline()
    if inline:
        lock_head(memory.tenant_id)
        last = MemoryChange.objects.filter(tenant_id=memory.tenant_id).aggregate(last=Max("seq"))["last"]
    change = MemoryChange.objects.create(
        tenant_id=memory.tenant_id,
        seq=(last or 0) + 1 if inline else None,
        memory=memory,
        kind=kind,
        transition=transition,
        created_at=transition.created_at if transition is not None else timezone.now(),
    )
    if not inline:
        written(memory.tenant_id)
    change_recorded.send(sender=MemoryChange, change=change)
    return change


def record_move(memory: Memory, transition) -> MemoryChange:
    return record(memory, MOVE_KINDS.get(transition.action, Kind.MOVED), transition=transition)

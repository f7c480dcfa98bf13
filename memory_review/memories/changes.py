"""The change feed's writer: every change to what is in force is recorded here, in the
transaction that makes it (lifecycle.transition() for moves, memory_write for new memories)."""

from django.db.models import Max
from django.dispatch import Signal
from django.utils import timezone

from memory_review.audit.heads import lock_head

from .models import Memory, MemoryChange

Kind = MemoryChange.Kind
# A move's kind in the feed; every other move is `moved` (from one status to another).
MOVE_KINDS = {"expire": Kind.EXPIRED, "forget": Kind.FORGOTTEN, "erase": Kind.ERASED}
# Sent with each change written, inside its transaction (the webhooks' outbox listens: agents/).
change_recorded = Signal()


def record(memory: Memory, kind: str, *, transition=None) -> MemoryChange:
    """Append the change at the tenant's next feed position. The caller's transaction holds the
    tenant's chain lock until it commits (taken again here, in case it does not yet), so the
    positions follow commit order and none is skipped."""
    lock_head(memory.tenant_id)
    last = MemoryChange.objects.filter(tenant_id=memory.tenant_id).aggregate(last=Max("seq"))["last"]
    change = MemoryChange.objects.create(
        tenant_id=memory.tenant_id,
        seq=(last or 0) + 1,
        memory=memory,
        kind=kind,
        transition=transition,
        created_at=transition.created_at if transition is not None else timezone.now(),
    )
    change_recorded.send(sender=MemoryChange, change=change)
    return change


def record_move(memory: Memory, transition) -> MemoryChange:
    return record(memory, MOVE_KINDS.get(transition.action, Kind.MOVED), transition=transition)

"""The change feed's writer: every change to what is in force is recorded here, in the
transaction that makes it (lifecycle.transition() for moves, memory_write for new memories)."""

from django.dispatch import Signal
from django.utils import timezone

from memory_review.audit.heads import written

from .models import Memory, MemoryChange

Kind = MemoryChange.Kind
# A move's kind in the feed; every other move is `moved` (from one status to another).
MOVE_KINDS = {"expire": Kind.EXPIRED, "forget": Kind.FORGOTTEN, "erase": Kind.ERASED}
# Sent with each change written, inside its transaction (the webhooks' outbox listens: agents/).
change_recorded = Signal()


def record(memory: Memory, kind: str, *, transition=None) -> MemoryChange:
    """Append the change without a feed position: the tenant's sequencer gives it the next one
    once it commits (audit/sequencer.py), so positions follow commit order and none is skipped,
    and no writer waits for another's commit."""
    change = MemoryChange.objects.create(
        tenant_id=memory.tenant_id,
        seq=None,
        memory=memory,
        kind=kind,
        transition=transition,
        created_at=transition.created_at if transition is not None else timezone.now(),
    )
    if written(memory.tenant_id):  # given its position already (inline sequencing)
        change.seq = MemoryChange.objects.filter(pk=change.pk).values_list("seq", flat=True).get()
    change_recorded.send(sender=MemoryChange, change=change)
    return change


def record_move(memory: Memory, transition) -> MemoryChange:
    return record(memory, MOVE_KINDS.get(transition.action, Kind.MOVED), transition=transition)

"""One memory's lineage, for the auditor: the event it came from, what else that event wrote,
the memory's versions (what it superseded and what superseded it) and every move with the vote
behind it."""

from dataclasses import dataclass, field

from django.db.models import Q

from memory_review.assessments.models import Verdict
from memory_review.audit.models import Transition
from memory_review.memories.models import Memory, MemoryLink, SourceEvent

from .audit_trail import name_actors

SAME_EVENT_SHOWN = 20
COUNTED_UP_TO = 1000


@dataclass
class Lineage:
    """A memory from its evidence on: the event, what was written from it, the memory's versions
    (what it superseded and what superseded it), and every move with the vote behind it."""

    memory: Memory
    event: SourceEvent
    from_same_event: list[Memory] = field(default_factory=list)  # the first SAME_EVENT_SHOWN
    from_same_event_count: int = 0  # one import's event may have written thousands: counted up to
    more_than: bool = False  # COUNTED_UP_TO, and more than that when this is set
    versions: list[Memory] = field(default_factory=list)
    moves: list[Transition] = field(default_factory=list)
    verdicts: int = 0

    @property
    def more_from_same_event(self) -> int:
        return self.from_same_event_count - len(self.from_same_event)


def lineage(memory: Memory) -> Lineage:
    tenant_memories = Memory.objects.for_tenant(memory.tenant_id)
    chain_ids, frontier = {memory.pk}, {memory.pk}
    while frontier:  # the supersedes chain, both ways: bounded by the memory's own versions
        links = MemoryLink.objects.for_tenant(memory.tenant_id).filter(
            Q(src_id__in=frontier) | Q(dst_id__in=frontier), kind=MemoryLink.Kind.SUPERSEDES
        )
        found = {pk for link in links for pk in (link.src_id, link.dst_id)} - chain_ids
        chain_ids |= found
        frontier = found
    versions = list(
        tenant_memories.filter(pk__in=chain_ids).select_related("source_event").order_by("version", "pk")
    )
    moves = list(
        Transition.objects.for_tenant(memory.tenant_id)
        .filter(memory_id__in=chain_ids)
        .select_related("verdict", "verdict__event", "memory")
        .order_by("seq")
    )
    name_actors(moves, memory.tenant)
    siblings = tenant_memories.filter(source_event=memory.source_event).exclude(pk=memory.pk)
    count, more = siblings.count_up_to(COUNTED_UP_TO)
    return Lineage(
        memory=memory,
        event=memory.source_event,
        from_same_event=list(siblings.order_by("pk")[:SAME_EVENT_SHOWN]),
        from_same_event_count=count,
        more_than=more,
        versions=versions,
        moves=moves,
        verdicts=Verdict.objects.for_tenant(memory.tenant_id).filter(memory_id__in=chain_ids).count(),
    )

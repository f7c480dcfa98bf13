"""One memory's lineage, for the auditor: the event it came from, what else that event wrote,
the memory's versions (what it superseded and what superseded it) and its moves with the vote
behind each. Every part is bounded by what the page shows: at 200,000 memories a tenant a chain
of 200 versions took 212 queries (one a version) and a memory moved 1,004 times rendered every
move (238-312 ms); now the chain is one query and the moves a page."""

from dataclasses import dataclass, field

from django.db import connection

from memory_review.assessments.models import Verdict
from memory_review.audit.models import Transition
from memory_review.memories.models import Memory, MemoryLink, SourceEvent

from .audit_trail import name_actors
from .paging import keyset_page

SAME_EVENT_SHOWN = 20
COUNTED_UP_TO = 1000
MOVES_PAGE = 20
MOVES_COUNTED_UP_TO = 10_000
VERSIONS_AROUND = 5  # versions shown either side of this one; the chain's two ends are linked too
CHAIN_READ = 1000  # links followed either way; a chain longer than that is said as "more than"


@dataclass
class Chain:
    """A memory's versions by their distance from it: negative older, positive newer."""

    distance: dict[int, int]
    more_older: bool = False  # past CHAIN_READ older versions, there are more
    more_newer: bool = False

    @property
    def ids(self) -> list[int]:
        return list(self.distance)

    def around(self, reach: int) -> list[int]:
        """The versions within `reach` of this one, and the chain's two ends."""
        ends = {min(self.distance, key=self.distance.get), max(self.distance, key=self.distance.get)}
        return [pk for pk, d in self.distance.items() if abs(d) <= reach or pk in ends]


# Two walks from the memory: along `supersedes` to what it replaced (older), and backwards to
# what replaced it (newer), each up to a depth. UNION ALL with the depth as a guard: a cycle a
# bad write made ends at the depth rather than running on; the lowest depth of a memory wins.
_WALKS = """
    WITH {recursive}older (mid, hops) AS (
        SELECT id, 0 FROM {memories} WHERE id = %s
        UNION ALL
        SELECT link.dst_id, older.hops + 1 FROM {links} link
        JOIN older ON link.src_id = older.mid
        WHERE link.tenant_id = %s AND link.kind = %s AND older.hops < %s
    ), newer (mid, hops) AS (
        SELECT id, 0 FROM {memories} WHERE id = %s
        UNION ALL
        SELECT link.src_id, newer.hops + 1 FROM {links} link
        JOIN newer ON link.dst_id = newer.mid
        WHERE link.tenant_id = %s AND link.kind = %s AND newer.hops < %s
    )
    SELECT mid, 0 - MIN(hops) FROM older WHERE hops > 0 GROUP BY mid
    UNION ALL
    SELECT mid, MIN(hops) FROM newer GROUP BY mid
"""


def chain_of(memory: Memory, *, most: int | None = None) -> Chain:
    """This memory's versions, up to `most` links either way, in one query: a recursive CTE
    over its `supersedes` links (indexed by (src, dst, kind) and by dst).

    PostgreSQL and SQLite spell it WITH RECURSIVE. Oracle has recursive subquery factoring with
    the column list and no RECURSIVE keyword; the anchor reads the memory's own row (so its id
    has the column's type on every database, and Oracle needs no FROM dual). The Oracle text is
    written to its rules but has never run: no Oracle server runs where this was tested."""
    sql = _WALKS.format(
        recursive="" if connection.vendor == "oracle" else "RECURSIVE ",
        memories=connection.ops.quote_name(Memory._meta.db_table),
        links=connection.ops.quote_name(MemoryLink._meta.db_table),
    )
    most = CHAIN_READ if most is None else most
    kind = MemoryLink.Kind.SUPERSEDES.value
    walk = [memory.pk, memory.tenant_id, kind, most + 1]
    with connection.cursor() as cursor:
        cursor.execute(sql, walk + walk)
        rows = cursor.fetchall()
    distance = {memory.pk: 0}
    for pk, d in rows:
        if pk != memory.pk and abs(d) <= most:
            distance.setdefault(pk, d)
    return Chain(
        distance,
        more_older=any(d < -most for _, d in rows),
        more_newer=any(d > most for _, d in rows),
    )


@dataclass
class Lineage:
    """A memory from its evidence on: the event, what was written from it, the memory's versions
    (the nearest ones and the chain's ends), and a page of the chain's moves with the vote
    behind each."""

    memory: Memory
    event: SourceEvent
    from_same_event: list[Memory] = field(default_factory=list)  # the first SAME_EVENT_SHOWN
    from_same_event_count: int = 0  # one import's event may have written thousands: counted up to
    more_than: bool = False  # COUNTED_UP_TO, and more than that when this is set
    versions: list[Memory] = field(default_factory=list)  # oldest first
    chain: Chain | None = None
    moves: list[Transition] = field(default_factory=list)  # a page, oldest first
    moves_next: str | None = None  # the cursor of the next (later) page
    moves_prev: str | None = None  # set past the first page
    moves_count: int = 0  # counted up to MOVES_COUNTED_UP_TO
    moves_more_than: bool = False
    verdicts: int = 0  # counted up to COUNTED_UP_TO
    verdicts_more_than: bool = False

    @property
    def more_from_same_event(self) -> int:
        return self.from_same_event_count - len(self.from_same_event)

    @property
    def versions_in_all(self) -> int:
        return len(self.chain.distance) if self.chain else len(self.versions)

    @property
    def versions_not_shown(self) -> int:
        return self.versions_in_all - len(self.versions)

    @property
    def chain_more_than(self) -> bool:
        return bool(self.chain and (self.chain.more_older or self.chain.more_newer))


def lineage(memory: Memory, *, after: str | None = None, before: str | None = None) -> Lineage:
    """The lineage page's reads: the chain (one query), the versions shown (one), a page of the
    chain's moves oldest first from a cursor (found on the trail alone, then read with their
    votes: two; and one to count them past a page), their actors' names, the votes counted, and
    the event's other memories (two)."""
    tenant_memories = Memory.objects.for_tenant(memory.tenant_id)
    chain = chain_of(memory)
    versions = sorted(
        tenant_memories.filter(pk__in=chain.around(VERSIONS_AROUND)).select_related("source_event"),
        key=lambda version: chain.distance[version.pk],
    )
    for older, version in zip(versions, versions[1:], strict=False):
        version.hidden_before = chain.distance[version.pk] - chain.distance[older.pk] - 1
    # The chain's ids are the tenant's own (its links read for the tenant, from a memory read
    # for it), so its moves are too. Not filtered by tenant again: given `tenant_id = 2 ... ORDER
    # BY seq`, PostgreSQL walked the tenant's whole trail on (tenant, seq) for the 21 moves of a
    # memory moved lately, 311,716 rows thrown away (480 ms); without it, the chain's own moves
    # are read on the memory_id index and the page sorted from them (1,016 moves: 2 ms; read
    # with their joins before the sort, 9 ms).
    moves = Transition.objects.filter(memory_id__in=chain.ids)
    shown = Transition.objects.select_related("verdict", "verdict__event", "memory")
    page = keyset_page(
        moves.filter(seq__isnull=False), ("seq",), size=MOVES_PAGE, after=after, before=before, shown=shown,
    )  # fmt: skip
    # A move still waiting for its position (until the sequencer links it) is the newest: it
    # follows the last page's linked moves.
    rows = page.rows
    if page.next_cursor is None:
        rows = [*rows, *shown.filter(memory_id__in=chain.ids, seq__isnull=True).order_by("pk")]
    name_actors(rows, memory.tenant)
    moves_count, moves_more = (
        (len(rows), False) if not page.has_other_pages else moves.count_up_to(MOVES_COUNTED_UP_TO)
    )
    verdicts, verdicts_more = (
        Verdict.objects.for_tenant(memory.tenant_id)
        .filter(memory_id__in=chain.ids)
        .count_up_to(COUNTED_UP_TO)
    )
    # On the (source_event, created_at, id) index, the one index that serves this order: ordered
    # by id, PostgreSQL walked the primary key past every row of the first tenant to reach the
    # second's (200,163 of them, 40 ms, where the first took 2.4 ms).
    siblings = tenant_memories.filter(source_event=memory.source_event).exclude(pk=memory.pk)
    count, more = siblings.count_up_to(COUNTED_UP_TO)
    return Lineage(
        memory=memory,
        event=memory.source_event,
        from_same_event=list(siblings.order_by("created_at", "pk")[:SAME_EVENT_SHOWN]),
        from_same_event_count=count,
        more_than=more,
        versions=versions,
        chain=chain,
        moves=rows,
        moves_next=page.next_cursor,
        moves_prev=page.prev_cursor,
        moves_count=moves_count,
        moves_more_than=moves_more,
        verdicts=verdicts,
        verdicts_more_than=verdicts_more,
    )

"""Reads for a memory's page: its status history, its verdicts, its neighbourhood of linked
memories, and which version of its subject held at a given time."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import OuterRef, Q, Subquery

from memory_review.assessments.models import PolicyVersion, Verdict
from memory_review.assessments.policy import BEARING, Thresholds
from memory_review.audit.models import MOVES_NEWEST_FIRST, Transition
from memory_review.memories.models import LIVE_STATUSES, Memory, MemoryLink, MemoryStatus, exact_scope
from memory_review.tenancy.names import actor_names

from . import words
from .paging import Page, keyset_page

VERDICT_PAGE = 20
GRAPH_LIMIT = 60  # nodes drawn; the list beside the graph has them all


@dataclass(frozen=True)
class History:
    """A page of a memory's moves, newest first, and how many moves it has in all."""

    rows: list[Transition]
    next_cursor: str | None  # the older moves
    prev_cursor: str | None  # set past the first page: back to the newest
    count: int  # counted up to HISTORY_COUNTED_UP_TO
    more_than: bool  # and more than that


HISTORY_PAGE = 20
# A memory moved 1,004 times rendered every move (1,001 rows, a 589 KB page, 165-243 ms of
# Python for 15-19 ms of SQL at 200,000 memories a tenant); now a page of them, and a count that
# stops where counting would cost more than the page.
HISTORY_COUNTED_UP_TO = 10_000


def status_history(memory: Memory, *, after: str | None = None) -> History:
    """A page of this memory's moves, newest first (the one after the cursor `after`, the
    older ones), each with `actor_name`; and how many there are."""
    moves = (
        Transition.objects.filter(memory=memory)
        .select_related("verdict")
        .only(
            "seq",
            "from_status",
            "to_status",
            "action",
            "actor",
            "reason",
            "row_version",
            "created_at",
            "memory_id",
            "verdict__id",
            "verdict__assessment_id",
            "verdict__disposition",
        )
    )
    # Pages are cut on the linked moves' positions; a move still waiting for its position (the
    # moment until the sequencer links it) is the newest, shown above the first page's.
    found = keyset_page(moves.filter(seq__isnull=False), ("-seq",), size=HISTORY_PAGE, after=after)
    rows = found.rows if after else [*moves.filter(seq__isnull=True).order_by("-pk"), *found.rows]
    names = actor_names(move.actor for move in rows)
    for move in rows:
        move.actor_name = names[move.actor]
    words.in_words(rows, memory.tenant)
    count, more = (
        (len(rows), False)
        if found.next_cursor is None and after is None
        else Transition.objects.filter(memory=memory).count_up_to(HISTORY_COUNTED_UP_TO)
    )
    return History(rows, found.next_cursor, found.prev_cursor, count, more)


def verdicts_page(memory: Memory, *, after: str | None = None, before: str | None = None) -> Page:
    """Every vote on this memory, newest first, a page at a time (found on the (memory, -id)
    index, then read with their event and policies)."""
    shown = Verdict.objects.select_related("event", "assessment", "assessment__policy", "shadow_policy")
    verdicts = Verdict.objects.filter(memory=memory)
    return keyset_page(verdicts, ("-id",), size=VERDICT_PAGE, after=after, before=before, shown=shown)


@dataclass(frozen=True)
class Judged:
    at: datetime
    disposition: str
    still_true: float | None


def last_judged(memory: Memory, *, bearing: bool = False) -> Judged | None:
    """When Jev last judged this memory and what it found (its newest vote, whatever it found),
    or, with `bearing`, its newest vote that bears on it (whose still true is its p(true)); from
    the (memory, -id) index. The memory's own p_true and last_checked_at are the queue's cache of
    the latter, written by the assessment worker; the page reads the votes themselves."""
    votes = Verdict.objects.filter(memory=memory).order_by("-id")
    if bearing:
        votes = votes.filter(disposition__in=BEARING)
    row = votes.values_list("created_at", "disposition", "still_true").first()
    return Judged(*row) if row else None


@dataclass(frozen=True)
class VotePoint:
    at: datetime
    still_true: float
    disposition: str
    verdict_id: int


# The chart's dots: the latest votes, however many a memory has (every vote is in the paged table).
CHART_VOTES = 500


def still_true_series(memory: Memory) -> tuple[list[VotePoint], bool]:
    """The latest CHART_VOTES still_true votes on this memory, oldest first, read from the
    (memory, -id) index (only numbers and times); and whether it has more."""
    rows = list(
        Verdict.objects.filter(memory=memory, still_true__isnull=False)
        .order_by("-id")
        .values_list("created_at", "still_true", "disposition", "id")[: CHART_VOTES + 1]
    )
    points = sorted((VotePoint(*row) for row in rows[:CHART_VOTES]), key=lambda p: (p.at, p.verdict_id))
    return points, len(rows) > CHART_VOTES


def active_thresholds(memory: Memory) -> Thresholds:
    policy = PolicyVersion.objects.for_tenant(memory.tenant_id).filter(mode=PolicyVersion.Mode.ACTIVE).first()
    return Thresholds.from_data(policy.thresholds) if policy else Thresholds()


# -- the neighbourhood graph ---------------------------------------------------------------------


@dataclass
class Neighbourhood:
    centre: Memory
    hops: int
    nodes: dict[int, Memory] = field(default_factory=dict)
    distance: dict[int, int] = field(default_factory=dict)
    links: list[MemoryLink] = field(default_factory=list)
    truncated: bool = False


# Links read around a memory, every hop together: a guideline a thousand memories rest on has its
# first links drawn and listed, not all of them.
LINKS_READ = 100


def neighbourhood(memory: Memory, *, hops: int) -> Neighbourhood:
    """This memory and the memories within `hops` typed links of it, either direction (its
    versions are linked `supersedes`), up to LINKS_READ links (`truncated` past them). One query
    per hop, one for the memories."""
    graph = Neighbourhood(centre=memory, hops=hops, distance={memory.pk: 0})
    frontier, seen_links = {memory.pk}, set()
    for hop in range(1, hops + 1):
        budget = LINKS_READ - len(graph.links)
        if not frontier:
            break
        if budget <= 0:
            graph.truncated = True  # the next hop is not read: as far as the page says, there is more
            break
        found = list(
            MemoryLink.objects.for_tenant(memory.tenant_id)
            .filter(Q(src_id__in=frontier) | Q(dst_id__in=frontier))
            .exclude(pk__in=seen_links)
            .order_by("pk")[: budget + 1]
        )
        if len(found) > budget:
            graph.truncated, found = True, found[:budget]
        next_frontier = set()
        for link in found:
            if link.pk in seen_links:
                continue
            seen_links.add(link.pk)
            graph.links.append(link)
            for end in (link.src_id, link.dst_id):
                if end not in graph.distance:
                    graph.distance[end] = hop
                    next_frontier.add(end)
        frontier = next_frontier
    rows = (
        Memory.objects.for_tenant(memory.tenant_id)
        .filter(pk__in=graph.distance)
        .only("id", "subject", "content", "status", "version", "kind", "deleted_at")
    )
    graph.nodes = {row.pk: row for row in rows}
    return graph


LINKS_PAGE = 50


def links_page(memory: Memory, *, after: str | None = None) -> Page:
    """Every link of this memory, either direction, in the order they were made, a page at a
    time: the graph draws and lists the first LINKS_READ, and a hub's other thousands are read
    here (found on the link ids alone, then read with both ends' names)."""
    links = MemoryLink.objects.for_tenant(memory.tenant_id).filter(Q(src=memory) | Q(dst=memory))
    ends = ("subject", "version", "status")
    shown = MemoryLink.objects.select_related("src", "dst").only(
        "id",
        "kind",
        "origin",
        "src_id",
        "dst_id",
        *(f"{end}__{name}" for end in ("src", "dst") for name in ends),
    )
    return keyset_page(links, ("id",), size=LINKS_PAGE, after=after, shown=shown)


# -- what the agent believed at a time ----------------------------------------------------------


@dataclass
class Belief:
    at: datetime
    versions: list[Memory]  # the versions of this subject and scope nearest `at`, oldest first
    held: Memory | None  # the one in force at `at`, if any
    status_then: dict[int, str] = field(default_factory=dict)
    count: int = 0  # every version of the subject and scope, counted up to BELIEF_COUNTED_UP_TO
    more_than: bool = False

    @property
    def not_shown(self) -> int:
        return self.count - len(self.versions)


BELIEF_AROUND = 10  # versions shown either side of `at` (by when each became valid)
BELIEF_COUNTED_UP_TO = 1000


def belief_at(memory: Memory, at: datetime) -> Belief:
    """Which version of this memory's subject, in exactly its scope, was in force at `at`: written
    by then, inside its validity window, and live by its transitions up to then (the latest such
    version wins). Each version's status then is its last move by then, read in the same query
    (a subquery on the trail's memory index); the versions shown are the BELIEF_AROUND that
    became valid last by `at` and the BELIEF_AROUND after, however long the subject's history
    (a chain of 200 versions read all 200 and every move of each)."""
    last_move = Transition.objects.filter(memory_id=OuterRef("pk"), created_at__lte=at)
    last_move = last_move.order_by(*MOVES_NEWEST_FIRST)
    versions = (
        Memory.objects.for_tenant(memory.tenant_id)
        .filter(subject=memory.subject)
        .filter(exact_scope(memory))
        .only(
            "id",
            "subject",
            "content",
            "version",
            "status",
            "valid_from",
            "valid_until",
            "created_at",
            "deleted_at",
            "tenant_id",
        )
        .annotate(moved_to=Subquery(last_move.values("to_status")[:1]))
    )
    by_then = versions.filter(valid_from__lte=at)
    # Live then: written by then, and its last move by then left it live (no move: as written).
    live_then = Q(moved_to__in=LIVE_STATUSES) | Q(moved_to__isnull=True)
    held = (
        by_then.filter(live_then, created_at__lte=at)
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=at))
        .order_by("-valid_from", "-id")
        .first()
    )
    shown = [
        *reversed(by_then.order_by("-valid_from", "-id")[:BELIEF_AROUND]),
        *versions.filter(valid_from__gt=at).order_by("valid_from", "id")[:BELIEF_AROUND],
    ]
    status_then = {
        version.pk: version.moved_to or MemoryStatus.ACTIVE for version in shown if version.created_at <= at
    }
    count, more = versions.count_up_to(BELIEF_COUNTED_UP_TO)
    return Belief(
        at=at,
        versions=shown,
        held=next((version for version in shown if held is not None and version.pk == held.pk), held),
        status_then=status_then,
        count=count,
        more_than=more,
    )

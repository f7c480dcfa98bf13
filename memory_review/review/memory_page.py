"""Reads for a memory's page: its status history, its verdicts, its neighbourhood of linked
memories, and which version of its subject held at a given time."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from memory_review.assessments.models import PolicyVersion, Verdict
from memory_review.assessments.policy import BEARING, Thresholds
from memory_review.audit.models import Transition
from memory_review.memories.models import LIVE_STATUSES, Memory, MemoryLink, MemoryStatus, exact_scope
from memory_review.tenancy.names import actor_names

from . import words
from .paging import Page, keyset_page

VERDICT_PAGE = 20
GRAPH_LIMIT = 60  # nodes drawn; the list beside the graph has them all


def status_history(memory: Memory) -> list[Transition]:
    """Every move of this memory, newest first, each with `actor_name`."""
    moves = list(
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
        .order_by("-seq")
    )
    names = actor_names(move.actor for move in moves)
    for move in moves:
        move.actor_name = names[move.actor]
    words.in_words(moves, memory.tenant)
    return moves


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


# -- what the agent believed at a time ----------------------------------------------------------


@dataclass
class Belief:
    at: datetime
    versions: list[Memory]  # every memory of this subject and scope, oldest first
    held: Memory | None  # the one in force at `at`, if any
    status_then: dict[int, str] = field(default_factory=dict)


def belief_at(memory: Memory, at: datetime) -> Belief:
    """Which version of this memory's subject, in exactly its scope, was in force at `at`: written
    by then, inside its validity window, and live by its transitions up to then."""
    versions = list(
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
        .order_by("valid_from", "id")
    )
    status_then: dict[int, str] = {}
    for version in versions:
        if version.created_at <= at:
            status_then[version.pk] = MemoryStatus.ACTIVE
    moves = (
        Transition.objects.filter(memory_id__in=list(status_then), created_at__lte=at)
        .order_by("seq")
        .values_list("memory_id", "to_status")
    )
    for memory_id, to_status in moves:
        status_then[memory_id] = to_status
    held = None
    for version in versions:
        live = status_then.get(version.pk) in LIVE_STATUSES
        valid = version.valid_from <= at and (version.valid_until is None or at < version.valid_until)
        if live and valid:
            held = version  # the latest such version wins
    return Belief(at=at, versions=versions, held=held, status_then=status_then)

"""Usage receipts (issue 16, item 4): which responses used a memory, and which of them used it
while it was wrong.

A memory was wrong from the time of the evidence that killed it: the event a vote read when the
policy contradicted or superseded it, the evidence of its successor when it was rewritten or
superseded, or, for a person's decision with no evidence, the time of that decision. A lead may
set another time (`since`), and the pages and the export say which one they use."""

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Min

from memory_review.audit.exports import spreadsheet_safe
from memory_review.audit.models import MOVES_NEWEST_FIRST, Transition
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Tenant

from .models import Receipt

# The statuses a memory is wrong in, once it has left force.
KILLED = (MemoryStatus.CONTRADICTED, MemoryStatus.SUPERSEDED, MemoryStatus.DELETED)
MAX_RESPONSES = 500  # a batch (the API's schema reads these)
MAX_MEMORIES = 100  # a response


class UnknownMemory(LookupError):
    """A receipt names a memory this tenant does not hold: nothing of the batch is written."""


@dataclass(frozen=True)
class Used:
    """One response's use of memories, as an agent reports it."""

    response_id: str
    used_at: datetime
    memories: tuple[tuple[int, int], ...]  # (memory id, content version)
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None


def version_problems(tenant: Tenant, batch: list[Used]) -> dict[tuple[int, int], str]:
    """{(response index, memory index): problem} for each memory not held at the version named."""
    wanted = {pk for used in batch for pk, _ in used.memories}
    versions = dict(Memory.objects.for_tenant(tenant).filter(pk__in=wanted).values_list("pk", "version"))
    problems = {}
    for n, used in enumerate(batch):
        for m, (pk, version) in enumerate(used.memories):
            if pk not in versions:
                raise UnknownMemory(f"no memory {pk} in this tenant")
            if versions[pk] != version:
                problems[(n, m)] = f"memory {pk} holds content version {versions[pk]}, not {version}"
    return problems


@dataclass(frozen=True)
class Recorded:
    written: int
    already: int  # a response's use of a memory (at that version) reported before: not written again


@transaction.atomic
def record(tenant: Tenant, batch: list[Used]) -> Recorded:
    """Store a batch of receipts in one insert (and its seals); all of it or, on any problem,
    nothing. A response's use of a memory at a version is one receipt however often it is sent:
    an agent retrying a batch whose answer it never saw writes nothing twice."""
    wanted = {pk for used in batch for pk, _ in used.memories}
    # Two sends of one batch at once: the second waits here for the first, then finds its rows.
    list(
        Memory.objects.for_tenant(tenant)
        .select_for_update()
        .filter(pk__in=wanted)
        .order_by("pk")
        .values("pk")
    )
    seen = set(
        Receipt.objects.for_tenant(tenant)
        .filter(memory_id__in=wanted, response_id__in={used.response_id for used in batch})
        .values_list("response_id", "memory_id", "version")
    )
    rows, sent = [], 0
    for used in batch:
        for pk, version in used.memories:
            sent += 1
            if (used.response_id, pk, version) in seen:
                continue
            seen.add((used.response_id, pk, version))
            rows.append(
                Receipt(
                    tenant=tenant,
                    memory_id=pk,
                    version=version,
                    response_id=used.response_id,
                    user_id=used.user_id,
                    agent_id=used.agent_id,
                    thread_id=used.thread_id,
                    used_at=used.used_at,
                )
            )
    Receipt.objects.bulk_create(rows)
    return Recorded(written=len(rows), already=sent - len(rows))


# -- what a lead reads --------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    responses: int
    first_used: datetime | None
    wrong_since: datetime | None  # None while the memory stands
    wrong_because: str  # how wrong_since was found, in words
    while_wrong: int


def killing_move(memory: Memory) -> Transition | None:
    """The move that took the memory out of force for being wrong, if it was."""
    if memory.status not in KILLED:
        return None
    return (
        Transition.objects.filter(memory=memory, to_status=memory.status)
        .select_related("verdict__event")
        .order_by(*MOVES_NEWEST_FIRST)
        .first()
    )


def wrong_from(memory: Memory) -> tuple[datetime | None, str]:
    """When the memory became wrong, and how that was found (None while it stands)."""
    move = killing_move(memory)
    if move is None:
        return None, ""
    if move.verdict is not None and move.verdict.event is not None:
        return move.verdict.event.occurred_at, "from the evidence that contradicted it"
    if memory.superseded_by_id is not None:  # its successor's evidence, without loading either's text
        evidence = Memory.objects.filter(pk=memory.superseded_by_id).values_list(
            "source_event__occurred_at", flat=True
        )
        return evidence.get(), "from the evidence of the version that replaced it"
    return move.created_at, "from the decision that took it out of force"


NOT_USED = Usage(0, None, None, "", 0)


def usage(memory: Memory, *, since: datetime | None = None) -> Usage:
    """How often the memory was used, and how often while wrong (from `since`, when a lead sets
    it; else from the evidence that killed it). One query for a memory no response used (most of
    them), four at most."""
    counted = Receipt.objects.filter(memory=memory).aggregate(n=Count("pk"), first=Min("used_at"))
    if not counted["n"]:
        return NOT_USED
    wrong, because = (since, "from the time you set") if since else wrong_from(memory)
    while_wrong = Receipt.objects.filter(memory=memory, used_at__gte=wrong).count() if wrong else 0
    return Usage(counted["n"], counted["first"], wrong, because, while_wrong)


def recent(memory: Memory, *, limit: int = 20) -> list[Receipt]:
    return list(Receipt.objects.filter(memory=memory).order_by("-used_at", "-pk")[:limit])


def while_wrong(memory: Memory, since: datetime):
    """Every response that used the memory from `since`, oldest first: the export's rows."""
    return Receipt.objects.filter(memory=memory, used_at__gte=since).order_by("used_at", "pk")


EXPORT_COLUMNS = ("used_at", "response_id", "user_id", "thread_id", "agent_id", "memory_id", "version")


def csv_lines(rows) -> Iterator[str]:
    """The receipts as CSV, a row at a time (an export of any size streams), each cell safe to
    open in a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(cells)
        return buffer.getvalue()

    yield line(EXPORT_COLUMNS)
    for receipt in rows.iterator(chunk_size=2000):
        yield line([spreadsheet_safe(getattr(receipt, name)) for name in EXPORT_COLUMNS])

"""What is in force for a scope: the memories an agent may use now, or used at a past time
(issue 16). A scope is matched as an event's is when it picks the memories it judges (DESIGN §4,
assessments/invalidation.py candidates_for), so what an agent reads for a scope is what events in
that scope reach:
* a column asked for matches that value or NULL: a NULL column is broader, so a user's memories
  come with the tenant's, and a thread's with its user's;
* a column not asked for matches any value: `user_id=cust-4821` is everything that applies to that
  customer with any agent, in any thread (issue 28: the memories an agent wrote for a customer are
  that customer's). An agent answering in a conversation names all three and gets exactly what
  applies there. `narrower=False` reads a column not asked for as NULL only: what applies to a
  conversation with no agent or thread (the API's reading before issue 28).

"In force" means:
* active and frozen memories are in force (a frozen one is pinned by a person);
* a memory that needs review is returned but marked `under_review`: it stood until new evidence
  put it in doubt, and a person has not decided yet, so an agent may use it and hedge;
* nothing past its hard TTL (`valid_until`) or before its `valid_from` is in force, whatever its
  status column says: the TTL sweep may not have run yet;
* a forgotten, erased, contradicted, superseded or expired memory is not.

`as_of` answers from the audit trail, as the memory page's "believed at" does: a memory written
by then, inside its validity window then, and live by its transitions up to then.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory_review.audit.models import MOVES_NEWEST_FIRST, Transition
from memory_review.memories.models import LIVE_STATUSES, Memory, MemoryStatus
from memory_review.tenancy.models import Tenant

from . import feed

SCOPE_COLUMNS = ("user_id", "agent_id", "thread_id")
IN_FORCE, UNDER_REVIEW = "in_force", "under_review"
MAX_PAGE = 500


@dataclass
class Held:
    memory: Memory
    status: str  # its status then (now, unless as_of)
    decision: Transition | None  # the latest move up to then; None: as written

    @property
    def standing(self) -> str:
        return UNDER_REVIEW if self.status == MemoryStatus.NEEDS_REVIEW else IN_FORCE


def _moves(at: datetime | None):
    moves = Transition.objects.filter(memory_id=OuterRef("pk"))
    if at is not None:
        moves = moves.filter(created_at__lte=at)
    return moves.order_by(*MOVES_NEWEST_FIRST)


@dataclass
class Snapshot:
    held: list[Held]
    next_after: int | None  # the id to ask the next page after; None on the last page
    cursor: int | None  # the change feed's position these rows are consistent with; None for as_of


def reaching(*, narrower: bool = True, **scope: str | None) -> Q:
    """The memories a scope reaches: each column asked for matches its value or NULL (broader); a
    column not asked for matches anything (narrower=True, as an event's scope does) or NULL only."""
    query = Q()
    for column in SCOPE_COLUMNS:
        value = scope.get(column)
        broader = Q(**{f"{column}__isnull": True})
        if value is not None:
            query &= broader | Q(**{column: value})
        elif not narrower:
            query &= broader
    return query


def snapshot(tenant: Tenant, *, at: datetime | None = None, **asked) -> Snapshot:
    """A page of what is in force, with the feed position to follow it from (list, then watch).

    The feed's head is read first, then the rows, in one transaction. A change is written in the
    transaction that changes the memory and takes its position only after it has committed (the
    tenant's sequencer gives it: audit/sequencer.py), so every change at or before the head has
    committed, and its memory's new state is in rows read after it: none is lost between the page
    and the feed.
    A change that commits between the two reads (PostgreSQL's READ COMMITTED reads each statement
    afresh; SQLite's transaction is one snapshot) is in the rows and also after the cursor: the
    agent hears it again, and applying a change is idempotent (each carries the memory's state
    then). Read the other way round, a change committed between the reads would be in neither.

    A later page of the same listing carries its own, later head; the first page's cursor is the
    one to follow from (whatever changed in a page already read is after it)."""
    with transaction.atomic():
        cursor = None if at is not None else feed.head(tenant)
        held, next_after = page(tenant, at=at, **asked)
    return Snapshot(held=held, next_after=next_after, cursor=cursor)


def page(
    tenant: Tenant, *, user_id: str | None = None, agent_id: str | None = None, thread_id: str | None = None,
    narrower: bool = True, kind: str | None = None, at: datetime | None = None, after: int = 0,
    limit: int = 100,
) -> tuple[list[Held], int | None]:  # fmt: skip
    """One page of what is in force for the scope (at `at`, or now), in id order after `after`,
    and the id to ask for the next page after (None at the end). Three queries, whatever the size."""
    now = at or timezone.now()
    rows = (
        Memory.objects.tenant_range(tenant)  # ordered (tenant, id): the tenant's own index gives it
        .filter(reaching(user_id=user_id, agent_id=agent_id, thread_id=thread_id, narrower=narrower))
        .filter(valid_from__lte=now)
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now))
        .filter(pk__gt=after)
        .annotate(last_move=Subquery(_moves(at).values("pk")[:1]))
    )
    if kind:
        rows = rows.filter(kind=kind)
    if at is None:
        rows = rows.filter(status__in=LIVE_STATUSES, deleted_at__isnull=True)
    else:  # its status then: its last move by then, or as written (active)
        then = Coalesce(Subquery(_moves(at).values("to_status")[:1]), Value(MemoryStatus.ACTIVE.value))
        rows = rows.filter(created_at__lte=at).annotate(status_then=then)
        rows = rows.filter(status_then__in=LIVE_STATUSES)
    found = list(rows.order_by("tenant_id", "pk")[: limit + 1])
    more = len(found) > limit
    found = found[:limit]
    moves = Transition.objects.in_bulk([row.last_move for row in found if row.last_move])
    held = [
        Held(
            memory=row,
            status=row.status if at is None else row.status_then,
            decision=moves.get(row.last_move),
        )
        for row in found
    ]
    return held, (found[-1].pk if more else None)

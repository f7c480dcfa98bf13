"""What is in force for a scope: the memories an agent may use now, or used at a past time
(issue 16). DESIGN §4's inheritance holds: a NULL scope column is broader, so a user's scope
also gets the memories of every user, and a thread's those of every thread.

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

from django.db.models import OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.memories.models import LIVE_STATUSES, Memory, MemoryStatus
from memory_review.tenancy.models import Tenant

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
    return moves.order_by("-seq")


def page(
    tenant: Tenant, *, user_id: str | None = None, agent_id: str | None = None, thread_id: str | None = None,
    kind: str | None = None, at: datetime | None = None, after: int = 0, limit: int = 100,
) -> tuple[list[Held], int | None]:  # fmt: skip
    """One page of what is in force for the scope (at `at`, or now), in id order after `after`,
    and the id to ask for the next page after (None at the end). Three queries, whatever the size."""
    now = at or timezone.now()
    rows = (
        Memory.objects.for_tenant(tenant)
        .for_scope(user_id=user_id, agent_id=agent_id, thread_id=thread_id)
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
    found = list(rows.order_by("pk")[: limit + 1])
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

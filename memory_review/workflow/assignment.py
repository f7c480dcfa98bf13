"""Who is to review what, and at what pace (LangSmith's and Langfuse's annotation queues): a lead
gives queue items to reviewers by hand, or by rules on an item's channel, kind or subject; each
reviewer's decisions an hour and the oldest item waiting for them; items past the tenant's
review target (a lead sets it; REVIEW_TARGET_HOURS until then). A hand assignment wins over the
rules; every rule that matches an item makes it its assignee's. An assignment lasts one stay in
the queue."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce
from operator import or_

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from memory_review.lifecycle import Actor, LifecycleError
from memory_review.memories import search
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Membership, Tenant
from memory_review.tenancy.names import display_name

from .flow import day_of
from .models import Assignment, AssignmentRule, ReviewTarget


class AssignmentError(LifecycleError):
    pass


def target_hours(tenant_id: int) -> int:
    hours = ReviewTarget.objects.filter(tenant_id=tenant_id).values_list("hours", flat=True).first()
    return hours or settings.REVIEW_TARGET_HOURS


def review_target(tenant_id: int) -> timedelta:
    return timedelta(hours=target_hours(tenant_id))


def set_target(*, tenant: Tenant, hours: int, by) -> ReviewTarget:
    """A lead's review target for the tenant: between an hour and 30 days."""
    if not 1 <= hours <= ReviewTarget.HOURS_MAX:
        raise AssignmentError(
            f"the review target is between 1 and {ReviewTarget.HOURS_MAX} hours, not {hours}"
        )
    target, _ = ReviewTarget.objects.update_or_create(
        tenant=tenant, defaults={"hours": hours, "set_by": by, "set_at": timezone.now()}
    )
    return target


def reviewers(tenant: Tenant) -> list[Membership]:
    """The tenant's members who decide (Membership.can_review), with their users, by username:
    whom a lead may give items, claims and rules to."""
    members = Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username")
    return [m for m in members if m.can_review]


def _reviewer(tenant: Tenant, user) -> None:
    membership = Membership.objects.filter(tenant=tenant, user=user).first()
    if membership is None or not membership.can_review:
        raise AssignmentError(f"{display_name(user)} does not review in {tenant.slug}")


@transaction.atomic
def assign(*, memory: Memory, to, by) -> Assignment:
    """Give a queue item to a reviewer (ending whoever had it)."""
    row = Memory.objects.select_for_update().get(pk=memory.pk)
    if row.status != MemoryStatus.NEEDS_REVIEW:
        raise AssignmentError(
            f"only memories in the review queue are assigned; this one is {row.get_status_display().lower()}"
        )
    _reviewer(row.tenant, to)
    now = timezone.now()
    in_force(Assignment.objects.filter(memory=row)).update(ended_at=now)
    return Assignment.objects.create(
        tenant_id=row.tenant_id, memory=row, assignee=to, assigned_by=by, assigned_at=now
    )


def in_force(assignments: QuerySet) -> QuerySet:
    """Assignments not ended and given during the memory's current stay in the queue."""
    return assignments.filter(ended_at__isnull=True, assigned_at__gte=F("memory__flagged_at"))


def rule_create(
    *, tenant: Tenant, to, by, channel: str = "", kind: str = "", subject: str = ""
) -> AssignmentRule:
    if not (channel or kind or subject.strip()):
        raise AssignmentError("a rule needs a channel, a kind or words of the subject to match")
    _reviewer(tenant, to)
    return AssignmentRule.objects.create(
        tenant=tenant, assignee=to, channel=channel or None, kind=kind or None,
        subject_contains=subject.strip() or None, created_by=by, created_at=timezone.now(),
    )  # fmt: skip


def rule_remove(*, rule: AssignmentRule) -> None:
    AssignmentRule.objects.filter(pk=rule.pk, removed_at__isnull=True).update(removed_at=timezone.now())


def rules(tenant: Tenant) -> QuerySet:
    return (
        AssignmentRule.objects.for_tenant(tenant).filter(removed_at__isnull=True).select_related("assignee")
    )


def _rule_matches(rule: AssignmentRule) -> Q:
    """A rule as a condition on the memory's own columns: its channel and kind (blank matches any)
    and, case aside, words of its subject (as `_applies` says in Python)."""
    condition = Q()
    if rule.channel:
        condition &= Q(channel=rule.channel)
    if rule.kind:
        condition &= Q(kind=rule.kind)
    if rule.subject_contains:
        condition &= search.contains("subject", rule.subject_contains, tenant_id=rule.tenant_id)
    return condition


def _by_rule(tenant_id: int, user=None) -> Q:
    """Whether one of the tenant's rules (`user`'s, if given) matches the memory. A tenant has a
    handful of rules: read once, they become plain predicates the planner can use, rather than a
    subquery over the rules evaluated for every memory in the queue."""
    found = AssignmentRule.objects.filter(tenant_id=tenant_id, removed_at__isnull=True)
    if user is not None:
        found = found.filter(assignee=user)
    conditions = [_rule_matches(rule) for rule in found]
    return reduce(or_, conditions) if conditions else Q(pk__in=[])


def _by_hand(**filters) -> Exists:
    return Exists(in_force(Assignment.objects.filter(memory=OuterRef("pk"), **filters)))


def _theirs(tenant_id: int, user) -> Q:
    return Q(_by_hand(assignee=user)) | (~Q(_by_hand()) & _by_rule(tenant_id, user))


def assigned_to(memories: QuerySet, user, tenant_id: int) -> QuerySet:
    """The memories that are `user`'s: given to them by hand, or matched by one of their rules
    and given to no one by hand."""
    return memories.filter(_theirs(tenant_id, user))


def unassigned(memories: QuerySet, tenant_id: int) -> QuerySet:
    return memories.filter(~Q(_by_hand()) & ~_by_rule(tenant_id))


def assignees(memories: list[Memory], tenant: Tenant) -> dict[int, list[str]]:
    """Who each shown memory is assigned to, by name: two queries for the page."""
    found = {pk: [] for pk in (m.pk for m in memories)}
    # In force as in_force() says, its memory's flag compared here: the rows are in hand, and a
    # join back to the memories made the planner walk the memories' primary key.
    flagged = {m.pk: m.flagged_at for m in memories}
    open_ones = Assignment.objects.filter(memory_id__in=found, ended_at__isnull=True)
    for memory_id, assigned_at, first, last, username in open_ones.values_list(
        "memory_id", "assigned_at", "assignee__first_name", "assignee__last_name", "assignee__username"
    ):
        if flagged[memory_id] is not None and assigned_at >= flagged[memory_id]:
            found[memory_id] = [f"{first} {last}".strip() or username]
    active = list(rules(tenant))
    for memory in memories:
        if found[memory.pk] or not active:
            continue
        found[memory.pk] = sorted({display_name(rule.assignee) for rule in active if _applies(rule, memory)})
    return found


def _applies(rule: AssignmentRule, memory: Memory) -> bool:
    return (
        (not rule.channel or memory.channel == rule.channel)
        and (not rule.kind or memory.kind == rule.kind)
        and (not rule.subject_contains or rule.subject_contains.lower() in memory.subject.lower())
    )


@dataclass(frozen=True)
class Pace:
    name: str
    user_id: int
    last_hour: int  # decisions in the last hour
    today: int
    more: bool  # more than `today`: a day's moves are read up to a bound (flow.DAY_READ_MOST)
    per_hour: float | None  # today's decisions over the hours since their first today (among those read)
    waiting: int | None  # items assigned to them, waiting (None while counted)
    oldest: datetime | None  # when the oldest of those entered review


def team(tenant: Tenant, *, waiting: dict | None, now=None) -> list[Pace]:
    """Each reviewer's pace and, from `waiting` (user id -> waiting_by_reviewer()'s count and
    oldest; None while it is counted), what waits for them, in name order."""
    now = now or timezone.now()
    people = reviewers(tenant)
    out = []
    for membership in people:  # a bounded read each (flow.day_of), not the day's every move
        user = membership.user
        day = day_of(tenant, str(Actor.user(user)), now=now)
        hours = max((now - day.first_today).total_seconds() / 3600, 1.0) if day.first_today else None
        out.append(
            Pace(
                name=display_name(user),
                user_id=user.pk,
                last_hour=day.last_hour,
                today=day.decided,
                more=day.more,
                per_hour=round(day.decided / hours, 1) if hours else None,
                waiting=waiting.get(user.pk, (0, None))[0] if waiting is not None else None,
                oldest=waiting.get(user.pk, (0, None))[1] if waiting is not None else None,
            )  # fmt: skip
        )
    return sorted(out, key=lambda pace: pace.name.lower())


def waiting_by_reviewer(tenant: Tenant) -> dict[int, tuple[int, datetime | None]]:
    """How many queue items wait for each reviewer, and since when the oldest: two queries. Hand
    assignments grouped by assignee; then one pass over the items no one has by hand, each
    reviewer's rules as plain predicates on the memory's columns (a correlated subquery per
    reviewer and item took seconds at 10,000 items). The pass reads the whole queue: the team
    page keeps it as a figure (review/team_page.py)."""
    found = {membership.user_id: (0, None) for membership in reviewers(tenant)}
    queue = Memory.objects.for_tenant(tenant).needs_review()
    by_hand = (
        in_force(Assignment.objects.filter(memory__in=queue, assignee_id__in=found))
        .values("assignee_id")
        .annotate(n=Count("memory_id", distinct=True), oldest=Min("memory__flagged_at"))
    )
    for row in by_hand:
        found[row["assignee_id"]] = (row["n"], row["oldest"])
    ruled = {}
    for rule in AssignmentRule.objects.filter(
        tenant_id=tenant.pk, removed_at__isnull=True, assignee_id__in=found
    ):
        ruled[rule.assignee_id] = ruled.get(rule.assignee_id, Q(pk__in=[])) | _rule_matches(rule)
    if ruled:
        by_rule = queue.filter(~Q(_by_hand())).aggregate(
            **{f"n_{pk}": Count("pk", filter=mine) for pk, mine in ruled.items()},
            **{f"oldest_{pk}": Min("flagged_at", filter=mine) for pk, mine in ruled.items()},
        )
        for pk in ruled:
            n, oldest = found[pk]
            more, since = by_rule[f"n_{pk}"], by_rule[f"oldest_{pk}"]
            found[pk] = (n + more, min((t for t in (oldest, since) if t is not None), default=None))
    return found


def oldest_waiting(tenant: Tenant) -> datetime | None:
    return Memory.objects.for_tenant(tenant).needs_review().aggregate(oldest=Min("flagged_at"))["oldest"]


# Items past the review target are counted up to this many: a queue of a hundred thousand, most of
# them late, is "more than 1,000", not counted on every visit of the home page.
LATE_COUNTED_UP_TO = 1000


@dataclass(frozen=True)
class Late:
    """How many queue items waited longer than the review target: `n`, or more than it."""

    n: int
    more: bool = False

    def __bool__(self) -> bool:
        return self.n > 0

    def __str__(self) -> str:
        return f"more than {self.n}" if self.more else str(self.n)


def past_target(tenant: Tenant, *, now=None) -> Late:
    now = now or timezone.now()
    waiting = Memory.objects.for_tenant(tenant).needs_review()
    late = waiting.filter(flagged_at__lt=now - review_target(tenant.pk))
    return Late(*late.count_up_to(LATE_COUNTED_UP_TO))

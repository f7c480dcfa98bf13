"""The list machinery shared by the review queue and the list of all memories: filters, keyset
pages, and what each shown row needs (its last move and who holds it), read for those rows only.

Every list query is `Memory.objects.for_tenant(...)`, filtered, then ordered by an index that
ends in the order's columns (memories/models.py), so the first and the hundredth page cost
the same and the queries per page do not grow with the data.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace

from django import forms
from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from memory_review.assessments.models import Disposition
from memory_review.assessments.policy import DEFAULTS, Thresholds
from memory_review.audit.models import Transition
from memory_review.memories import search
from memory_review.memories.models import HELD, Memory, MemoryStatus, SourceEvent
from memory_review.memories.search import fenced
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.names import actor_names
from memory_review.workflow import assignment
from memory_review.workflow.models import Claim

from . import explain, words
from .paging import Page, encode, first_matches, keyset_page, searched_page

PAGE_SIZE = 50

QUEUE_ORDERS = {
    "risk": ("threshold_gap", "flagged_at", "id"),
    "oldest": ("flagged_at", "id"),
    "newest": ("-flagged_at", "-id"),
}
LIST_ORDERS = {
    "recent": ("-updated_at", "-id"),
    "oldest": ("updated_at", "id"),
}
AGES = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}
AGE_CHOICES = [
    ("", "Any time"),
    ("1h", "In the last hour"),
    ("1d", "In the last day"),
    ("7d", "In the last week"),
    ("older", "More than a week ago"),
]

# What the queue's rows read: the memory's own columns, not its source event's.
ROW_FIELDS = (
    "id",
    "tenant_id",
    "kind",
    "subject",
    "content",
    "user_id",
    "agent_id",
    "thread_id",
    "status",
    "p_true",
    "threshold_gap",
    "flagged_at",
    "flagged_for",
    "row_version",
    "updated_at",
    "valid_until",
    "deleted_at",
    "channel",
    "written_by",  # a row nothing has moved says who wrote it
)
CHANNELS = dict(SourceEvent.Source.choices)
KINDS = dict(Memory.Kind.choices)


class _Filters(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Subject or content contains")
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Memory.Kind.choices])
    source = forms.ChoiceField(
        required=False, label="Source channel", choices=[("", "Any channel"), *SourceEvent.Source.choices]
    )

    time_column = "updated_at"

    def __init__(self, *args, tenant: Tenant, **kwargs):
        super().__init__(*args, **kwargs)
        self.tenant = tenant  # whose text indexes a search reads, and whose rules "assigned" reads

    def checked(self) -> Q:
        """The search as a walk in order checks it on each row it reads (paging.searched_page,
        first_matches): the text itself, no index asked. The text keys (search.contains) computed
        for each row walked cost 50 us a row: the queue's "loyalty" walked 4,000 rows in 209 ms,
        11 by the check alone. The planner knows how common the word is from the statistics of
        UPPER(subject) and UPPER(content) (memories/0016), and walks the order's index."""
        return search.checked("subject", self.cleaned_data["q"]) | search.checked(
            "content", self.cleaned_data["q"]
        )

    def filter(self, memories: QuerySet, *, user, now, text: bool = True) -> QuerySet:
        """The rows the filters hold; with `text=False`, all but the search's (searched_page
        walks those in order)."""
        data = self.cleaned_data
        if data.get("q") and text:
            # Both columns have the tenant's trigram index on PostgreSQL, Oracle Text on Oracle
            # (memories/search.py).
            words, tenant_id = data["q"], self.tenant.pk
            memories = memories.filter(
                search.contains("subject", words, tenant_id=tenant_id)
                | search.contains("content", words, tenant_id=tenant_id)
            )
        if data.get("kind"):
            memories = memories.filter(kind=data["kind"])
        if data.get("source"):
            memories = memories.filter(channel=data["source"])
        age = data.get("age")
        if age in AGES:
            memories = memories.filter(**{f"{self.time_column}__gte": now - AGES[age]})
        elif age == "older":
            memories = memories.filter(**{f"{self.time_column}__lt": now - AGES["7d"]})
        return memories

    @property
    def active(self) -> dict[str, str]:
        """The filters in force, for the page's summary and the bulk action's confirmation."""
        if not self.is_valid():
            return {}
        shown = {}
        for name, value in self.cleaned_data.items():
            if value and name != "order":
                field = self.fields[name]
                label = dict(field.choices).get(value, value) if hasattr(field, "choices") else value
                shown[field.label or name] = label
        return shown


class QueueFilters(_Filters):
    """The queue's filters; `tenant` is whose assignment rules "assigned to me" reads."""

    flagged_for = forms.ChoiceField(
        required=False,
        label="Sent to review by",
        choices=[
            ("", "Anything"),
            (Disposition.UNCERTAIN, "an uncertain vote"),
            (Disposition.PARTIAL, "a partial change"),
            (Disposition.NO_SOURCE, "an erased source"),
            ("user", "a person"),
            ("system", "a job"),
            (HELD, "held before it was trusted"),
        ],
    )
    claim = forms.ChoiceField(
        required=False,
        label="Claimed",
        choices=[
            ("", "By anyone or no one"),
            ("mine", "By me"),
            ("unclaimed", "Unclaimed"),
            ("others", "By others"),
        ],
    )
    assigned = forms.ChoiceField(
        required=False,
        label="Assigned",
        choices=[("", "To anyone or no one"), ("mine", "To me"), ("unassigned", "To no one")],
    )
    age = forms.ChoiceField(required=False, label="Flagged", choices=AGE_CHOICES)
    order = forms.ChoiceField(
        required=False,
        label="Order",
        choices=[
            ("risk", "Closest call first"),
            ("oldest", "Oldest flag first"),
            ("newest", "Newest flag first"),
        ],
    )

    time_column = "flagged_at"

    def filter(self, memories: QuerySet, *, user, now, text: bool = True) -> QuerySet:
        memories = super().filter(memories, user=user, now=now, text=text)
        data = self.cleaned_data
        if data.get("flagged_for"):
            memories = memories.filter(flagged_for=data["flagged_for"])
        held = Claim.objects.held(now).filter(memory=OuterRef("pk"))
        if data.get("claim") == "mine":
            memories = memories.filter(Exists(held.filter(holder=user)))
        elif data.get("claim") == "unclaimed":
            memories = memories.filter(~Exists(held))
        elif data.get("claim") == "others":
            memories = memories.filter(Exists(held.exclude(holder=user)))
        if data.get("assigned") == "mine":
            memories = assignment.assigned_to(memories, user, self.tenant.pk)
        elif data.get("assigned") == "unassigned":
            memories = assignment.unassigned(memories, self.tenant.pk)
        return memories

    @property
    def ordering(self) -> tuple[str, ...]:
        return QUEUE_ORDERS[self.cleaned_data.get("order") or "risk"]


class MemoryFilters(_Filters):
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *MemoryStatus.choices])
    age = forms.ChoiceField(required=False, label="Changed", choices=AGE_CHOICES)
    order = forms.ChoiceField(
        required=False,
        label="Order",
        choices=[("recent", "Latest change first"), ("oldest", "Oldest change first")],
    )

    def filter(self, memories: QuerySet, *, user, now, text: bool = True) -> QuerySet:
        memories = super().filter(memories, user=user, now=now, text=text)
        if self.cleaned_data.get("status"):
            memories = memories.filter(status=self.cleaned_data["status"])
        return memories

    @property
    def ordering(self) -> tuple[str, ...]:
        return LIST_ORDERS[self.cleaned_data.get("order") or "recent"]


@dataclass
class Listing:
    page: Page
    size: "Size"

    @property
    def rows(self) -> list[Memory]:
        return self.page.rows

    @property
    def total(self) -> int:
        return self.size.n

    @property
    def more(self) -> bool:
        return self.size.more


def queue_memories(tenant: Tenant) -> QuerySet:
    return Memory.objects.for_tenant(tenant).needs_review()


def shown_fields(memories: QuerySet) -> QuerySet:
    """Only what a row shows."""
    return memories.only(*ROW_FIELDS)


def filtered(base: QuerySet, filters: _Filters, *, user, now=None, text: bool = True) -> QuerySet:
    return filters.filter(base, user=user, now=now or timezone.now(), text=text)


def searched(filters: _Filters) -> bool:
    """Whether the list is filtered by text (its search box)."""
    return filters.is_valid() and bool(filters.cleaned_data.get("q"))


# A search whose rarest word this share of the tenant's sampled subjects or contents holds is
# counted along the list first (size_of): the list's first paging.COUNT_WALK rows (then its last,
# for a tenant whose newest are a busy day about something else) hold some 320 matches, and the
# list says "more than 300" without its text index's bitmaps; a share of an eighth finds there
# the thousand a list counts to...
COMMON_SHARE = 0.04
# ... when the list holds this many matches by that share: below it, the text index's bitmap
# costs less than walking the list's two ends (8,000 rows each, 12-14 ms). The queue's "loyalty"
# at 200,000 memories a tenant (some 11,000 by the share): the bitmap 7 ms, walking both ends 26
# ms in vain; at 2,000,000 (some 44,000): the page 104 ms from the bitmap, 35 walked.
WALK_WORTH = 20_000


def common_search(filters: _Filters, *, rows: int) -> bool:
    """Whether a search of a list of `rows` memories is common enough to count along the list."""
    text, tenant_id = filters.cleaned_data["q"], filters.tenant.pk
    for column in ("subject", "content"):
        share = search.text_share(column, text, tenant_id=tenant_id)
        if share is not None and share >= COMMON_SHARE and share * rows >= WALK_WORTH:
            return True
    return False


def by_status_only(filters: _Filters) -> bool:
    """Whether the filters narrow the list by status at most, so the writers' counts by status
    (MemoryTally) answer its size without counting rows."""
    return filters.is_valid() and not any(
        value for name, value in filters.cleaned_data.items() if name not in ("order", "status")
    )


def statuses_in(filters: _Filters, counts: dict[str, int]) -> set[str]:
    """The statuses a list filtered by status at most holds, from the counts by status."""
    chosen = filters.cleaned_data.get("status")
    return {chosen} if chosen else {status for status, n in counts.items() if n}


def counted_up_to() -> int:
    """A filtered list's rows are counted up to this many; past it the list says "more than" (a
    search matching a third of two million memories is not counted row by row on every page).
    Never below REVIEW_BULK_MAX: a set a bulk action may take is always counted whole."""
    return max(COUNTED_UP_TO, settings.REVIEW_BULK_MAX)


COUNTED_UP_TO = 1_000


@dataclass(frozen=True)
class Size:
    """How many memories a filtered list holds, and in which statuses. `more`: more than `n`
    match, and `statuses` are those of the first `n` counted. `ids`: every match, when counted
    whole by their rows."""

    n: int
    more: bool
    statuses: frozenset[str]
    ids: tuple[int, ...] | None = None


def size_of(
    memories: QuerySet,
    filters: _Filters,
    *,
    counts: dict[str, int] | None = None,
    unsearched: QuerySet | None = None,
) -> Size:
    """From `counts` (the memories of `memories`' base by status) when the filters narrow by
    status at most; else counted, up to counted_up_to(), with their statuses, in one query. A
    search whose words the tenant's sample calls common in a list of many (`counts`) is counted
    first among the list's first and last rows in order (`unsearched`: the list without its
    text; paging.first_matches)."""
    if counts is not None and by_status_only(filters):
        held = statuses_in(filters, counts)
        return Size(sum(counts.get(status, 0) for status in held), False, frozenset(held))
    most = counted_up_to()
    if searched(filters):  # from the text index, never an index walked past misses
        found = None
        held = sum(counts.get(status, 0) for status in statuses_in(filters, counts)) if counts else 0
        if unsearched is not None and common_search(filters, rows=held):
            found, whole = first_matches(
                unsearched.filter(filters.checked()), unsearched, filters.ordering, most + 1,
                enough=LOWER_BOUND + 1, also=("status",),
            )  # fmt: skip
            if not whole and LOWER_BOUND < len(found) <= most:
                # Many, found along the list's two ends: the list says "more than" what they
                # hold, where the text index's bitmaps of every match (100,000 for "invoice" at
                # 2,000,000 memories: subject and content, 46 ms each) would count on to 1,000.
                # A bulk action's preview counts its set exactly before anything moves.
                return Size(_fewer_than(len(found)), True, frozenset(status for _, status in found))
            found = found if whole or len(found) > most else None
        if found is None:
            found = fenced(memories, most + 1, also=("status",))
    else:
        found = list(memories.order_by().values_list("pk", "status")[: most + 1])
    statuses = frozenset(status for _, status in found)
    if len(found) > most:
        return Size(most, True, statuses)
    return Size(len(found), False, statuses, ids=tuple(pk for pk, _ in found))


# The matches a common word's walk along the list's two ends must find for the list to say "more
# than" (a round number below them) rather than count on: fewer, and the sample's hint was wrong
# for this list (a word common in the tenant, not in its queue), so the text index counts exactly.
LOWER_BOUND = 100


def _fewer_than(found: int) -> int:
    """A round number below `found`: more than 800 where 812 were found, 100 where 150."""
    return (found - 1) // 100 * 100 if found > 100 else found - 1


def listing(
    base: QuerySet,
    filters: _Filters,
    *,
    user,
    after: str | None,
    before: str | None,
    size: int = PAGE_SIZE,
    counts: dict[str, int] | None = None,
) -> Listing:
    """One page of the filtered list, its rows decorated, and the filtered set's size (size_of)."""
    now = timezone.now()
    memories = filtered(base, filters, user=user, now=now)
    if searched(filters):
        unsearched = filtered(base, filters, user=user, now=now, text=False)
        counted = size_of(memories, filters, counts=counts, unsearched=unsearched)
        if counted.ids is not None:  # every match known: the page is read among them by key
            page = keyset_page(
                shown_fields(base.filter(pk__in=counted.ids)), filters.ordering, size=size, after=after,
                before=before,
            )  # fmt: skip
        else:
            page = searched_page(
                shown_fields(unsearched.filter(filters.checked())), unsearched, filters.ordering, size=size,
                after=after, before=before,
            )  # fmt: skip
    elif after or before or (counts is not None and by_status_only(filters)):
        counted = size_of(memories, filters, counts=counts)
        if counted.ids is not None:  # every match known: the page is read among them by key
            memories = base.filter(pk__in=counted.ids)
        page = keyset_page(shown_fields(memories), filters.ordering, size=size, after=after, before=before)
    else:
        counted, page = _first_page(base, memories, filters.ordering, size)
    decorate(page.rows, viewer=user, now=now)
    return Listing(page=page, size=counted)


def _first_page(
    base: QuerySet, memories: QuerySet, ordering: tuple[str, ...], size: int
) -> tuple[Size, Page]:
    """A filtered list's first page and its size from one query: its first rows in order, up to
    counted_up_to(), with their statuses. A search pays for its text index once, not once for
    its count and again for its page (40 ms each at 2,000,000 memories)."""
    most = counted_up_to()
    head = list(memories.order_by(*ordering).values_list("pk", "status")[: max(most, size) + 1])
    more = len(head) > most
    counted = Size(
        min(len(head), most), more, frozenset(status for _, status in head[:most]),
        ids=None if more else tuple(pk for pk, _ in head),
    )  # fmt: skip
    wanted = [pk for pk, _ in head[: size + 1]]
    found = shown_fields(base.filter(pk__in=wanted)).in_bulk(wanted)
    rows = [found[pk] for pk in wanted if pk in found]
    return counted, Page(rows[:size], encode(rows[size - 1], ordering) if len(rows) > size else None, None)


@dataclass(frozen=True)
class Move:
    """The transition that put a shown memory where it is, as its row says it."""

    action: str
    to_status: str
    reason: str
    actor: str
    actor_name: str
    created_at: datetime
    verdict_id: int | None
    assessment_id: int | None


@dataclass(frozen=True)
class Hold:
    """The claim in force on a shown memory."""

    holder_id: int
    holder_name: str
    expires_at: datetime
    release_asked_by: str | None = None


# What a row reads of the vote behind the move: its votes, its event (the new evidence) and its
# policy, as plain values.
VOTE_FIELDS = (
    "verdict__disposition", "verdict__still_true", "verdict__replaces", "verdict__partial",
    "verdict__event__source", "verdict__event__occurred_at", "verdict__event__erased_at",
    "verdict__event__text", "verdict__assessment__policy__thresholds",
)  # fmt: skip


EXCERPT_CHARS = 180


def excerpt(text: str, chars: int = EXCERPT_CHARS) -> str:
    """The first `chars` characters and an ellipsis, as Truncator.chars() gives for plain text
    (which costs a millisecond a page in its character walk)."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def decorate(memories: list[Memory], *, viewer, now=None) -> None:
    """Give each shown memory `last_move` (a Move), `claim` (a Hold, or None; `mine` when
    `viewer` holds it), the new evidence's first line and why it is where it is, and what its
    row prints: three queries, whatever the page size, read as plain values (a list page renders
    fifty rows; model instances for their neighbours cost more than the queries)."""
    if not memories:
        return
    ids = [memory.pk for memory in memories]
    latest = Transition.objects.filter(memory=OuterRef("memory_id")).order_by("-seq").values("seq")[:1]
    moves = list(
        Transition.objects.filter(memory_id__in=ids, seq=latest).values_list(
            "memory_id",
            "action",
            "to_status",
            "reason",
            "actor",
            "created_at",
            "verdict_id",
            "verdict__assessment_id",
            *VOTE_FIELDS,
        )  # fmt: skip
    )
    names = actor_names({move[4] for move in moves} | words.people_in(move[3] for move in moves))
    by_memory, votes = {}, {}
    for memory_id, action, to_status, reason, actor, created_at, verdict_id, assessment_id, *vote in moves:
        by_memory[memory_id] = Move(  # the reason with the people it cites named ("asked by user 2")
            action, to_status, words.named(reason, names), actor, names[actor], created_at, verdict_id,
            assessment_id,
        )  # fmt: skip
        votes[memory_id] = vote if verdict_id else None
    holds = {
        memory_id: Hold(holder_id, f"{first} {last}".strip() or username, expires_at, asked)
        for memory_id, holder_id, first, last, username, expires_at, asked in Claim.objects.held(now)
        .filter(memory_id__in=ids)
        .values_list(
            "memory_id",
            "holder_id",
            "holder__first_name",
            "holder__last_name",
            "holder__username",
            "expires_at",
            "release_asked_by__username",
        )  # fmt: skip
    }
    now = now or timezone.now()
    late_before = now - assignment.review_target(memories[0].tenant_id)
    given = assignment.assignees(memories, memories[0].tenant_id)
    policies = {}  # a page's moves rest on a policy or two: each read once
    for memory in memories:
        memory.last_move = by_memory.get(memory.pk)
        memory.assignees = given.get(memory.pk, [])
        memory.late = (
            memory.status == MemoryStatus.NEEDS_REVIEW
            and bool(memory.flagged_at)
            and (memory.flagged_at < late_before)
        )
        memory.claim = holds.get(memory.pk)
        memory.mine = memory.claim is not None and memory.claim.holder_id == viewer.pk
        # What the row prints, worked out here once: a list renders fifty rows every few
        # seconds, and each template filter or lookup costs more than the Python behind it.
        memory.key = str(memory.pk)  # a string renders without the number formatting an int gets
        memory.channel_label = CHANNELS.get(memory.channel, "").lower()
        memory.kind_label = KINDS.get(memory.kind, memory.kind)
        memory.excerpt = excerpt(memory.content)
        moved = memory.flagged_at if memory.status == MemoryStatus.NEEDS_REVIEW else memory.updated_at
        memory.ago = words.waited(moved, now) if moved else ""
        memory.moved_iso = moved.isoformat() if moved else ""
        memory.p_shown = f"{memory.p_true:.2f}" if memory.p_true is not None else "–"
        memory.why, memory.why_short, memory.evidence_line, memory.last_move_channel = _why_and_evidence(
            memory, votes.get(memory.pk), now, policies
        )


def _why_and_evidence(memory: Memory, vote, now, policies: dict) -> tuple[str, str, str, str]:
    """The row's sentence and its one-line headline (explain, from the plain values read), and
    the new evidence's first line and channel."""
    move = memory.last_move
    if move is None:
        said = explain.sentence(memory, move=None, mover="", verdict=None, policy=DEFAULTS, now=now)
        return said, explain.headline(memory, move=None, mover="", verdict=None, policy=DEFAULTS), "", ""
    verdict, policy, line, channel = None, DEFAULTS, "", ""
    if vote is not None:
        disposition, still_true, replaces, partial, source, occurred_at, erased_at, text, thresholds = vote
        event = SimpleNamespace(source=source, occurred_at=occurred_at, erased_at=erased_at)
        verdict = SimpleNamespace(
            pk=move.verdict_id, disposition=disposition, still_true=still_true, replaces=replaces,
            partial=partial, event=event,
        )  # fmt: skip
        if thresholds:
            key = repr(sorted(thresholds.items()))
            policy = policies.get(key) or policies.setdefault(key, Thresholds.from_data(thresholds))
        channel = CHANNELS.get(source, source)
        if erased_at is None and text and text.strip():
            line = text.strip().splitlines()[0]
    said = explain.sentence(memory, move=move, mover=move.actor_name, verdict=verdict, policy=policy, now=now)
    short = explain.headline(memory, move=move, mover=move.actor_name, verdict=verdict, policy=policy)
    return said, short, line, channel


def row_of(memory: Memory, *, viewer) -> Memory:
    """One memory as its list row shows it, read afresh (after an action, say)."""
    row = shown_fields(Memory.objects.filter(pk=memory.pk)).get()
    decorate([row], viewer=viewer)
    return row


@dataclass
class QueueChanges:
    gone: list[Memory]  # shown rows that left the queue, each with the move that took it away
    staying: list[Memory]  # shown rows still in it, each with the claim in force now
    arrived: int  # flagged since the page was loaded (counted up to counted_up_to())
    more_arrived: bool = False  # more than `arrived`


def queue_changes(tenant: Tenant, *, viewer, shown: list[int], since) -> QueueChanges:
    """What happened to the rows a reviewer is looking at since the page loaded."""
    rows = list(shown_fields(Memory.objects.for_tenant(tenant).filter(pk__in=shown)))
    decorate(rows, viewer=viewer)
    arrived, most = 0, counted_up_to()
    if since is not None:
        new = queue_memories(tenant).filter(flagged_at__gt=since).exclude(pk__in=shown)
        arrived = new[: most + 1].count()
    return QueueChanges(
        gone=[row for row in rows if row.status != MemoryStatus.NEEDS_REVIEW],
        staying=[row for row in rows if row.status == MemoryStatus.NEEDS_REVIEW],
        arrived=min(arrived, most),
        more_arrived=arrived > most,
    )

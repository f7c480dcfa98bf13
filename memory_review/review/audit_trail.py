"""The auditor's reads: the trail filtered and paged (one memory's lineage is lineage.py)."""

from datetime import datetime, time
from types import SimpleNamespace

from django import forms
from django.db import connection
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from memory_review import params
from memory_review.assessments.models import PromotionCandidate
from memory_review.assessments.moves import CANDIDATE_MOVES
from memory_review.audit.models import Transition
from memory_review.memories import search
from memory_review.memories.models import Memory
from memory_review.memories.moves import MEMORY_MOVES
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.names import actor_names

from . import words
from .paging import Page, decode, encode, keyset_page, page_among

ACTIONS = sorted({action for _, action in (*MEMORY_MOVES, *CANDIDATE_MOVES)})


class TrailFilters(forms.Form):
    actor = forms.ChoiceField(required=False, label="Who")
    action = forms.ChoiceField(required=False, choices=[("", "Any action"), *((a, a) for a in ACTIONS)])
    # One memory's moves: set by the links on its lineage, said by its subject above the trail
    # (a person looks a memory up by what it is about, "Subject contains", never by its number).
    memory = params.IdField(Memory, required=False, label="Memory", widget=forms.HiddenInput)
    subject = forms.CharField(required=False, max_length=200, label="Subject contains")
    since = params.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = params.DateField(required=False, label="Until", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, data, *, tenant: Tenant):
        super().__init__(data)
        self.tenant = tenant
        names = actor_names(trail_actors(tenant))
        self.fields["actor"].choices = [("", "Anyone"), *sorted(names.items(), key=lambda item: item[1])]

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("From must not be after Until")
        return data

    def filter(self, transitions: QuerySet) -> QuerySet:
        data = self.cleaned_data
        if data.get("actor"):
            transitions = transitions.filter(actor=data["actor"])
        if data.get("action"):
            transitions = transitions.filter(action=data["action"])
        if data.get("memory"):
            transitions = transitions.filter(memory_id=data["memory"])
        if data.get("subject"):
            text = data["subject"]
            tenant_id = self.tenant.pk  # search.contains() scopes the rows to it
            transitions, on_memories, few_memories = _subjects(
                transitions, Memory.objects.all(), "memory", text, tenant_id=tenant_id
            )
            transitions, on_candidates, few_candidates = _subjects(
                transitions, PromotionCandidate.objects.all(), "candidate", text, tenant_id=tenant_id
            )
            transitions = transitions.filter(on_memories | on_candidates)
            few = few_memories and few_candidates
        else:
            few = None
        zone = timezone.get_current_timezone()
        if data.get("since"):
            transitions = transitions.filter(created_at__gte=datetime.combine(data["since"], time.min, zone))
        if data.get("until"):
            transitions = transitions.filter(created_at__lte=datetime.combine(data["until"], time.max, zone))
        # How trail_page finds a page of it (trail_page's docstring): read by the matches' ids when
        # few, walked in windows when many. An attribute of this queryset only: a clone of it is
        # paged the plain way, which is right, only not bounded.
        transitions.subject_matches = {None: None, True: "few", False: "many"}[few]
        return transitions

    @property
    def one_memory(self) -> Memory | None:
        """The memory the trail is narrowed to, if any (to name it by its subject)."""
        pk = self.cleaned_data.get("memory") if self.is_valid() else None
        return (
            Memory.objects.for_tenant(self.tenant).only("id", "subject").filter(pk=pk).first() if pk else None
        )

    @property
    def ordering(self) -> tuple[str, ...]:
        """Newest first: by the chain's order, or, between dates, by time (then the chain's),
        from the (tenant, created_at, seq) index. By seq, a day months ago was a walk back
        through every later move (1.8 million, 9 s at 2,000,000 memories)."""
        data = self.cleaned_data if self.is_valid() else {}
        return ("-created_at", "-seq") if data.get("since") or data.get("until") else TRAIL_ORDER

    @property
    def active(self) -> dict:
        return (
            {name: str(value) for name, value in self.cleaned_data.items() if value}
            if self.is_valid()
            else {}
        )


# Up to this many subjects matched, the trail is read by their ids (an index each); past it the
# matches are common enough that reading the trail newest first, in windows, fills a page soon.
# A subject shared by 1,500 memories changed long ago ("zircon plan") was past the old bound of
# 1,000: its trail walked every move with a subject probe each (360,755 moves, 2.9 s).
FEW_SUBJECTS = 2000
# A subject whose rarest word this share of the tenant's sampled subjects holds is taken for
# many without counting: the text index's bitmap of "loyalty" (750,000 memories of a tenant)
# cost 205 ms to learn that, of "warranty" (111,111, 3.6% of the sample after a busy day) 68 ms.
# Wrong for a tenant that holds few of them, the page is still right, and bounded: the walk
# reads up to WALK_MOST moves a page and says how far it looked.
COMMON_SHARE = 0.02


def _subjects(
    transitions: QuerySet, rows: QuerySet, kind: str, text: str, *, tenant_id: int
) -> tuple[QuerySet, Q, bool]:
    """The condition for moves of the memories (or candidates) whose subject holds `text`, and
    whether the matches were few. Few: their ids, from the tenant's text index (memories/search.py,
    `fenced`: never an index walked past misses). Many, or a subject the tenant's sample calls
    common (COMMON_SHARE; not counted): each move's subject is read as the trail is, one
    primary-key probe a move, in bounded windows (trail_page); as `IN (subquery)` or EXISTS,
    PostgreSQL hashed every match first (100,000 memories, 170-250 ms at 200,000)."""
    if kind == "memory" and search.common("subject", text, tenant_id=tenant_id, at_least=COMMON_SHARE):
        matching = None  # many: the trail's walk finds them, bounded, however many there are
    else:
        matching = search.fenced(
            rows.filter(search.contains("subject", text, tenant_id=tenant_id)), FEW_SUBJECTS + 1
        )
    if matching is not None and len(matching) <= FEW_SUBJECTS:
        return transitions, Q(**{f"{kind}_id__in": matching}), True
    subject = Subquery(rows.model.objects.filter(pk=OuterRef(f"{kind}_id")).values("subject")[:1])
    return (
        transitions.annotate(**{f"{kind}_subject": subject}),
        Q(**{f"{kind}_subject__textcontains": text}),
        False,
    )


# PostgreSQL has no skip scan: DISTINCT reads every entry of the trail's actor index (320,000 of
# them, 45 ms), where a recursive query hops from one actor to the next, one index probe each.
_SKIP_SCAN = """
WITH RECURSIVE actors(actor) AS (
    (SELECT actor FROM audit_transition WHERE tenant_id = %s ORDER BY actor LIMIT 1)
    UNION ALL
    SELECT (SELECT t.actor FROM audit_transition t
            WHERE t.tenant_id = %s AND t.actor > actors.actor ORDER BY t.actor LIMIT 1)
    FROM actors WHERE actors.actor IS NOT NULL
)
SELECT actor FROM actors WHERE actor IS NOT NULL
"""


def trail_actors(tenant: Tenant) -> list[str]:
    """Everyone who appears in the tenant's trail, for the Who filter: the distinct actors, read
    from the (tenant, actor, created_at) index by a skip scan on PostgreSQL."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_SKIP_SCAN, [tenant.pk, tenant.pk])
            return [actor for (actor,) in cursor.fetchall()]
    return list(
        Transition.objects.for_tenant(tenant).order_by("actor").values_list("actor", flat=True).distinct()
    )


def trail(tenant: Tenant) -> QuerySet:
    return Transition.objects.for_tenant(tenant).select_related("memory", "candidate", "verdict").only(
        "seq", "created_at", "from_status", "to_status", "action", "actor", "reason", "row_version", "hash",
        "prev_hash", "key_id", "memory__id", "memory__subject", "candidate__id", "candidate__subject",
        "verdict__id", "verdict__assessment_id", "verdict__disposition",
    )  # fmt: skip


TRAIL_ORDER = ("-seq",)
TRAIL_PAGE = 50
# Moves a window of the walk reads at most: no query of a page throws away more (bench/pages.py
# --walks flags 10,000), and a window's probes cost a few milliseconds.
WINDOW = 8000
FIRST_WINDOW = 1000
# Moves a page of a common subject reads at most: where its moves lie past a longer stretch of
# others (a busy day of other memories), the page holds what it found and goes on from there.
# Each move read is a primary-key probe for its subject: 15,000 cost 136 ms past a lead's
# afternoon of 250,000 approvals (2,000,000 memories a tenant); 7,000 (windows of 1,000, 2,000,
# 4,000) stay within a page's target.
WALK_MOST = 7_000


def trail_page(
    filtered: QuerySet, tenant: Tenant, ordering: tuple[str, ...], *, after: str | None, before: str | None
) -> Page:
    """A page of the filtered trail, newest first. The page is found from the moves alone (their
    seq, along the (tenant, seq) index), then its rows are read with what they show: the joins
    the rows need never steer the plan that finds them (with the subject filter's probes,
    PostgreSQL misjudged the page's size and scanned every candidate once a row).

    Filtered by subject (TrailFilters.filter), the moves are found in a shape the planner cannot
    choose wrong, whatever the number of matches:
    * few matches: every move of those memories and candidates (and the other filters) is read
      by their ids, without order or limit, so no plan can walk the trail hoping to meet them
      (1,500 memories changed long ago: from 2.9 s to a few ms); the page is cut from them.
    * many: the trail is walked newest first in windows of seq, each a bounded range of the
      (tenant, seq) index with a subject probe a move (1,000 moves, then twice as many, up to
      WINDOW), until a page and one more row are found; no query throws away more than WINDOW.
      Past WALK_MOST moves the page stops short: it says how far it looked (`looked_past`) and
      its link goes on from the last move read (a busy day of 75,000 other moves before them
      cost the common subject's page 100 to 670 ms).
    Either way the page itself, and its cursors, come from keyset_page over the moves found.

    Pages are cut on linked moves' positions. Moves still waiting for theirs (the moment until
    the sequencer links them, AUDIT_SEQUENCER=deferred) are the newest: the first page shows them
    above the linked ones, up to a page of them."""
    page = _linked_page(filtered, tenant, ordering, after=after, before=before)
    if after or before:
        return page
    waiting = filtered.filter(seq__isnull=True).order_by("-pk").values("pk")[:TRAIL_PAGE]
    first = list(trail(tenant).filter(pk__in=waiting).order_by("-pk"))
    return Page([*first, *page.rows], page.next_cursor, page.prev_cursor, looked_past=page.looked_past)


def _linked_page(
    filtered: QuerySet, tenant: Tenant, ordering: tuple[str, ...], *, after: str | None, before: str | None
) -> Page:
    kind = getattr(filtered, "subject_matches", None)
    shown = trail(tenant)
    stopped = None
    if kind == "few":  # every move of a few memories: read (with their order's columns), paged here
        columns = [term.lstrip("-") for term in ordering]
        found = [row for row in filtered.order_by().values_list("pk", *columns) if None not in row]
        return page_among(found, ordering, size=TRAIL_PAGE, after=after, before=before, shown=shown)
    if kind == "many" and ordering == TRAIL_ORDER:
        found, stopped = _walk(filtered, tenant, after=after, before=before)
    else:
        found = None
    if found is not None:
        filtered = Transition.objects.filter(pk__in=found)  # no tenant: no index that walks by seq
    filtered = filtered.filter(seq__isnull=False)
    page = keyset_page(filtered, ordering, size=TRAIL_PAGE, after=after, before=before, shown=shown)
    if stopped is None:
        return page
    edge = encode(SimpleNamespace(seq=stopped), TRAIL_ORDER)  # the walk goes on from there
    if before:
        return Page(page.rows, page.next_cursor if page.rows else None, edge, looked_past=WALK_MOST)
    return Page(page.rows, edge, page.prev_cursor, looked_past=WALK_MOST)


def _walk(
    filtered: QuerySet, tenant: Tenant, *, after: str | None, before: str | None
) -> tuple[list[int], int | None]:
    """The ids of the filtered moves from the cursor on (newest first; oldest first from a
    `before`), window by window, until a page and one more are found or the trail ends; and, if
    WALK_MOST moves were read first, the seq a cursor goes on from (else None)."""
    linked = Transition.objects.for_tenant(tenant).filter(seq__isnull=False)
    head = linked.order_by("-seq").values_list("seq", flat=True).first() or 0
    cursor = after or before
    edge = decode(cursor, filtered, TRAIL_ORDER, name="after" if after else "before")[0] if cursor else None
    found: list[int] = []
    width = FIRST_WINDOW
    read = 0
    if before:
        low = edge + 1
        while len(found) <= TRAIL_PAGE and low <= head:
            if read >= WALK_MOST:
                return found, low - 1  # `before` it: seq >= low
            window = filtered.filter(seq__gte=low, seq__lt=low + width)
            found += window.order_by().values_list("pk", flat=True)
            low, read, width = low + width, read + width, min(width * 2, WINDOW)
        return found, None
    high = edge if edge is not None else head + 1
    while len(found) <= TRAIL_PAGE and high > 1:
        if read >= WALK_MOST:
            return found, high  # `after` it: seq < high
        window = filtered.filter(seq__lt=high, seq__gte=max(high - width, 1))
        found += window.order_by().values_list("pk", flat=True)
        high, read, width = high - width, read + width, min(width * 2, WINDOW)
    return found, None


def name_actors(rows: list[Transition], tenant: Tenant) -> None:
    """Who made each move, and its reason, in words (review/words.py)."""
    names = actor_names(row.actor for row in rows)
    for row in rows:
        row.actor_name = names[row.actor]
    words.in_words(rows, tenant)

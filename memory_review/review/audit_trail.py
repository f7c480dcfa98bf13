"""The auditor's reads: the trail filtered and paged (one memory's lineage is lineage.py)."""

from datetime import datetime, time

from django import forms
from django.db import connection
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from memory_review import params
from memory_review.assessments.models import PromotionCandidate
from memory_review.audit.models import Transition
from memory_review.lifecycle import CANDIDATE_MOVES, MEMORY_MOVES
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.names import actor_names

from . import words
from .paging import Page, keyset_page

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
            transitions, on_memories = _subjects(
                transitions, Memory.objects.for_tenant(self.tenant), "memory", text
            )
            transitions, on_candidates = _subjects(
                transitions, PromotionCandidate.objects.for_tenant(self.tenant), "candidate", text
            )
            transitions = transitions.filter(on_memories | on_candidates)
        zone = timezone.get_current_timezone()
        if data.get("since"):
            transitions = transitions.filter(created_at__gte=datetime.combine(data["since"], time.min, zone))
        if data.get("until"):
            transitions = transitions.filter(created_at__lte=datetime.combine(data["until"], time.max, zone))
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
# matches are common enough that reading the trail newest first fills a page soon.
FEW_SUBJECTS = 1000


def _subjects(transitions: QuerySet, rows: QuerySet, kind: str, text: str) -> tuple[QuerySet, Q]:
    """The condition for moves of the memories (or candidates) whose subject holds `text`. Few
    matches: their ids, from the text index (memories/search.py). Many: each move's subject is
    read as the trail is, one primary-key probe a move, stopping at a page; as `IN (subquery)`
    or EXISTS, PostgreSQL hashed every match first (22,222 memories, 150 ms at 200,000)."""
    matching = list(rows.filter(subject__textcontains=text).values_list("pk", flat=True)[: FEW_SUBJECTS + 1])
    if len(matching) <= FEW_SUBJECTS:
        return transitions, Q(**{f"{kind}_id__in": matching})
    subject = Subquery(rows.model.objects.filter(pk=OuterRef(f"{kind}_id")).values("subject")[:1])
    return transitions.annotate(**{f"{kind}_subject": subject}), Q(**{f"{kind}_subject__textcontains": text})


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


def trail_page(
    filtered: QuerySet, tenant: Tenant, ordering: tuple[str, ...], *, after: str | None, before: str | None
) -> Page:
    """A page of the filtered trail, newest first. The page is found from the moves alone (their
    seq, along the (tenant, seq) index), then its rows are read with what they show: the joins
    the rows need never steer the plan that finds them (with the subject filter's probes,
    PostgreSQL misjudged the page's size and scanned every candidate once a row)."""
    return keyset_page(filtered, ordering, size=TRAIL_PAGE, after=after, before=before, shown=trail(tenant))


def name_actors(rows: list[Transition], tenant: Tenant) -> None:
    """Who made each move, and its reason, in words (review/words.py)."""
    names = actor_names(row.actor for row in rows)
    for row in rows:
        row.actor_name = names[row.actor]
    words.in_words(rows, tenant)

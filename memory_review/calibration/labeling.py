"""The labeling stream (issue 9): which stored vote a labeler sees next, recording their outcome,
undo, progress, agreement between labelers, and a lead's ruling where they disagree.

Two kinds of item: a verdict (was the policy's disposition right?) and a promotion candidate
(should it have been promoted?). The stream covers the probability range: votes near an edge of
the active policy (where a threshold decides) come first, taking turns with the bin of the range
with the fewest labels, at random within it. An item another labeler has labeled, and that has
fewer than `LABELS_PER_ITEM` labels, comes before a new one, so items get the second opinion
agreement needs.

A labeler never sees the policy's decision or another labeler's answer before their own is in:
the item's evidence is all the page shows until then.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import (
    Count,
    Exists,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Abs, Cast, Floor, Least
from django.utils import timezone

from memory_review import params, textlimits
from memory_review.assessments.models import (
    Assessment,
    Disposition,
    PolicyVersion,
    PromotionCandidate,
    Verdict,
)
from memory_review.assessments.policy import Thresholds
from memory_review.tenancy.models import Tenant

from . import figures
from .agreement import Agreement, fleiss_kappa, from_counts
from .models import VOTE_BINS, Label

VERDICT, CANDIDATE = "verdict", "candidate"
KINDS = (VERDICT, CANDIDATE)

# The outcomes a labeler can give, in key order (1-8): the dispositions of DESIGN §4 that votes
# can reach, and, for a candidate, what the reviewer should have done and why.
VERDICT_OUTCOMES: tuple[tuple[str, str], ...] = (
    (Disposition.CONFIRMED.value, "Still true"),
    (Disposition.UNCERTAIN.value, "Can't tell: a person should look"),
    (Disposition.PARTIAL.value, "Partly changed"),
    (Disposition.SUPERSEDED.value, "Superseded (replaced by a newer one)"),
    (Disposition.CONTRADICTED.value, "Contradicted (no longer true)"),
    (Disposition.UNRELATED.value, "Unrelated to this event"),
    (Disposition.HYPOTHETICAL.value, "The event is hypothetical"),
    (Disposition.DIRECTIVE.value, "The event is an instruction"),
)
PROMOTE, UNSUPPORTED, OUT_OF_SCOPE, CONFLICT = "promote", "unsupported", "out_of_scope", "conflict"
CANDIDATE_OUTCOMES: tuple[tuple[str, str], ...] = (
    (PROMOTE, "Promote: supported, in scope, no conflict"),
    (UNSUPPORTED, "Reject: the source does not support it"),
    (OUT_OF_SCOPE, "Reject: wrong scope"),
    (CONFLICT, "Review: it conflicts with a memory"),
)
OUTCOMES = {VERDICT: VERDICT_OUTCOMES, CANDIDATE: CANDIDATE_OUTCOMES}
# A candidate outcome as the promotion policy's decision (promote | review | reject).
CANDIDATE_DECISION = {PROMOTE: "promote", UNSUPPORTED: "reject", OUT_OF_SCOPE: "reject", CONFLICT: "review"}

# What the promotion policy decided, in the words a labeler's outcome maps to.
DECISION_WORDS = {"promote": "Promote", "review": "Review", "reject": "Reject"}


def outcome_words(kind: str, value: str | None) -> str:
    """A label's outcome in the words the labeling buttons use."""
    if value is None:
        return "nothing"
    return dict(OUTCOMES[kind]).get(value) or dict(Disposition.choices).get(value, value)


def decision_words(kind: str, value: str | None) -> str:
    """What the policy decided: a vote's disposition in the buttons' words, a candidate's decision
    as promote, review or reject (what its labels map onto)."""
    if kind == CANDIDATE and value is not None:
        return DECISION_WORDS.get(value, value)
    return outcome_words(kind, value)


def same_as_policy(kind: str, outcome: str, decided: str | None) -> bool:
    """Whether a label says what the policy did (a candidate's outcomes map onto its decisions)."""
    return decided == (CANDIDATE_DECISION.get(outcome) if kind == CANDIDATE else outcome)


LABELS_PER_ITEM = 2  # an item waits for a second labeler before new items are handed out
WAITING_BATCH = 200  # items waiting for a second opinion, looked up at once
NEAR = 0.05  # "near an edge": within this of a threshold that decides
NEAR_BANDS = (0.001, 0.005, 0.02, NEAR)
# Distances are compared in the votes' own precision (a handful of decimals), not binary
# floating point's: 0.35 + 0.05 is 0.39999999999999997, and a vote of 0.40 is 0.05 from 0.35.
VOTE_PRECISION = 1e-9
BINS = VOTE_BINS
SKIPS_KEPT = 500
ITEM_COUNTS_SECONDS = 60
NOTE_MAX = 500


class LabelError(ValueError):
    """A label that cannot be recorded; nothing was written."""


@dataclass(frozen=True)
class ItemRef:
    kind: str
    pk: int

    @property
    def key(self) -> str:
        return f"{self.kind[0]}{self.pk}"

    @classmethod
    def parse(cls, key: str) -> "ItemRef":
        kinds = {kind[0]: kind for kind in KINDS}
        # Verdicts' and candidates' ids share a column type: past its range no item has one.
        if not key or key[0] not in kinds or params.id_problem(key[1:], params.column_max(Verdict)):
            raise LabelError(f"no such item {key!r}: an item is v<verdict id> or c<candidate id>")
        return cls(kinds[key[0]], int(key[1:]))


# --- what can be labeled ------------------------------------------------------------------------


def items(tenant: Tenant, kind: str) -> QuerySet:
    """Every item of this kind that has votes and evidence a labeler can still read."""
    if kind == VERDICT:
        return (
            Verdict.objects.for_tenant(tenant)
            .filter(
                bears__isnull=False,
                still_true__isnull=False,
                event__erased_at__isnull=True,
                memory__deleted_at__isnull=True,
            )  # fmt: skip
            # Copies of votes already labelable under their own verdict (a short list of ids).
            .exclude(assessment_id__in=_replays(tenant))
        )
    if kind == CANDIDATE:
        return PromotionCandidate.objects.for_tenant(tenant).filter(
            supported__isnull=False, scope_fits__isnull=False, conflict__isnull=False,
            source_event__erased_at__isnull=True,
        )  # fmt: skip
    raise LabelError(f"unknown kind {kind!r}: {' or '.join(KINDS)}")


def _replays(tenant: Tenant) -> QuerySet:
    return Assessment.objects.for_tenant(tenant).filter(model_name=Assessment.REPLAYED_MODEL).values("pk")


def get_item(tenant: Tenant, ref: ItemRef):
    found = items(tenant, ref.kind).filter(pk=ref.pk)
    if ref.kind == VERDICT:
        found = found.select_related("memory", "event")
    else:
        found = found.select_related("source_event")
    item = found.first()
    if item is None:
        raise LabelError(f"item {ref.key} is not labelable here: it has no votes, or its evidence was erased")
    return item


def _target(kind: str) -> str:
    return "verdict" if kind == VERDICT else "candidate"


def active_labels(tenant: Tenant, kind: str) -> QuerySet:
    """Labels in force: not withdrawn."""
    return Label.objects.for_tenant(tenant).filter(
        withdrawn_at__isnull=True, **{f"{_target(kind)}__isnull": False}
    )


def _main_vote(kind: str) -> str:
    return "still_true" if kind == VERDICT else "supported"


def _gap(kind: str, policy: Thresholds):
    """How far the item's votes lie from the nearest threshold that decides it, in SQL."""
    if kind == VERDICT:
        return Least(
            Abs(F("still_true") - Value(policy.confirm_at)),
            Abs(F("still_true") - Value(policy.contradict_at)),
            output_field=FloatField(),
        )  # fmt: skip
    return Least(
        Abs(F("supported") - Value(policy.supported_min)),
        Abs(F("scope_fits") - Value(policy.scope_fits_min)),
        Abs(F("conflict") - Value(policy.conflict_max)), output_field=FloatField(),
    )  # fmt: skip


def _bin(vote: str):
    """Which of the BINS bins a vote (a field path) falls in, in SQL; 1.0 is in the last."""
    return Least(Floor(F(vote) * BINS), Value(BINS - 1.0), output_field=FloatField())


def fill_vote_bins(labels: QuerySet) -> int:
    """Each verdict label's vote_bin from its vote, in the database: for labels written in bulk,
    around Label.save() (a bench's). Answers how many verdict labels still have none."""
    found = Verdict.objects.filter(pk=OuterRef("verdict_id"))
    vote = Subquery(found.annotate(b=Cast(_bin("still_true"), IntegerField())).values("b")[:1])
    verdicts = labels.filter(verdict__isnull=False)
    verdicts.filter(vote_bin__isnull=True).update(vote_bin=vote)
    return verdicts.filter(vote_bin__isnull=True).count()


def bin_name(index: int) -> str:
    low, high = index / BINS, (index + 1) / BINS
    return f"{low:.1f}–{high:.1f}" + ("]" if index == BINS - 1 else ")")


# --- the stream ---------------------------------------------------------------------------------


def next_item(tenant: Tenant, labeler, kind: str, *, skipped=(), policy: Thresholds) -> ItemRef | None:
    """The item this labeler should label next, or None when there is nothing left for them.

    A second opinion first. Then new items, votes near an edge of the policy and the emptiest
    bin taking turns (near first), so a tenant with a million votes near its thresholds still
    gets the whole range covered. Every query starts from an index: the labels (few), a range
    of the main vote, or the primary key from a pseudo-random point."""
    skipped = list(skipped)
    second = _second_opinion(tenant, labeler, kind, skipped)
    if second is not None:
        return ItemRef(kind, second)
    target = _target(kind)
    labeled = Label.objects.filter(tenant=tenant, withdrawn_at__isnull=True, **{target: OuterRef("pk")})
    fresh = (
        items(tenant, kind).exclude(pk__in=skipped).annotate(labeled=Exists(labeled)).filter(labeled=False)
    )
    done = Label.objects.filter(tenant=tenant, labeler=labeler, **{f"{target}__isnull": False}).count()
    turns = [lambda: _near(fresh, kind, policy), lambda: _in_emptiest_bin(fresh, tenant, labeler, kind, done)]
    for pick in turns[::-1] if done % 2 else turns:
        found = pick()
        if found is not None:
            return ItemRef(kind, found)
    return None


def _second_opinion(tenant: Tenant, labeler, kind: str, skipped: list[int]) -> int | None:
    """The oldest item someone else labeled that wants another label. The waiting items come from
    the labels table (few beside the votes), oldest first, a batch at a time; each batch is then
    looked up among the labelable items by primary key, so one whose evidence was erased since is
    passed over. Asked as one query, PostgreSQL walked the votes' primary key from the start to
    the first waiting item (1.8 million rows, 630 ms, when the waiting ones are recent)."""
    column = f"{_target(kind)}_id"
    labels = active_labels(tenant, kind).filter(adjudicated=False)
    mine = labels.filter(labeler=labeler).values(column)
    waiting = (
        labels.exclude(**{f"{column}__in": mine})
        .exclude(**{f"{column}__in": skipped})
        .values(column)
        .annotate(n=Count("pk"))
        .filter(n__lt=LABELS_PER_ITEM)
        .order_by(column)
        .values_list(column, flat=True)
    )
    after = 0
    while batch := list(waiting.filter(**{f"{column}__gt": after})[:WAITING_BATCH]):
        found = items(tenant, kind).filter(pk__in=batch).order_by("pk").values_list("pk", flat=True).first()
        if found is not None:
            return found
        after = batch[-1]
    return None


def _near(fresh: QuerySet, kind: str, policy: Thresholds) -> int | None:
    """The unlabeled item nearest an edge of the policy, within NEAR of it. Widening bands, so a
    tenant with a million votes sorts the few nearest, not every vote within NEAR."""
    if kind == VERDICT:
        edges = [("still_true", policy.confirm_at), ("still_true", policy.contradict_at)]
    else:
        edges = [("supported", policy.supported_min), ("scope_fits", policy.scope_fits_min),
                 ("conflict", policy.conflict_max)]  # fmt: skip
    for width in NEAR_BANDS:
        reach = width + VOTE_PRECISION
        within = Q()
        for column, edge in edges:
            within |= Q(**{f"{column}__gte": edge - reach, f"{column}__lte": edge + reach})
        found = (
            fresh.filter(within)
            .annotate(gap=_gap(kind, policy))
            .filter(gap__lte=reach)
            .order_by("gap", "pk")
            .values_list("pk", flat=True)
            .first()
        )
        if found is not None:
            return found
    return None


def _in_emptiest_bin(fresh: QuerySet, tenant, labeler, kind: str, done: int) -> int | None:
    """An unlabeled item of the bin with the fewest labeled items, found from a pseudo-random
    point of the bin (it moves with the labeler's label count, `done`, so a reload shows the
    same item) along the (tenant, main vote) index."""
    column = _main_vote(kind)
    share = ((done * 7919 + labeler.pk * 104729) % 1000) / 1000
    for row in sorted(
        (r for r in bins(tenant, labeler, kind) if r.items > r.labeled),
        key=lambda r: (r.labeled, r.index),
    ):
        low, high = row.index / BINS, (row.index + 1) / BINS
        in_bin = fresh.filter(**{f"{column}__gte": low})
        if row.index < BINS - 1:
            in_bin = in_bin.filter(**{f"{column}__lt": high})
        pivot = low + share * (high - low)
        ids = in_bin.values_list("pk", flat=True)
        pick = (
            ids.filter(**{f"{column}__gte": pivot}).order_by(column, "pk").first()
            or ids.filter(**{f"{column}__lt": pivot}).order_by(f"-{column}", "-pk").first()
        )
        if pick:
            return pick
    return None


def record(tenant: Tenant, labeler, ref: ItemRef, *, outcome: str, alternatives=(), note: str = "") -> Label:
    """One labeler's outcome for one item. Refused, with nothing written, when the outcome is not
    one this kind of item takes, or the labeler's label for it already stands."""
    fields = _checked(ref, outcome, alternatives, note)
    with transaction.atomic():
        item = get_item(tenant, ref)
        _lock(item)
        if _labels_of(tenant, ref).filter(labeler=labeler, adjudicated=False).exists():
            raise LabelError(f"you have already labeled {ref.key}: undo it first to change your answer")
        return Label.objects.create(tenant=tenant, labeler=labeler, **fields, **{_target(ref.kind): item})


def _checked(ref: ItemRef, outcome: str, alternatives, note: str) -> dict:
    """A label's fields once the answer is one this kind of item takes; LabelError naming what is
    wrong otherwise."""
    allowed = [value for value, _ in OUTCOMES[ref.kind]]
    if outcome not in allowed:
        raise LabelError(f"outcome {outcome!r} is not one of {', '.join(allowed)}")
    unknown = [value for value in alternatives if value not in allowed]
    if unknown:
        raise LabelError(f"alternative(s) {', '.join(map(repr, unknown))} not among {', '.join(allowed)}")
    note = (note or "").strip()
    problem = textlimits.too_long(note, NOTE_MAX)
    if problem:
        raise LabelError(f"the note {problem}")
    return {"outcome": outcome, "alternatives": sorted(set(alternatives) - {outcome}), "note": note or None}


def undo(tenant: Tenant, labeler) -> Label | None:
    """Withdraw this labeler's latest label in force (kept, marked withdrawn); None if none."""
    return withdraw_newest(
        Label.objects.for_tenant(tenant).filter(labeler=labeler, withdrawn_at__isnull=True, adjudicated=False)
    )


def withdraw_newest(in_force: QuerySet):
    """Withdraw the newest of these labels in force (kept, marked withdrawn); None if none. Also
    the sampled audits' undo (quality/results.py)."""
    with transaction.atomic():
        latest = in_force.order_by("-created_at", "-pk").values_list("pk", flat=True).first()
        # Locked by id, without a row limit (Oracle refuses FOR UPDATE with one); withdrawn only
        # if still in force, so two undos at once withdraw it once.
        label = next(iter(in_force.select_for_update().filter(pk=latest)), None)
        if label is None:
            return None
        label.withdrawn_at = timezone.now()
        label.save(update_fields=["withdrawn_at"])
        return label


def _lock(item) -> None:
    """Lock the item's row (a whole-queryset FOR UPDATE: Oracle refuses one with a row limit), so
    two requests cannot both find it unlabeled and both label it."""
    list(type(item).objects.select_for_update().filter(pk=item.pk).values_list("pk", flat=True))


def ref_of(label: Label) -> ItemRef:
    return ItemRef(VERDICT, label.verdict_id) if label.verdict_id else ItemRef(CANDIDATE, label.candidate_id)


def _labels_of(tenant: Tenant, ref: ItemRef) -> QuerySet:
    return active_labels(tenant, ref.kind).filter(**{f"{_target(ref.kind)}_id": ref.pk})


def labels_of(tenant: Tenant, ref: ItemRef) -> list[Label]:
    return list(_labels_of(tenant, ref).select_related("labeler").order_by("created_at", "pk"))


# --- progress ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinProgress:
    index: int
    items: int
    labeled: int  # by anyone
    mine: int

    @property
    def name(self) -> str:
        return bin_name(self.index)


@dataclass(frozen=True)
class Progress:
    kind: str
    bins: list[BinProgress]
    mine: int  # this labeler's labels in force
    last_hour: int
    by_labeler: list[tuple[object, int]]  # (person, labels in force), most first

    @property
    def items(self) -> int:
        return sum(row.items for row in self.bins)

    @property
    def labeled(self) -> int:
        return sum(row.labeled for row in self.bins)


def progress(tenant: Tenant, labeler, kind: str) -> Progress:
    labels = active_labels(tenant, kind).filter(adjudicated=False)
    # Each labeler's labels, and in the last hour, in one pass (the labeler's own hour is theirs).
    recent = Count("pk", filter=Q(created_at__gte=timezone.now() - timedelta(hours=1)))
    per_labeler = labels.values_list("labeler").annotate(n=Count("pk"), recent=recent).order_by()
    counts, hour = {}, {}
    for pk, n, in_hour in per_labeler:
        counts[pk], hour[pk] = n, in_hour
    people = get_user_model().objects.in_bulk(list(counts))
    return Progress(
        kind=kind,
        bins=bins(tenant, labeler, kind),
        mine=counts.get(labeler.pk, 0),
        last_hour=hour.get(labeler.pk, 0),
        by_labeler=sorted(((people[pk], n) for pk, n in counts.items()), key=lambda pair: -pair[1]),
    )


def bins(tenant: Tenant, labeler, kind: str) -> list[BinProgress]:
    """Votes per bin (vote_totals), and labeled items per bin (counted from the labels, few
    beside the votes)."""
    totals = vote_totals(tenant, kind)
    target = _target(kind)
    labels = active_labels(tenant, kind).filter(adjudicated=False)
    # A vote's bin is kept on its labels (votes are sealed, never rewritten); a candidate's votes
    # are its own columns, so its labels are counted by them (few candidates beside the votes).
    binned = labels.annotate(bin=F("vote_bin") if kind == VERDICT else _bin(f"{target}__{_main_vote(kind)}"))
    per_bin = (
        binned.values("bin")
        .annotate(
            labeled=Count(target, distinct=True),
            mine=Count(target, distinct=True, filter=Q(labeler=labeler)),
        )
        .order_by()
    )
    found = {int(row["bin"]): row for row in per_bin if row["bin"] is not None}
    return [
        BinProgress(
            i,
            max(totals.get(i, 0), found.get(i, {}).get("labeled", 0)),
            found.get(i, {}).get("labeled", 0),
            found.get(i, {}).get("mine", 0),
        )
        for i in range(BINS)
    ]


def vote_totals(tenant: Tenant, kind: str) -> dict[int, int]:
    """Votes per bin. Candidates: counted, kept a minute. Verdicts (millions): only ever added,
    so the counts a job kept up to some vote (the figure "vote_bins") plus the votes since, read
    from the primary key's end; while a large tenant's first count runs, what the labels show."""
    if kind == CANDIDATE:
        key = f"label-bins:{tenant.pk}:{kind}"
        totals = cache.get(key)
        if totals is None:
            totals = _votes_per_bin(tenant, kind)
            cache.set(key, totals, ITEM_COUNTS_SECONDS)
        return totals
    shown = figures.read("vote_bins", tenant)
    if not shown.ready:
        return {}
    since = _votes_per_bin(tenant, kind, after=shown.value["upto"])
    return {i: int(shown.value["counts"].get(str(i), 0)) + since[i] for i in range(BINS)}


@figures.figure("vote_bins", standing=True, rests_on=("votes",))
def kept_vote_bins(tenant: Tenant) -> dict:
    """Every verdict's vote per bin, up to the newest verdict when counting began."""
    upto = figures.newest_id(Verdict, tenant.pk) or 0
    counts = _votes_per_bin(tenant, VERDICT, upto=upto)
    return {"upto": upto, "counts": {str(i): n for i, n in counts.items()}}


def _votes_per_bin(tenant: Tenant, kind: str, *, after: int = 0, upto: int | None = None) -> dict[int, int]:
    """One pass over the tenant's votes (those with ids in (after, upto]), ten filtered counts;
    not a GROUP BY over the joined rows `items()` reads: an item whose evidence was erased since
    still counts here (the bins' sizes, not what is left to label)."""
    column = _main_vote(kind)
    ranges = {}
    for index in range(BINS):
        in_bin = Q(**{f"{column}__gte": index / BINS})
        if index < BINS - 1:
            in_bin &= Q(**{f"{column}__lt": (index + 1) / BINS})
        ranges[f"bin{index}"] = Count("pk", filter=in_bin)
    model = items(tenant, kind).model
    rows = model.objects.filter(tenant=tenant)
    if after:
        # Bounded above by the tenant's newest too: given only `id > after`, PostgreSQL read the
        # primary key from there, filtering by tenant, and another tenant's newer votes (two
        # tenants of 2,000,000 memories: 20,005,990 rows, 2.5 s on every next item). Between the
        # two bounds are only the votes written since the figure was counted. The newest is read
        # first, a number in the query: as a subquery its bound was unknown when planning, and
        # PostgreSQL launched two parallel workers to count an empty range (7 ms of every item).
        rows = rows.filter(pk__gt=after, pk__lte=figures.newest_id(model, tenant.pk) or after)
    if upto is not None:
        rows = rows.filter(pk__lte=upto)
    counts = rows.aggregate(**ranges)
    return {index: counts[f"bin{index}"] for index in range(BINS)}


# --- agreement, disagreements and the gold set ---------------------------------------------------


@dataclass
class ItemLabels:
    ref: ItemRef
    labels: list[Label] = field(default_factory=list)  # labelers' labels in force
    ruling: Label | None = None  # a lead's adjudication, which wins

    @property
    def outcomes(self) -> list[str]:
        return [label.outcome for label in self.labels]

    @property
    def disputed(self) -> bool:
        return len(set(self.outcomes)) > 1

    @property
    def gold(self) -> str | None:
        """The outcome calibration scores against: the ruling, else what every labeler said;
        None while labelers disagree and nobody has ruled."""
        if self.ruling is not None:
            return self.ruling.outcome
        if self.labels and not self.disputed:
            return self.labels[0].outcome
        return None

    @property
    def lenient(self) -> tuple[str, ...]:
        """Other outcomes accepted: the ruling's alternatives, or every agreeing labeler's."""
        gold = self.gold
        chosen = [self.ruling] if self.ruling is not None else self.labels
        return tuple(sorted({alt for label in chosen for alt in (label.alternatives or []) if alt != gold}))


def labeled_items(tenant: Tenant, kind: str, *, labeled_by=None) -> list[ItemLabels]:
    """Every item with a label in force, its labels grouped, in item order. `labeled_by`: only
    the items that person's own label in force is on (what a blind labeler's numbers count)."""
    target = f"{_target(kind)}_id"
    labels = active_labels(tenant, kind)
    if labeled_by is not None:
        theirs = labels.filter(labeler=labeled_by, adjudicated=False).values(target)
        labels = labels.filter(**{f"{target}__in": theirs})
    grouped: dict[int, ItemLabels] = {}
    for label in labels.order_by(target, "created_at", "pk"):
        pk = getattr(label, target)
        entry = grouped.setdefault(pk, ItemLabels(ItemRef(kind, pk)))
        if label.adjudicated:
            entry.ruling = label  # the latest ruling wins
        else:
            entry.labels.append(label)
    return list(grouped.values())


@dataclass(frozen=True)
class LabelerAgreement:
    kind: str
    items: int  # items with two labels or more
    unanimous: int
    fleiss: float | None
    pairs: list[tuple[str, str, Agreement]]  # two labelers, Cohen's kappa over the items both labeled

    @property
    def rate(self) -> float | None:
        return self.unanimous / self.items if self.items else None


def labeler_agreement(
    tenant: Tenant, kind: str, *, names: dict[int, str], entries: list[ItemLabels] | None = None
) -> LabelerAgreement:
    """How far labelers agree: the share of items where all agree, Fleiss' kappa over every item
    with two labels or more, and Cohen's kappa for each pair of labelers. `entries`: the
    labeled items when the caller has read them already."""
    order = [value for value, _ in OUTCOMES[kind]]
    if entries is None:
        entries = labeled_items(tenant, kind)
    multi = [entry for entry in entries if len(entry.labels) >= 2]
    by_pair: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for entry in multi:
        answers = {label.labeler_id: label.outcome for label in entry.labels}
        people = sorted(answers)
        for i, a in enumerate(people):
            for b in people[i + 1 :]:
                by_pair[(a, b)][(answers[a], answers[b])] += 1
    pairs = [
        (names.get(a, f"user {a}"), names.get(b, f"user {b}"), from_counts(counts, order=order))
        for (a, b), counts in sorted(by_pair.items(), key=lambda kv: -sum(kv[1].values()))
    ]
    return LabelerAgreement(
        kind=kind,
        items=len(multi),
        unanimous=sum(1 for entry in multi if not entry.disputed),
        fleiss=fleiss_kappa([Counter(entry.outcomes) for entry in multi]),
        pairs=pairs,
    )


def disputes(tenant: Tenant, kind: str, *, entries: list[ItemLabels] | None = None) -> list[ItemLabels]:
    """Items where labelers disagree and no lead has ruled yet, oldest first."""
    if entries is None:
        entries = labeled_items(tenant, kind)
    return [entry for entry in entries if entry.disputed and entry.ruling is None]


def dispute_count(tenant: Tenant, kind: str) -> int:
    """How many `disputes()` there are, counted in the database (the labeling page shows it to a
    lead after every label: reading every label for it would grow with the labels)."""
    column = f"{_target(kind)}_id"
    return (
        active_labels(tenant, kind)
        .values(column)
        .annotate(
            outcomes=Count("outcome", distinct=True, filter=Q(adjudicated=False)),
            rulings=Count("pk", filter=Q(adjudicated=True)),
        )
        .filter(outcomes__gt=1, rulings=0)
        .count()
    )


def with_items(tenant: Tenant, kind: str, entries: list[ItemLabels]) -> list[tuple[ItemLabels, object]]:
    """Each entry with its item, in one query; an item whose evidence was erased since is left out."""
    related = ("memory", "event") if kind == VERDICT else ("source_event",)
    found = items(tenant, kind).select_related(*related).in_bulk([entry.ref.pk for entry in entries])
    return [(entry, found[entry.ref.pk]) for entry in entries if entry.ref.pk in found]


def adjudicate(tenant: Tenant, lead, ref: ItemRef, *, outcome: str, alternatives=(), note: str = "") -> Label:
    """A lead's ruling on an item: a label of its own that wins; the labelers' are kept."""
    fields = _checked(ref, outcome, alternatives, note)
    with transaction.atomic():
        item = get_item(tenant, ref)
        _lock(item)
        if not _labels_of(tenant, ref).filter(adjudicated=False).exists():
            raise LabelError(f"{ref.key} has no labels to rule between")
        earlier = _labels_of(tenant, ref).filter(adjudicated=True)
        earlier.update(withdrawn_at=timezone.now())  # a new ruling replaces the last, which is kept
        return Label.objects.create(
            tenant=tenant, labeler=lead, adjudicated=True, **fields, **{_target(ref.kind): item}
        )


def active_policy(tenant: Tenant) -> tuple[PolicyVersion, Thresholds]:
    version = PolicyVersion.objects.for_tenant(tenant).active()
    return version, Thresholds.from_data(version.thresholds)

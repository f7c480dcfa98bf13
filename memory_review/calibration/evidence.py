"""The labelled set as evidence (issue 9): gold labels joined to their stored votes, as replay
cases, and everything the calibration page shows about the active policy on them.

The labelled verdicts become the same `replay.Case` a replay-set file holds, so the page, the
JSONL export and `manage.py calibrate` score them with one implementation (replay.py, sweep.py).
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from memory_review.assessments.models import PromotionCandidate, Verdict
from memory_review.assessments.policy import Thresholds
from memory_review.tenancy.models import Tenant

from . import promotion_sweep, reliability, sweep
from .labeling import (
    CANDIDATE,
    CANDIDATE_DECISION,
    VERDICT,
    ItemLabels,
    ItemRef,
    active_labels,
    labeled_items,
)
from .replay import Case, Report, replay

# The thresholds drawn as one-at-a-time curves.
CURVED = ("confirm_min", "contradict_max", "margin", "bears_min", "replace_min", "partial_min")
PROMOTION_CURVED = ("supported_min", "scope_fits_min", "conflict_max", "promote_margin")


@dataclass(frozen=True)
class Labeled:
    """Counts behind the gold set."""

    items: int  # items with a label in force
    gold: int  # ... of which have a gold outcome (agreed, or ruled)
    awaiting_ruling: int  # labelers disagree and no lead has ruled


def verdict_cases(tenant: Tenant, *, labeled_by=None) -> tuple[list[Case], Labeled]:
    """The gold verdicts as replay cases; `labeled_by`: only those that person labeled too."""
    entries = labeled_items(tenant, VERDICT, labeled_by=labeled_by)
    gold = {entry.ref.pk: entry for entry in entries if entry.gold is not None}
    rows = (
        Verdict.objects.for_tenant(tenant)
        .filter(pk__in=list(gold), bears__isnull=False)
        .values_list("pk", "event__source", "memory__kind", *Verdict.VOTE_NAMES)
        .order_by("pk")
    )
    cases = [_case(gold[pk], source, kind, votes) for pk, source, kind, *votes in rows]
    return cases, _counts(entries)


def _case(entry: ItemLabels, source: str | None, kind: str, votes: list) -> Case:
    return Case(
        id=f"v{entry.ref.pk}",
        votes={name: float(v or 0.0) for name, v in zip(Verdict.VOTE_NAMES, votes, strict=True)},
        expected=entry.gold,
        source=source or "",
        category=kind,
        lenient=entry.lenient,
    )


def candidate_cases(
    tenant: Tenant, *, labeled_by=None
) -> tuple[list[tuple[promotion_sweep.PromotionCase, str]], Labeled]:
    """Each labelled candidate as a promotion case, with the labelers' own outcome beside the
    decision it means (the reliability of `supported` and `scope_fits` needs the reason)."""
    entries = labeled_items(tenant, CANDIDATE, labeled_by=labeled_by)
    gold = {entry.ref.pk: entry.gold for entry in entries if entry.gold is not None}
    rows = (
        PromotionCandidate.objects.for_tenant(tenant)
        .filter(pk__in=list(gold), supported__isnull=False, scope_fits__isnull=False, conflict__isnull=False)
        .values_list("pk", "supported", "scope_fits", "conflict")
        .order_by("pk")
    )
    cases = [
        (
            promotion_sweep.PromotionCase(
                id=f"c{pk}",
                votes={"supported": s, "scope_fits": f, "conflict": c},
                expected=CANDIDATE_DECISION[gold[pk]],
            ),
            gold[pk],
        )
        for pk, s, f, c in rows
    ]
    return cases, _counts(entries)


def _counts(entries) -> Labeled:
    return Labeled(
        items=len(entries),
        gold=sum(1 for entry in entries if entry.gold is not None),
        awaiting_ruling=sum(1 for entry in entries if entry.gold is None),
    )


def reliabilities(cases: list[Case], candidates) -> list[reliability.Reliability]:
    """Each question's reliability over the cases whose gold label speaks to it."""
    asked = [
        (question, [(case.votes, case.expected) for case in cases])
        for question in reliability.VERDICT_QUESTIONS
    ]
    asked += [
        (question, [(case.votes, label) for case, label in candidates])
        for question in reliability.CANDIDATE_QUESTIONS
    ]
    return [
        reliability.reliability(
            question,
            [
                (votes[question], yes)
                for votes, gold in labeled
                if (yes := reliability.outcome_for(question, gold)) is not None
            ],
        )
        for question, labeled in asked
    ]


@dataclass
class Invalidation:
    labeled: Labeled
    cases: list[Case]
    report: Report | None  # the active policy replayed over the gold set
    sweep: sweep.Sweep | None
    curves: dict[str, list[sweep.Score]]


@dataclass
class Promotion:
    labeled: Labeled
    pairs: list  # (PromotionCase, the labelers' own outcome), as candidate_cases() gives them
    n: int
    baseline: promotion_sweep.PromotionScore | None
    confusion: dict[tuple[str, str], int]
    sweep: promotion_sweep.PromotionSweep | None
    curves: dict[str, list[promotion_sweep.PromotionScore]]


def invalidation(
    tenant: Tenant, policy: Thresholds, *, cases: list[Case] | None = None, labeled_by=None
) -> Invalidation:
    labeled = None
    if cases is None:
        cases, labeled = verdict_cases(tenant, labeled_by=labeled_by)
    if not cases:
        return Invalidation(labeled, cases, None, None, {})
    arrays = sweep.Cases(cases)
    return Invalidation(
        labeled=labeled,
        cases=cases,
        report=replay(cases, policy),
        sweep=sweep.sweep(cases, policy),
        curves={name: sweep.curve(arrays, policy, name) for name in CURVED},
    )


def promotion(tenant: Tenant, policy: Thresholds, *, labeled_by=None) -> Promotion:
    pairs, labeled = candidate_cases(tenant, labeled_by=labeled_by)
    cases = [case for case, _ in pairs]
    if not cases:
        return Promotion(labeled, pairs, 0, None, {}, None, {})
    arrays = promotion_sweep.PromotionCases(cases)
    return Promotion(
        labeled=labeled,
        pairs=pairs,
        n=len(cases),
        baseline=arrays.score(policy),
        confusion=arrays.confusion(policy),
        sweep=promotion_sweep.sweep(cases, policy),
        curves={name: promotion_sweep.curve(arrays, policy, name) for name in PROMOTION_CURVED},
    )


# --- replay sets ---------------------------------------------------------------------------------


REPLAY_CHUNK = 2000  # gold items read, and their votes and texts, at a time


def replay_set_size(tenant: Tenant) -> int:
    """The verdicts with a label in force: the most cases the replay set can hold."""
    return active_labels(tenant, VERDICT).values("verdict_id").distinct().count()


def _verdict_items(tenant: Tenant) -> Iterator[ItemLabels]:
    """The verdicts' labels in force, grouped item by item as they stream in item order: one
    item's labels in memory at a time (labeled_items holds them all, for the pages' counts)."""
    entry = None
    labels = active_labels(tenant, VERDICT).order_by("verdict_id", "created_at", "pk")
    for label in labels.iterator(chunk_size=REPLAY_CHUNK):
        if entry is None or entry.ref.pk != label.verdict_id:
            if entry is not None:
                yield entry
            entry = ItemLabels(ItemRef(VERDICT, label.verdict_id))
        if label.adjudicated:
            entry.ruling = label  # the latest ruling wins
        else:
            entry.labels.append(label)
    if entry is not None:
        yield entry


def replay_set_lines(tenant: Tenant) -> Iterator[str]:
    """The gold verdict set as replay-set JSONL (DESIGN §5), one case per line, readable by
    `manage.py calibrate` and by the import below. The memory and event ride along as free text
    for the people reading it; replay ignores them. Streamed REPLAY_CHUNK items at a time, so a
    set of any size never sits in memory."""
    gold = (entry for entry in _verdict_items(tenant) if entry.gold is not None)
    while chunk := {entry.ref.pk: entry for entry in islice(gold, REPLAY_CHUNK)}:
        rows = (
            Verdict.objects.for_tenant(tenant)
            .filter(pk__in=list(chunk), bears__isnull=False)
            .order_by("pk")
            .values_list(
                "pk", "event__source", "memory__kind", "memory__content", "event__text", *Verdict.VOTE_NAMES
            )
        )
        for pk, source, kind, content, text, *votes in rows:
            case = _case(chunk[pk], source, kind, votes)
            record = {
                "id": case.id,
                "votes": case.votes,
                "source": case.source,
                "category": case.category,
                "expected": case.expected,
                "lenient": list(case.lenient),
                "memory": content,
                "event": text,
            }
            yield json.dumps(record, ensure_ascii=False) + "\n"

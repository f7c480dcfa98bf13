"""What a sampled audit's labels say (issue 31, item 2): each item's ruling, and from the rulings
each stratum's error rate and the population's, with their intervals (quality/estimates.py).

A labeler says whether the memory is true, blind to what the policy did; an item is wrong when a
memory kept (in force, or confirmed) is not true, or when a true memory was contradicted or
superseded: a wrong memory kept, or a true one killed.

**The ruling** (documented here and on the page): a lead's ruling (`adjudicated`, the newest
standing one) decides an item; without one, an item counts when every standing label on it
agrees; where labelers disagree it waits for a lead's ruling and is not counted, so a dispute
never splits into half an error. Withdrawn labels do not count."""

import hashlib
import logging
import secrets
from dataclasses import dataclass

from celery import current_app
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Min, Q

from memory_review.calibration.labeling import withdraw_newest
from memory_review.integrity.context import acting_as

from .estimates import Estimate, Stratum, stratified_estimate, stratum_estimate
from .models import Answer, AuditItem, AuditLabel, AuditSample
from .sampling import HELD


class LabelError(ValueError):
    pass


CACHE_PREFIX = "quality"  # tests give each test its own
NOTIFY_TASK = "memory_review.quality.tasks.notify_regressions"  # named, not imported: tasks imports this
NOTIFY_AFTER_SECONDS = 60
logger = logging.getLogger(__name__)


def notify_key(tenant_id: int) -> str:
    """Set while a regression check is queued for the tenant (cleared when it starts)."""
    return f"{CACHE_PREFIX}-notify:{tenant_id}"


def _token_key(tenant_id: int) -> str:
    return f"{CACHE_PREFIX}-labels:{tenant_id}"


def labels_token(tenant_id: int) -> str:
    """A token that changes whenever a tenant's audit labels do (given, withdrawn, ruled): what is
    worked out from the labels alone is kept in the cache under it. A random token, not a count,
    so one the cache evicted never brings back figures kept under an earlier one."""
    token = cache.get(_token_key(tenant_id))
    if token is None:
        cache.add(_token_key(tenant_id), secrets.token_hex(8), None)
        token = cache.get(_token_key(tenant_id)) or "unkept"
    return token


def kept(kind: str, samples: list[AuditSample], work_out, *extra):
    """What `work_out()` finds from these samples' labels alone, kept in the cache under the
    tenant's labels token (and `extra`), so a view with no label since reads none of it."""
    tenant_id = samples[0].tenant_id
    named = ",".join(str(part) for part in (*(sample.pk for sample in samples), *extra))
    key = (
        f"{CACHE_PREFIX}-{kind}:{tenant_id}:{labels_token(tenant_id)}:"
        + (hashlib.sha256(named.encode()).hexdigest()[:16])
    )
    found = cache.get(key)
    if found is None:
        found = work_out()
        if RESULTS_SECONDS:
            cache.set(key, found, RESULTS_SECONDS)
    return found


def _labels_changed(tenant_id: int) -> None:
    """Once the labels commit: a new token, and a regression check queued (one a tenant a
    minute, however many labels a minute brings; the hourly job stays the backstop)."""

    def changed() -> None:
        try:  # a cache that does not answer never fails a label that is kept
            cache.set(_token_key(tenant_id), secrets.token_hex(8), None)
            if cache.add(notify_key(tenant_id), 1, NOTIFY_AFTER_SECONDS):
                current_app.signature(NOTIFY_TASK, args=(tenant_id,)).apply_async(
                    countdown=NOTIFY_AFTER_SECONDS
                )
        except Exception:  # the hourly job finds what the check would have; figures expire in the hour
            logger.warning("quality: a label's commit reached neither the cache nor the queue", exc_info=True)

    transaction.on_commit(changed)


def label_record(
    *, item: AuditItem, labeler, outcome: str, note: str = "", ruling: bool = False
) -> AuditLabel:
    """A labeler's answer for an item (`ruling`: a lead's, which decides a dispute); one standing
    label a person an item."""
    if outcome not in Answer.values:
        raise LabelError(f"an audit label is one of {', '.join(Answer.values)}, got {outcome!r}")
    with transaction.atomic(), acting_as(f"user:{labeler.pk}"):
        standing = AuditLabel.objects.filter(item=item, labeler=labeler, withdrawn_at__isnull=True)
        if standing.filter(adjudicated=ruling).exists():
            raise LabelError(f"you have already labeled item {item.pk}: undo that label first")
        _labels_changed(item.tenant_id)
        return AuditLabel.objects.create(
            tenant_id=item.tenant_id, item=item, labeler=labeler, outcome=outcome, note=note or None,
            adjudicated=ruling,
        )  # fmt: skip


def withdraw_latest(tenant, labeler) -> AuditLabel | None:
    """Withdraw the labeler's latest standing label (kept, marked withdrawn; a ruling is not
    undone this way); None when none stands."""
    in_force = AuditLabel.objects.for_tenant(tenant).filter(
        labeler=labeler, withdrawn_at__isnull=True, adjudicated=False
    )
    with transaction.atomic(), acting_as(f"user:{labeler.pk}"):
        label = withdraw_newest(in_force)
        if label is not None:
            _labels_changed(tenant.pk)
        return label


# What the labels alone decide (each sample's mark and results, the disputed items), kept this long:
# an item forgotten or erased since moves no mark, so what is left to label is at most this behind.
RESULTS_SECONDS = 3600

KILLED = ("contradicted", "superseded")
# A kill held for a person: the policy said the memory was no longer true, so a true one is its
# error all the same (quality/gate.py measures the policy's kills with them).
SAID_KILLED = (*KILLED, *HELD.values())


def wrong(decision: str, answer: str) -> bool:
    """Whether an item whose memory the labels found `answer` (true or false) was wrong."""
    return answer == (Answer.TRUE if decision in SAID_KILLED else Answer.FALSE)


def ruling(labels: list[AuditLabel]) -> str | None:
    """true, false, or None (no standing label, or labelers disagree with no lead's ruling)."""
    standing = [label for label in labels if label.withdrawn_at is None]
    ruled = [label for label in standing if label.adjudicated]
    if ruled:
        return max(ruled, key=lambda label: label.pk).outcome
    outcomes = {label.outcome for label in standing}
    return outcomes.pop() if len(outcomes) == 1 else None


@dataclass(frozen=True)
class StratumResult:
    key: dict
    estimate: Estimate
    drawn: int
    disputed: int  # labeled, waiting for a lead's ruling
    gone: int = 0  # unlabeled, and never to be: the memory was forgotten or its source erased since

    @property
    def unlabeled(self) -> int:
        """Items that still need a label (and can still get one)."""
        return self.drawn - self.estimate.sampled - self.disputed - self.gone


@dataclass(frozen=True)
class Results:
    sample: AuditSample
    overall: Estimate
    strata: list[StratumResult]


def results(sample: AuditSample) -> Results:
    """Each stratum's estimate from the items ruled so far, and the population's (two queries)."""
    items = list(
        AuditItem.objects.filter(sample=sample).values_list(
            "pk", "stratum", "memory__deleted_at", "memory__source_event__erased_at"
        )
    )
    labels: dict[int, list[AuditLabel]] = {}
    for label in AuditLabel.objects.filter(item__sample=sample).only(
        "pk", "item_id", "outcome", "adjudicated", "withdrawn_at"
    ):
        labels.setdefault(label.item_id, []).append(label)
    counts = [{"drawn": 0, "ruled": 0, "wrong": 0, "disputed": 0, "gone": 0} for _ in sample.strata]
    for pk, stratum, forgotten, erased in items:
        count = counts[stratum]
        count["drawn"] += 1
        said = ruling(labels.get(pk, []))
        if said is not None:
            count["ruled"] += 1
            count["wrong"] += wrong(sample.strata[stratum]["key"]["decision"], said)
        elif any(label.withdrawn_at is None for label in labels.get(pk, [])):
            count["disputed"] += 1
        elif forgotten or erased:
            count["gone"] += 1
    strata = [
        Stratum(tuple(listed["key"].values()), listed["population"], count["ruled"], count["wrong"])
        for listed, count in zip(sample.strata, counts, strict=True)
    ]
    return Results(
        sample=sample,
        overall=stratified_estimate(strata, sample.confidence),
        strata=[
            StratumResult(
                listed["key"],
                stratum_estimate(stratum, sample.confidence),
                count["drawn"],
                count["disputed"],
                count["gone"],
            )  # fmt: skip
            for listed, stratum, count in zip(sample.strata, strata, counts, strict=True)
        ],
    )


DISPUTES_SHOWN = 20


def disputes(samples, *, most: int = DISPUTES_SHOWN) -> list[tuple[AuditItem, list[AuditLabel]]]:
    """Items of these samples whose labelers disagree and no lead has ruled on, oldest label
    first, with their standing labels: what the health page asks a lead to rule on. One grouped
    query over the labels, then the few items found."""
    samples = list(samples)
    if not samples:
        return []

    def work_out() -> list[int]:  # which items; the items and their labels are read fresh below
        split = (
            AuditLabel.objects.filter(item__sample__in=samples, withdrawn_at__isnull=True)
            .values("item")
            .annotate(
                outcomes=Count("outcome", distinct=True),
                ruled=Count("pk", filter=Q(adjudicated=True)),
                first=Min("pk"),
            )
            .filter(outcomes__gt=1, ruled=0)
            .order_by("first")
            .values_list("item", flat=True)[:most]
        )
        return list(split)

    found = kept("disputes", samples, work_out, most)
    items = AuditItem.objects.filter(pk__in=found).select_related("memory")
    labels: dict[int, list[AuditLabel]] = {}
    standing = AuditLabel.objects.filter(item__in=found, withdrawn_at__isnull=True)
    for label in standing.select_related("labeler").order_by("pk"):
        labels.setdefault(label.item_id, []).append(label)
    by_pk = {item.pk: item for item in items}
    return [(by_pk[pk], labels.get(pk, [])) for pk in found if pk in by_pk]


def rule(*, item: AuditItem, lead, outcome: str, note: str = "") -> AuditLabel:
    """A lead's ruling on an item whose labelers disagree, under a lock on the item; refused
    (nothing written) when the item is not in dispute: nobody labeled it, they agree now, or a
    lead has ruled already."""
    if outcome not in Answer.values:
        raise LabelError(f"an audit label is one of {', '.join(Answer.values)}, got {outcome!r}")
    with transaction.atomic():
        list(AuditItem.objects.select_for_update().filter(pk=item.pk).values_list("pk", flat=True))
        standing = list(AuditLabel.objects.filter(item=item, withdrawn_at__isnull=True))
        if any(label.adjudicated for label in standing):
            raise LabelError(f"item a{item.pk} has a lead's ruling already")
        if len({label.outcome for label in standing}) < 2:
            raise LabelError(f"item a{item.pk} is not in dispute: its labelers do not disagree")
        return label_record(item=item, labeler=lead, outcome=outcome, note=note, ruling=True)

"""What a sampled audit's labels say (issue 31, item 2): each item's ruling, and from the rulings
each stratum's error rate and the population's, with their intervals (quality/estimates.py).

A labeler says whether the memory is true, blind to what the policy did; an item is wrong when a
memory kept (in force, or confirmed) is not true, or when a true memory was contradicted or
superseded: a wrong memory kept, or a true one killed.

**The ruling** (documented here and on the page): a lead's ruling (`adjudicated`, the newest
standing one) decides an item; without one, an item counts when every standing label on it
agrees; where labelers disagree it waits for a lead's ruling and is not counted, so a dispute
never splits into half an error. Withdrawn labels do not count, a lead's withdrawn ruling among
them (`withdraw_ruling`): the item is in dispute again."""

import logging
import secrets
import time
from dataclasses import dataclass, field

from celery import current_app
from django.core.cache import cache
from django.db import transaction

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


# What the labels alone decide is kept per stratum, each under a token of its own, and per sample
# under the sample's token. A label's commit replaces the tokens of its item's stratum and sample,
# so the next view works out that one stratum again (a few items) and reads every other stratum,
# and every other sample, as kept. Random tokens, not counts: one the cache evicted never brings
# back figures kept under an earlier one.
TOKEN_SECONDS = 24 * 3600  # a token forgotten only means its figures are worked out again


def _sample_token_key(sample_id: int) -> str:
    return f"{CACHE_PREFIX}-sample:{sample_id}"


def _stratum_token_key(sample_id: int, stratum: int) -> str:
    return f"{CACHE_PREFIX}-stratum:{sample_id}:{stratum}"


def _tokens(keys: list[str]) -> dict[str, str]:
    """Each key's token, a new one where none is kept (one round trip when all are)."""
    found = cache.get_many(keys)
    missing = [key for key in keys if key not in found]
    if missing:
        for key in missing:
            cache.add(key, secrets.token_hex(8), TOKEN_SECONDS)
        found |= cache.get_many(missing)  # another view's token where it added first
    return {key: found.get(key, "unkept") for key in keys}


def _labels_changed(tenant_id: int, sample_id: int, stratum: int) -> None:
    """Once the labels commit: new tokens for the item's stratum and then its sample (in that
    order, so a view that reads the sample's new token reads the stratum's too), and a regression
    check queued (one a tenant a minute, however many labels a minute brings; the hourly job
    stays the backstop)."""

    def changed() -> None:
        try:  # a cache that does not answer never fails a label that is kept
            cache.set(_stratum_token_key(sample_id, stratum), secrets.token_hex(8), TOKEN_SECONDS)
            cache.set(_sample_token_key(sample_id), secrets.token_hex(8), TOKEN_SECONDS)
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
        _labels_changed(item.tenant_id, item.sample_id, item.stratum)
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
    return _withdraw(in_force, labeler)


def _withdraw(in_force, person) -> AuditLabel | None:
    """Withdraw the newest of these labels in force as `person` (calibration/labeling.py), and
    once it commits move its stratum's figures; None when none stands."""
    with transaction.atomic(), acting_as(f"user:{person.pk}"):
        label = withdraw_newest(in_force)
        if label is not None:
            item = AuditItem.objects.values("tenant_id", "sample_id", "stratum").get(pk=label.item_id)
            _labels_changed(item["tenant_id"], item["sample_id"], item["stratum"])
        return label


# What the labels alone decide (each stratum's counts, each sample's results and disputed items),
# kept at most this long: an item forgotten or erased since moves no token, so what is left to
# label is at most this far behind.
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
    split: tuple[tuple[int, int], ...] = ()  # (its first standing label, item) of each disputed item


@dataclass
class _Counts:
    """One stratum's items as their labels rule them, and when that was read."""

    drawn: int = 0
    ruled: int = 0
    wrong: int = 0
    disputed: int = 0
    gone: int = 0
    split: list[tuple[int, int]] = field(default_factory=list)  # (first standing label, item)
    read_at: float = field(default_factory=time.time)


def _count(sample: AuditSample, strata: list[int] | None = None) -> dict[int, _Counts]:
    """These strata's counts (None: every stratum's), from their items and labels (two queries)."""
    items = AuditItem.objects.filter(sample=sample)
    labeled = AuditLabel.objects.filter(item__sample=sample)
    if strata is not None:
        items, labeled = items.filter(stratum__in=strata), labeled.filter(item__stratum__in=strata)
    labels: dict[int, list[AuditLabel]] = {}
    for label in labeled.only("pk", "item_id", "outcome", "adjudicated", "withdrawn_at"):
        labels.setdefault(label.item_id, []).append(label)
    counts = {n: _Counts() for n in (range(len(sample.strata)) if strata is None else strata)}
    rows = items.values_list("pk", "stratum", "memory__deleted_at", "memory__source_event__erased_at")
    for pk, stratum, forgotten, erased in rows:
        count = counts[stratum]
        count.drawn += 1
        said = ruling(labels.get(pk, []))
        standing = [label.pk for label in labels.get(pk, []) if label.withdrawn_at is None]
        if said is not None:
            count.ruled += 1
            count.wrong += wrong(sample.strata[stratum]["key"]["decision"], said)
        elif standing:
            count.disputed += 1
            count.split.append((min(standing), pk))
        elif forgotten or erased:
            count.gone += 1
    return counts


def _compose(sample: AuditSample, counts: dict[int, _Counts]) -> Results:
    strata = [
        Stratum(tuple(listed["key"].values()), listed["population"], counts[n].ruled, counts[n].wrong)
        for n, listed in enumerate(sample.strata)
    ]
    return Results(
        sample=sample,
        overall=stratified_estimate(strata, sample.confidence),
        strata=[
            StratumResult(
                listed["key"],
                stratum_estimate(stratum, sample.confidence),
                counts[n].drawn,
                counts[n].disputed,
                counts[n].gone,
            )  # fmt: skip
            for n, (listed, stratum) in enumerate(zip(sample.strata, strata, strict=True))
        ],
        split=tuple(sorted(pair for count in counts.values() for pair in count.split)),
    )


def results(sample: AuditSample) -> Results:
    """Each stratum's estimate from the items ruled so far, and the population's (two queries)."""
    return _compose(sample, _count(sample))


def results_of(samples: list[AuditSample]) -> list[Results]:
    """Each sample's results, kept: a sample's under its token, worked out on a miss from its
    strata's counts, each kept under its own token, so only the strata a label moved since are
    read again. Kept at most RESULTS_SECONDS from the oldest read they rest on: an item forgotten
    or erased since moves no count, so what is left to label is at most that far behind."""
    if not RESULTS_SECONDS:
        return [results(sample) for sample in samples]
    tokens = _tokens([_sample_token_key(sample.pk) for sample in samples])
    keys = [f"{CACHE_PREFIX}-results:{s.pk}:{tokens[_sample_token_key(s.pk)]}" for s in samples]
    packed = cache.get_many(keys)
    found = []
    for sample, key in zip(samples, keys, strict=True):
        if key in packed:
            found.append(_unpack(sample, packed[key]))
            continue
        counts = _kept_counts(sample)
        oldest = min((count.read_at for count in counts.values()), default=time.time())
        found.append(_compose(sample, counts))
        cache.set(key, _pack(found[-1]), max(1, round(RESULTS_SECONDS - (time.time() - oldest))))
    return found


# Kept as plain tuples, not the dataclasses and the sample (read from the database anyway): a page
# loads twenty-four of them, and unpickling objects costs what reading them was meant to save.
def _pack(found: Results) -> tuple:
    return (
        _estimate_tuple(found.overall),
        tuple((_estimate_tuple(row.estimate), row.drawn, row.disputed, row.gone) for row in found.strata),
        found.split,
    )


def _estimate_tuple(e: Estimate) -> tuple:
    return (e.rate, e.low, e.high, e.population, e.sampled, e.wrong)


def _unpack(sample: AuditSample, packed: tuple) -> Results:
    overall, strata, split = packed
    return Results(
        sample=sample,
        overall=Estimate(*overall),
        strata=[
            StratumResult(listed["key"], Estimate(*estimate), drawn, disputed, gone)
            for listed, (estimate, drawn, disputed, gone) in zip(sample.strata, strata, strict=True)
        ],
        split=split,
    )


def _kept_counts(sample: AuditSample) -> dict[int, _Counts]:
    token_keys = [_stratum_token_key(sample.pk, n) for n in range(len(sample.strata))]
    tokens = _tokens(token_keys)
    keys = {n: f"{CACHE_PREFIX}-counts:{sample.pk}:{n}:{tokens[key]}" for n, key in enumerate(token_keys)}
    kept = cache.get_many(list(keys.values()))
    counts = {n: kept[key] for n, key in keys.items() if key in kept}
    missing = [n for n in keys if n not in counts]
    if missing:
        fresh = _count(sample, None if len(missing) == len(keys) else missing)
        cache.set_many({keys[n]: fresh[n] for n in missing}, RESULTS_SECONDS)
        counts |= fresh
    return counts


DISPUTES_SHOWN = 20


def disputes_in(split, *, most: int = DISPUTES_SHOWN) -> list[tuple[AuditItem, list[AuditLabel]]]:
    """The disputed items of kept results (their `split`), oldest label first, with their standing
    labels, read fresh (two queries)."""
    found = [item for _, item in sorted(split)[:most]]
    if not found:
        return []
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


def withdraw_ruling(*, item: AuditItem, lead) -> AuditLabel:
    """Withdraw the lead's own standing ruling on an item (kept, marked withdrawn): its labelers'
    answers decide it again (in dispute, it waits for a ruling and counts in no estimate until
    then). Refused, nothing written, when the lead has no ruling standing on it."""
    in_force = AuditLabel.objects.filter(item=item, labeler=lead, adjudicated=True, withdrawn_at__isnull=True)
    label = _withdraw(in_force, lead)
    if label is None:
        raise LabelError(f"you have no ruling standing on item a{item.pk} to withdraw")
    return label


RULINGS_SHOWN = 10


def rulings_of(tenant, lead, samples, *, most: int = RULINGS_SHOWN) -> list[AuditLabel]:
    """The lead's standing rulings on these samples' items (the ones whose disputes the page
    shows, so a ruling taken back is ruled again there), newest first, with their memories."""
    standing = AuditLabel.objects.for_tenant(tenant).filter(
        labeler=lead, adjudicated=True, withdrawn_at__isnull=True, item__sample__in=list(samples)
    )
    return list(standing.select_related("item__memory").order_by("-pk")[:most])

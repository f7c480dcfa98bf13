"""Audit items in the labeling stream (issue 31, item 1): the items sampled audits drew, handed to
labelers beside the threshold items, at the share the tenant's plan sets, blind to what the
policy did.

A labeler answers one question of an item: is this memory true, given its evidence (the event
it came from, and for a decision the event the policy acted on)? The item's stratum (kept,
contradicted, superseded, or in force unreviewed) is not shown before the answer is in, and
neither is the memory's status: the answer must not lean on what the automation did.

An item is handed out while it has no standing label, from the newest sample first, in rank
order within it: a prefix of the ranks is a random subsample of every stratum (each stratum's
items are its lowest ranks), so the estimates stay honest however far the labeling got."""

import hashlib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from memory_review import textlimits
from memory_review.calibration.models import Label
from memory_review.tenancy.models import Tenant

from . import results, schedule
from .models import Answer, AuditItem, AuditLabel, Population

AUDIT = "audit"
OUTCOMES: tuple[tuple[str, str], ...] = (
    (Answer.TRUE.value, "True, as its evidence says"),
    (Answer.FALSE.value, "Not true: wrong, invented, or not what the evidence says"),
)
QUESTION = "Is this memory true, given its evidence?"
NOTE_MAX = 500
SPREAD = 12  # the waiting items at the front that labelers are spread over


class AuditLabelError(ValueError):
    """An audit label that cannot be recorded; nothing was written."""


def _standing(tenant: Tenant) -> QuerySet:
    return AuditLabel.objects.for_tenant(tenant).filter(withdrawn_at__isnull=True)


def labelable(tenant: Tenant) -> QuerySet:
    """Audit items whose evidence a labeler can still read (not forgotten or erased)."""
    return AuditItem.objects.for_tenant(tenant).filter(
        memory__deleted_at__isnull=True, memory__source_event__erased_at__isnull=True
    )


def waiting(tenant: Tenant) -> QuerySet:
    """Items no one has labeled yet (a withdrawn label leaves its item waiting again)."""
    labeled = _standing(tenant).filter(item=OuterRef("pk"))
    return labelable(tenant).filter(~Exists(labeled))


def next_item(tenant: Tenant, labeler, skipped=()) -> AuditItem | None:
    """The next item to label: the newest sample first, its items in rank order. Of the SPREAD
    lowest-ranked waiting items, each labeler takes a different one (by a hash of who they are and
    the item), so two people labeling at once rarely answer the same item twice; the labeled
    items stay within SPREAD of the rank order's front, a random subsample of each stratum."""
    found = waiting(tenant).exclude(pk__in=list(skipped)).order_by("-sample_id", "rank", "pk")
    front = list(found.values_list("pk", "sample_id")[:SPREAD])
    if not front:
        return None
    newest = front[0][1]
    mine = min((pk for pk, sample in front if sample == newest), key=lambda pk: _spread(labeler.pk, pk))
    return (
        AuditItem.objects.filter(pk=mine)
        .select_related("memory__source_event", "transition__verdict__event")
        .get()
    )


def _spread(labeler_pk: int, item_pk: int) -> str:
    return hashlib.sha256(f"{labeler_pk}:{item_pk}".encode()).hexdigest()


def get_item(tenant: Tenant, pk: int) -> AuditItem:
    item = (
        labelable(tenant).select_related("memory__source_event", "transition__verdict__event").filter(pk=pk)
    )
    found = item.first()
    if found is None:
        raise AuditLabelError(f"no audit item {pk} to label here: its evidence may have been erased")
    return found


def audit_turn(tenant: Tenant, labeler, *, threshold_items_left: bool, skipped=()) -> bool:
    """Whether the labeler's next item should be an audit item: while their audit labels are
    fewer than the plan's share of all their labels, and one they have not skipped is waiting
    (always, when no threshold item is left, and never at a share of 0)."""
    share = schedule.plan_of(tenant).share
    if share <= 0 or not waiting(tenant).exclude(pk__in=list(skipped)).exists():
        return False
    if not threshold_items_left or share >= 1:
        return True
    theirs = Label.objects.for_tenant(tenant).filter(labeler=labeler, adjudicated=False).count()
    audits = _standing(tenant).filter(labeler=labeler, adjudicated=False).count()
    return audits < share * (theirs + audits + 1)


def record(tenant: Tenant, labeler, pk: int, *, outcome: str, note: str = "") -> AuditLabel:
    """A labeler's answer for one audit item; AuditLabelError, with nothing written, when the item
    cannot be labeled here, the answer is not one it takes, or their label already stands."""
    note = (note or "").strip()
    problem = textlimits.too_long(note, NOTE_MAX)
    if problem:
        raise AuditLabelError(f"the note {problem}")
    with transaction.atomic():
        item = get_item(tenant, pk)
        list(AuditItem.objects.select_for_update().filter(pk=item.pk).values_list("pk", flat=True))
        try:
            return results.label_record(item=item, labeler=labeler, outcome=outcome, note=note)
        except results.LabelError as error:
            raise AuditLabelError(str(error)) from error


def undo(tenant: Tenant, labeler) -> AuditLabel | None:
    """Withdraw the labeler's latest audit label (kept, marked withdrawn); None if none stands."""
    return results.withdraw_latest(tenant, labeler)


@dataclass(frozen=True)
class Progress:
    items: int
    labeled: int
    mine: int


def progress(tenant: Tenant, labeler) -> Progress:
    """The labeler's standing audit labels, and how far the newest sample of each population is
    labeled (the draws the health page's figures rest on; older samples' items still wait in the
    stream, behind them)."""
    labels = _standing(tenant).filter(adjudicated=False)
    newest = [schedule.newest(tenant, population) for population in Population.values]
    items = labelable(tenant).filter(sample__in=[sample for sample in newest if sample])
    return Progress(
        items=items.count(),
        labeled=items.filter(Exists(labels.filter(item=OuterRef("pk")))).count(),
        mine=labels.filter(labeler=labeler).count(),
    )


def shown(item: AuditItem) -> dict:
    """What a labeler sees before answering: the memory and its evidence, not the decision."""
    decided_on = item.transition.verdict.event if item.transition and item.transition.verdict else None
    return {"memory": item.memory, "source": item.memory.source_event, "later": decided_on}


@dataclass(frozen=True)
class Reveal:
    """An audit item its labeler has answered: their answer, what the policy had done with the
    memory, whether that makes the item an error, and anyone else's answer."""

    item: AuditItem
    mine: AuditLabel
    decision: str  # in force (unreviewed), kept, contradicted or superseded
    others: list[AuditLabel]

    @property
    def words(self) -> str:
        """What the automation did, after "The automation had"."""
        if self.decision == "in force":
            return "kept it in force, unreviewed"
        if self.decision.endswith(" (held)"):
            return f"judged it {self.decision.removesuffix(' (held)')}, and held it for a person"
        return f"{self.decision} it"

    @property
    def wrong(self) -> bool:
        return results.wrong(self.decision, self.mine.outcome)


def reveal(tenant: Tenant, user, pk: int) -> Reveal | None:
    """The reveal of one audit item, or None while `user` has no standing label on it."""
    item = AuditItem.objects.for_tenant(tenant).select_related("sample", "memory").filter(pk=pk).first()
    if item is None:
        return None
    labels = list(_standing(tenant).filter(item=item).select_related("labeler").order_by("created_at", "pk"))
    mine = next((label for label in labels if label.labeler_id == user.pk and not label.adjudicated), None)
    if mine is None:
        return None
    decision = item.sample.strata[item.stratum]["key"]["decision"]
    return Reveal(item, mine, decision, [label for label in labels if label is not mine])


def newest_is_audit(tenant: Tenant, labeler) -> bool:
    """Whether the labeler's latest standing label is an audit label (so undo withdraws it)."""
    audit = _standing(tenant).filter(labeler=labeler, adjudicated=False).order_by("-created_at").first()
    if audit is None:
        return False
    other = (
        Label.objects.for_tenant(tenant)
        .filter(labeler=labeler, withdrawn_at__isnull=True, adjudicated=False)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return other is None or audit.created_at >= other

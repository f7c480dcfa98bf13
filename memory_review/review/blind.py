"""Blind labeling (issue 14, item 7): what a calibration labeler may see of an item.

An item (a stored verdict, or a promotion candidate) shows its evidence only: the memory and
the event, or the proposed memory and its source. What the policy decided, Jev's votes and other
labelers' answers appear once the labeler's own label on it is in, as the stream reveals them.
Every page that would say more about an item is either an evidence-only version built here or
a 403 that says why (`views/blind.py`); a memory no vote to label rests on is no item's
evidence, and stays closed. Numbers over many items (the calibration and agreement pages) count
only the items the labeler labeled: every count is then made of answers they have already been
shown, so no count, however small, and no change in one, can give an unlabeled item's answer
away. The stream's progress shows them their own labels per bin, not the tenant's.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import QuerySet

from memory_review.calibration import labeling
from memory_review.calibration.labeling import CANDIDATE, VERDICT, ItemRef
from memory_review.calibration.models import Label, ReplaySet
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Membership
from memory_review.tenancy.names import display_name

from .access import works_blind

SHOWN_VOTES = 50  # a memory's newest labelable votes listed on its evidence page

_COLUMN = {VERDICT: "verdict_id", CANDIDATE: "candidate_id"}


def counted_for(membership: Membership, user):
    """Whose labeled items a page's numbers count: a blind labeler's own, else everyone's (None)."""
    return user if works_blind(membership) else None


def replay_sets(membership: Membership, user) -> QuerySet:
    """The imported replay sets a viewer may score: a blind labeler only their own, as another
    person's may be this tenant's gold labels exported and brought back."""
    sets = ReplaySet.objects.for_tenant(membership.tenant)
    return sets.filter(imported_by=user) if works_blind(membership) else sets


@dataclass(frozen=True)
class Reveal:
    """An item its labeler has labeled: their answer, the policy's, and everyone else's."""

    ref: ItemRef
    item: object
    mine: Label
    others: list[tuple[str, Label]]  # (name, label), a lead's ruling among them

    @property
    def policy_said(self) -> str | None:
        return self.item.disposition if self.ref.kind == VERDICT else self.item.policy_decision

    @property
    def differs(self) -> bool:
        said = self.policy_said
        return said is not None and not labeling.same_as_policy(self.ref.kind, self.mine.outcome, said)


def _revealed(ref: ItemRef, item, labels: list[Label], user) -> Reveal | None:
    mine = next((label for label in labels if label.labeler_id == user.pk and not label.adjudicated), None)
    if mine is None:
        return None
    others = [(display_name(label.labeler), label) for label in labels if label is not mine]
    return Reveal(ref, item, mine, others)


def reveal(tenant, user, ref: ItemRef, item) -> Reveal | None:
    """The reveal of one item, or None while `user` has no label in force on it."""
    return _revealed(ref, item, labeling.labels_of(tenant, ref), user)


def _reveals(tenant, user, kind: str, found: list) -> dict[int, Reveal]:
    """The reveals of several items of one kind, their labels read in one query."""
    column = _COLUMN[kind]
    labels = defaultdict(list)
    for label in (
        labeling.active_labels(tenant, kind)
        .filter(**{f"{column}__in": [item.pk for item in found]})
        .select_related("labeler")
        .order_by("created_at", "pk")
    ):
        labels[getattr(label, column)].append(label)
    each = {item.pk: _revealed(ItemRef(kind, item.pk), item, labels[item.pk], user) for item in found}
    return {pk: shown for pk, shown in each.items() if shown is not None}


@dataclass(frozen=True)
class MemoryEvidence:
    """A memory as a blind labeler sees it: its votes they labeled, revealed, and the ones
    waiting for their label (evidence only: the event)."""

    revealed: list[Reveal]
    waiting: list  # verdicts, with their events
    more: bool  # older labelable votes than SHOWN_VOTES


def memory_evidence(tenant, user, memory: Memory) -> MemoryEvidence:
    votes = list(
        labeling.items(tenant, VERDICT)
        .filter(memory=memory)
        .select_related("event", "memory")
        .order_by("-pk")[: SHOWN_VOTES + 1]
    )
    shown = votes[:SHOWN_VOTES]
    revealed = _reveals(tenant, user, VERDICT, shown)
    return MemoryEvidence(
        revealed=[revealed[vote.pk] for vote in shown if vote.pk in revealed],
        waiting=[vote for vote in shown if vote.pk not in revealed],
        more=len(votes) > SHOWN_VOTES,
    )


def candidate_evidence(tenant, user, candidate) -> tuple[Reveal | None, ItemRef | None]:
    """A candidate's reveal for its labeler, and the item to label when they have not yet (None
    when it cannot be labeled: no votes, or its source was erased)."""
    ref = ItemRef(CANDIDATE, candidate.pk)
    shown = reveal(tenant, user, ref, candidate)
    labelable = shown is None and labeling.items(tenant, CANDIDATE).filter(pk=candidate.pk).exists()
    return shown, ref if labelable else None

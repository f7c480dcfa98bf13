"""People's gold outcomes for past votes, the evidence for tuning thresholds (DESIGN §5), and the
policy changes that evidence supports."""

import math

from django.conf import settings
from django.db import models
from django.db.models import Q

from memory_review.assessments.models import PolicyVersion, PromotionCandidate, Verdict
from memory_review.tenancy.models import SealedTenantOwned, tenant_key

VOTE_BINS = 10  # equal-width bins over [0, 1] of an item's main vote (still_true, supported)


def vote_bin(vote: float | None) -> int | None:
    """The bin a vote falls in; 1.0 is in the last (as labeling._bin says it in SQL)."""
    return None if vote is None else min(math.floor(vote * VOTE_BINS), VOTE_BINS - 1)


class Label(SealedTenantOwned):
    """One labeler's outcome for a verdict (a disposition) or a candidate (a promotion outcome).

    Several labelers may label the same item; one labeler labels an item once while the label
    stands (guarded in calibration/labeling.py: a composite unique key with a NULL column behaves
    differently on Oracle). A label is never rewritten: undo withdraws it (`withdrawn_at`), and
    a lead's ruling on a disagreement is a label of its own (`adjudicated`) that wins over the
    others, which are kept. Only erasure blanks a note.
    """

    seal_kind = "label"
    seal_fields = (
        "verdict_id", "candidate_id", "labeler_id", "outcome", "alternatives", "note", "adjudicated",
        "withdrawn_at", "created_at",
    )  # fmt: skip

    # Indexed (tenant, id) below: the tenant's newest label without reading other tenants'.
    tenant = tenant_key()
    verdict = models.ForeignKey(
        Verdict, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    candidate = models.ForeignKey(
        PromotionCandidate, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    labeler = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=16)
    alternatives = models.JSONField(
        default=list, blank=True, help_text="Other outcomes the labeler would accept (lenient scoring)."
    )
    note = models.CharField(max_length=500, null=True, blank=True)
    adjudicated = models.BooleanField(default=False, help_text="A lead's ruling where labelers disagreed.")
    withdrawn_at = models.DateTimeField(null=True, blank=True, help_text="Undone by its labeler.")
    created_at = models.DateTimeField(auto_now_add=True)
    # A verdict's label keeps the bin of its still_true vote (votes are sealed, never rewritten):
    # the labeling stream counts labels per bin from the labels alone, not by reading each one's
    # vote (7,000 probes of the votes, 28 ms on every next item at 2,000,000 memories).
    vote_bin = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__isnull=False, candidate__isnull=True)
                | Q(verdict__isnull=True, candidate__isnull=False),
                name="label_one_target_ck",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "id"], name="label_tenant_ix"),
            # The figures' mark: the tenant's latest withdrawal, without counting every label.
            models.Index(fields=["tenant", "withdrawn_at"], name="label_withdrawn_ix"),
            models.Index(fields=["tenant", "labeler", "created_at"], name="label_labeler_ix"),
        ]

    def __str__(self) -> str:
        return f"label {self.pk}: {self.outcome}"

    def save(self, *args, **kwargs):
        if self.vote_bin is None and self._state.adding and self.verdict_id:
            self.vote_bin = vote_bin(self.verdict.still_true)
        super().save(*args, **kwargs)


class PolicyProposal(SealedTenantOwned):
    """A lead's proposal to adopt thresholds as the shadow or active policy, with the evidence
    it rests on; an admin (not the proposer) adopts or declines it. Kept whatever the outcome."""

    seal_kind = "proposal"
    seal_fields = (
        "thresholds", "mode", "reason", "evidence", "proposed_by_id", "proposed_at", "decided_by_id",
        "decided_at", "decision_note", "outcome", "policy_id",
    )  # fmt: skip

    class Outcome(models.TextChoices):
        ADOPTED = "adopted", "Adopted"
        DECLINED = "declined", "Declined"

    thresholds = models.JSONField()
    mode = models.CharField(max_length=8, choices=[("shadow", "Shadow"), ("active", "Active")])
    reason = models.CharField(max_length=1000)
    evidence = models.JSONField(help_text="Label counts, metrics and the sweep behind it, when proposed.")
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    proposed_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.CharField(max_length=1000, null=True, blank=True)
    outcome = models.CharField(max_length=8, choices=Outcome.choices, null=True, blank=True)
    policy = models.OneToOneField(
        PolicyVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="proposal"
    )

    def __str__(self) -> str:
        return f"policy proposal {self.pk} ({self.outcome or 'open'})"


class ReplaySet(SealedTenantOwned):
    """A replay set imported from elsewhere (DESIGN §5 JSONL), kept verbatim once it validated
    as a whole: the calibration page can score and sweep it in place of the labelled set.
    An erasure blanks the free text of the cases that quote its subject's data."""

    seal_kind = "replay_set"
    seal_fields = ("name", "content", "cases", "imported_by_id", "created_at")

    name = models.CharField(max_length=200)
    content = models.TextField()
    cases = models.PositiveIntegerField()
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"replay set {self.name} ({self.cases} cases)"

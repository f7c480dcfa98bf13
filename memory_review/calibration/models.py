"""People's gold outcomes for past votes, the evidence for tuning thresholds (DESIGN §5)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from memory_review.assessments.models import PromotionCandidate, Verdict
from memory_review.tenancy.models import TenantOwned


class Label(TenantOwned):
    """One labeler's outcome for a verdict (a disposition) or a candidate (a decision).

    Several labelers may label the same item; one labeler labels an item once (guarded in the
    labelling service: a composite unique key with a NULL column behaves differently on Oracle).
    """

    verdict = models.ForeignKey(
        Verdict, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    candidate = models.ForeignKey(
        PromotionCandidate, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    labeler = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=16)
    note = models.CharField(max_length=500, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__isnull=False, candidate__isnull=True)
                | Q(verdict__isnull=True, candidate__isnull=False),
                name="label_one_target_ck",
            ),
        ]

    def __str__(self) -> str:
        return f"label {self.pk}: {self.outcome}"

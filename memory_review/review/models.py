"""What the review workspace keeps of its own: who is working which item."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_review.memories.models import Memory
from memory_review.tenancy.models import TenantOwned, TenantQuerySet


class ClaimQuerySet(TenantQuerySet):
    def held(self, now=None) -> "ClaimQuerySet":
        """Claims in force: not released, not lapsed."""
        return self.filter(released_at__isnull=True, expires_at__gt=now or timezone.now())


class Claim(TenantOwned):
    """A reviewer's reservation of a memory so two people do not work it at once (Langfuse's and
    LangSmith's annotation queues). It lapses at `expires_at` unless the open page renews it.
    Rows are kept after release: who held what, when, and who let go of it, is a record."""

    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="claims")
    holder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    release_note = models.CharField(max_length=200, null=True, blank=True)

    objects = ClaimQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["memory", "expires_at"], name="claim_memory_expires_ix")]
        constraints = [
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("claimed_at")), name="claim_expires_ck"
            )
        ]

    def __str__(self) -> str:
        return f"claim {self.pk} on memory {self.memory_id} by user {self.holder_id}"

"""What the review workflow keeps of its own: who is working which item."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.models import TenantOwned, TenantQuerySet


class ClaimQuerySet(TenantQuerySet):
    def held(self, now=None) -> "ClaimQuerySet":
        """Claims in force: not released, not lapsed."""
        return self.filter(released_at__isnull=True, expires_at__gt=now or timezone.now())


class Claim(TenantOwned):
    """A reviewer's reservation of a memory so two people do not work it at once (Langfuse's and
    LangSmith's annotation queues). It lapses at `expires_at` unless the open page renews it.
    Rows are kept after release: who held what, when, and who let go of it, is a record."""

    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="claims", db_index=False)
    holder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    release_note = models.CharField(max_length=200, null=True, blank=True)
    release_asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="A colleague who asked the holder to let go of it (the holder's pages say so).",
    )
    release_asked_at = models.DateTimeField(null=True, blank=True)

    objects = ClaimQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["memory", "expires_at"], name="claim_memory_expires_ix")]
        constraints = [
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("claimed_at")), name="claim_expires_ck"
            )
        ]
        db_table = "review_claim"  # created by the review app, before claims had a package of their own

    def __str__(self) -> str:
        return f"claim {self.pk} on memory {self.memory_id} by user {self.holder_id}"


class Assignment(TenantOwned):
    """A lead gives a queue item to a reviewer: whose job it is until it is decided (a claim is who
    is working on it right now). One in force per memory: a new one ends the last; and one given
    before the memory last entered review is over (it is a new stay in the queue)."""

    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="assignments", db_index=False)
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    assigned_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["memory", "ended_at"], name="assignment_memory_ix")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} to user {self.assignee_id}"


class AssignmentRule(TenantOwned):
    """Items entering review that match (a channel, a kind, words in the subject; any left blank
    matches all) are the assignee's, unless a lead gave one to someone by hand. Kept when removed."""

    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    channel = models.CharField(max_length=16, null=True, blank=True, choices=SourceEvent.Source.choices)
    kind = models.CharField(max_length=32, null=True, blank=True, choices=Memory.Kind.choices)
    subject_contains = models.CharField(max_length=200, null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField()
    removed_at = models.DateTimeField(null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    def __str__(self) -> str:
        return f"rule {self.pk} to user {self.assignee_id}"


class ReviewTarget(TenantOwned):
    """How long an item may wait in a tenant's queue before it is marked late (a lead sets it on
    the team page; REVIEW_TARGET_HOURS until then). It marks lateness and nothing else: no decision
    rests on it, so it is not sealed."""

    HOURS_MAX = 24 * 30

    hours = models.PositiveSmallIntegerField()
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    set_at = models.DateTimeField()

    objects = TenantQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant"], name="review_target_tenant_uq"),
            models.CheckConstraint(
                condition=models.Q(hours__gte=1, hours__lte=24 * 30), name="review_target_hours_ck"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.hours} h"

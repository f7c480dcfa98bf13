"""The tamper-evident audit trail: one append-only row per status change (DESIGN §2, §3)."""

from django.db import models

from memory_review.assessments.models import PromotionCandidate, Verdict
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant, TenantOwned, TenantQuerySet


class Transition(TenantOwned):
    """Append-only (a trigger refuses UPDATE and DELETE); rows form a per-tenant hash chain."""

    seq = models.PositiveBigIntegerField(help_text="Position in the tenant's chain, from 1.")
    memory = models.ForeignKey(
        Memory, on_delete=models.PROTECT, null=True, blank=True, related_name="transitions"
    )
    candidate = models.ForeignKey(
        PromotionCandidate, on_delete=models.PROTECT, null=True, blank=True, related_name="transitions"
    )
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    action = models.CharField(max_length=16)
    actor = models.CharField(max_length=120, help_text="user:<id>, policy:<version> or system:<job>")
    reason = models.CharField(max_length=1000)
    verdict = models.ForeignKey(
        Verdict, on_delete=models.PROTECT, null=True, blank=True, related_name="transitions"
    )
    row_version = models.PositiveIntegerField(help_text="The row version this transition produced.")
    request_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, help_text="HMAC-SHA256 under key_id (docs/audit.md).")
    key_id = models.CharField(
        max_length=32,
        null=True,
        blank=True,
        help_text="The audit key that signed it.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "seq"], name="transition_tenant_seq_uq"),
            models.CheckConstraint(
                condition=models.Q(memory__isnull=False, candidate__isnull=True)
                | models.Q(memory__isnull=True, candidate__isnull=False),
                name="transition_one_subject_ck",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.from_status} -> {self.to_status} by {self.actor}"


class AuditChain(models.Model):
    """The head of a tenant's chain. Locking it serialises appends; it also catches a removed tail."""

    tenant = models.OneToOneField(Tenant, on_delete=models.PROTECT, primary_key=True, related_name="+")
    seq = models.PositiveBigIntegerField(default=0)
    head_hash = models.CharField(max_length=64)

    objects = TenantQuerySet.as_manager()

    def __str__(self) -> str:
        return f"chain of {self.tenant_id} at #{self.seq}"


class AuditVerification(TenantOwned):
    """When a tenant's trail was last checked and what was found: the auditor's workspace shows
    the latest. verify_audit, the checkpoint job and the workspace's "verify now" write one."""

    verified_at = models.DateTimeField()
    intact = models.BooleanField()
    problem = models.CharField(max_length=1000, null=True, blank=True)
    seq = models.PositiveBigIntegerField(help_text="The chain's head when checked.")
    checkpoint_seq = models.PositiveBigIntegerField(null=True, blank=True)
    by = models.CharField(max_length=120)

    class Meta:
        indexes = [models.Index(fields=["tenant", "verified_at"], name="auditverify_tenant_time_ix")]

    def __str__(self) -> str:
        return f"{'intact' if self.intact else 'broken'} at {self.verified_at:%Y-%m-%d %H:%M}"

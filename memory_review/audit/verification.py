"""Checking a tenant's trail and recording what was found (the auditor's workspace shows it)."""

from django.utils import timezone

from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Tenant
from memory_review.textlimits import fit

from . import chain, checkpoints
from .models import AuditChain, AuditVerification


def verify_and_record(tenant: Tenant, *, by: str) -> AuditVerification:
    """Walk the chain against its latest checkpoint, and keep the result."""
    with tenant_context(tenant.pk):
        try:
            checkpoint = checkpoints.latest(tenant)
            problem = chain.verify(tenant, checkpoint=checkpoint)
        except checkpoints.CheckpointError as exc:
            checkpoint, problem = None, f"tenant {tenant.slug}: {exc}"
        head = AuditChain.objects.for_tenant(tenant).first()
        return AuditVerification.objects.create(
            tenant=tenant,
            verified_at=timezone.now(),
            intact=problem is None,
            problem=fit(str(problem), 1000) if problem else None,
            seq=head.seq if head else 0,
            checkpoint_seq=checkpoint.seq if checkpoint else None,
            by=by,
        )


def latest(tenant: Tenant) -> AuditVerification | None:
    return AuditVerification.objects.for_tenant(tenant).order_by("-verified_at", "-pk").first()

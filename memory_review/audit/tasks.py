"""Thin Celery tasks for the audit trail (STYLE §6)."""

from celery import shared_task

from memory_review.tenancy.models import Tenant

from . import verification
from .context import acting_as
from .verification import verify_and_checkpoint


@shared_task(name="memory_review.audit.tasks.checkpoint_all")
def checkpoint_all() -> int:
    """Celery beat's job every AUDIT_CHECKPOINT_MINUTES, and once when beat starts: verify each
    tenant's trail and, when it is intact, append a signed checkpoint of its heads (a broken
    trail is never vouched for). Checkpoints that merely stopped are this job's to resume."""
    written = 0
    with acting_as("system:audit-checkpoint"):
        for tenant in Tenant.objects.order_by("slug"):
            written += verify_and_checkpoint(tenant, by="system:audit-checkpoint")[1] is not None
    return written


@shared_task(name="memory_review.audit.tasks.verify_run")
def verify_run(tenant_id: int, pk: int) -> str:
    """A person's "Verify now": the whole trail, with its progress on the audit page."""
    return verification.verification_run(tenant_id, pk)

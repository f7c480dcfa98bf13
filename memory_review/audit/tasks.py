"""Thin Celery tasks for the audit trail (STYLE §6)."""

from celery import shared_task

from memory_review.tenancy.models import Tenant

from . import checkpoints
from .context import acting_as
from .verification import verify_and_record


@shared_task(name="memory_review.audit.tasks.checkpoint_all")
def checkpoint_all() -> int:
    """Celery beat's job every AUDIT_CHECKPOINT_MINUTES, and once when beat starts: verify each
    tenant's trail and, when it is intact, append a signed checkpoint of its heads (a broken
    trail is never vouched for). Checkpoints that merely stopped are this job's to resume."""
    written = 0
    with acting_as("system:audit-checkpoint"):
        for tenant in Tenant.objects.order_by("slug"):
            result = verify_and_record(tenant, by="system:audit-checkpoint")
            if result.intact or result.stale_only:
                checkpoints.write(tenant)
                written += 1
                if result.stale_only:  # say at once that it is whole again
                    verify_and_record(tenant, by="system:audit-checkpoint")
    return written

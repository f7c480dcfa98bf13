"""Thin Celery tasks for the audit trail (STYLE §6)."""

from celery import shared_task

from memory_review.tenancy.models import Tenant

from . import checkpoints
from .verification import verify_and_record


@shared_task(name="memory_review.audit.tasks.checkpoint_all")
def checkpoint_all() -> int:
    """Celery beat's job every AUDIT_CHECKPOINT_MINUTES: verify each tenant's trail and, when it
    is intact, append a signed checkpoint of its head (a broken chain is never vouched for)."""
    written = 0
    for tenant in Tenant.objects.filter(is_active=True).order_by("slug"):
        if verify_and_record(tenant, by="system:audit-checkpoint").intact:
            checkpoints.write(tenant)
            written += 1
    return written

"""Thin Celery tasks for the audit trail (STYLE §6)."""

from celery import shared_task

from memory_review.tenancy.models import Tenant

from . import checkpoints


@shared_task(name="memory_review.audit.tasks.checkpoint_all")
def checkpoint_all() -> int:
    """Celery beat's job every AUDIT_CHECKPOINT_MINUTES: one signed checkpoint a tenant."""
    tenants = list(Tenant.objects.order_by("slug"))
    for tenant in tenants:
        checkpoints.write(tenant)
    return len(tenants)

"""Thin Celery tasks for webhooks (STYLE §6): ids in, services do the work (webhooks.py)."""

import logging

from celery import shared_task

from memory_review.integrity.db_context import tenant_context
from memory_review.tenancy.models import Tenant

from . import webhooks

logger = logging.getLogger(__name__)


@shared_task(name=webhooks.FAN_OUT_TASK)
def fan_out(tenant_id: int) -> int:
    with tenant_context(tenant_id):
        return len(webhooks.fan_out(tenant_id))


@shared_task(name=webhooks.DELIVER_TASK)
def deliver(tenant_id: int, delivery_id: int) -> str:
    with tenant_context(tenant_id):
        return webhooks.send(tenant_id, delivery_id)


@shared_task(name="memory_review.agents.tasks.sweep_webhooks")
def sweep_webhooks() -> int:
    """Celery beat's job every WEBHOOK_SWEEP_SECONDS: retries that are due, and lost first tries."""
    queued = 0
    for tenant_id in Tenant.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True):
        try:
            with tenant_context(tenant_id):
                queued += webhooks.sweep(tenant_id)
        except Exception:  # one tenant the job cannot reach must not stop the others'
            logger.exception("webhook sweep: tenant %s skipped", tenant_id)
    return queued

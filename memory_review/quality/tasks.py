"""Thin Celery tasks for sampled audits (STYLE §6; quality/schedule.py)."""

from celery import shared_task
from django.core.cache import cache

from memory_review.integrity.context import acting_as
from memory_review.integrity.db_context import tenant_context
from memory_review.tenancy.models import Tenant

from . import notices, schedule
from .results import NOTIFY_TASK, notify_key

DRAW_TASK = "memory_review.quality.tasks.draw"


@shared_task(name="memory_review.quality.tasks.draw_due")
def draw_due() -> int:
    """Beat's job every QUALITY_DRAW_CHECK_SECONDS: the sampled audits due under each tenant's plan."""
    return schedule.draw_due()


@shared_task(name=DRAW_TASK, bind=True, max_retries=20)
def draw(self, tenant_id: int, population: str, by: str) -> int:
    """A lead's "Draw now", run by a worker (a draw reads the whole population); the items drawn.
    While another draw of the tenant's runs, it waits its turn (retried in half a minute)."""
    tenant = Tenant.objects.get(pk=tenant_id)
    with tenant_context(tenant_id), acting_as(by), schedule.drawing(tenant) as mine:
        if mine:
            return schedule.draw_for(tenant, population, by=by).items
    raise self.retry(countdown=30)


@shared_task(name=NOTIFY_TASK)
def notify_regressions(tenant_id: int) -> int:
    """A minute after audit labels changed (results.py nudges it): tell the agents of a regression
    those labels revealed, rather than at beat's next hourly pass."""
    cache.delete(notify_key(tenant_id))  # a label committed from now on queues the next check
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:  # queued against another database, or a tenant since removed
        return 0
    with tenant_context(tenant_id):
        return notices.notify_regressions(tenant)

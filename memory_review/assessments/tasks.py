"""Thin Celery tasks: ids in, a service call, retries owned here (STYLE §6). Work is queued
through `dispatch`, which names these tasks without importing them."""

import logging

from celery import shared_task
from django.db import OperationalError

from memory_review.integrity.db_context import tenant_context
from memory_review.ops import logs

from . import recovery, screening
from .dispatch import RUN_ASSESSMENT, SCREEN_MEMORY
from .jev import JevError
from .leases import AssessmentBusy
from .models import Assessment
from .services import run_assessment as run

logger = logging.getLogger(__name__)


@shared_task(
    name=RUN_ASSESSMENT, bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5
)
def run_assessment(self, tenant_id: int, assessment_id: int) -> str:
    with tenant_context(tenant_id), logs.bound(logs.assessment_id, assessment_id):
        try:
            return run(tenant_id=tenant_id, assessment_id=assessment_id).state
        except AssessmentBusy as busy:  # a duplicate delivery: come back when the lease lapses
            raise self.retry(countdown=busy.seconds + 1, max_retries=None) from busy
        except Assessment.DoesNotExist:  # queued against another database, or a rolled-back write
            logger.warning(
                "assessment %s of tenant %s does not exist: task dropped", assessment_id, tenant_id
            )
            return "missing"


@shared_task(name=SCREEN_MEMORY, bind=True, max_retries=6)
def screen_memory(self, tenant_id: int, memory_id: int) -> float | None:
    """Jev's instruction vote on a memory just written (screening.py); retried, further apart each
    time, when Jev does not answer."""
    with tenant_context(tenant_id):
        try:
            vote = screening.screen(memory_id)
            return vote.value if vote else None
        except JevError as exc:
            logger.warning("memory %s: no instruction vote yet (%s); trying again", memory_id, exc)
            screening.failed(memory_id, exc)
            # Under the broker's visibility timeout (600 s), or Redis hands the task out twice.
            raise self.retry(exc=exc, countdown=min(30 * 2**self.request.retries, 300)) from exc


@shared_task(name="memory_review.assessments.tasks.sweep_screenings")
def sweep_screenings() -> int:
    """Celery beat's job every SCREEN_SWEEP_SECONDS (screening.py, `sweep`)."""
    return screening.sweep()


@shared_task(name="memory_review.assessments.tasks.reap_lapsed_leases")
def reap_lapsed_leases() -> list[int]:
    """Celery beat's job every ASSESSMENT_REAP_SECONDS (recovery.py)."""
    return recovery.reap_lapsed_leases()

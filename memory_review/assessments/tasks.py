"""Thin Celery tasks: ids in, a service call, retries owned here (STYLE §6)."""

from celery import shared_task
from django.db import OperationalError

from memory_review.tenancy.db_context import tenant_context

from .models import Assessment


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def run_assessment(tenant_id: int, assessment_id: int) -> str:
    from .services import run_assessment as run

    with tenant_context(tenant_id):
        return run(assessment_id).state


def enqueue_assessment(assessment: Assessment) -> None:
    """Called on commit, so the worker never looks for a row that is not there yet."""
    run_assessment.delay(assessment.tenant_id, assessment.pk)

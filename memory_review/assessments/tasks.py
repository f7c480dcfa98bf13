"""Thin Celery tasks: ids in, a service call, retries owned here (STYLE §6)."""

from collections.abc import Callable

from celery import shared_task
from django.db import OperationalError, transaction

from memory_review.tenancy.db_context import tenant_context

from .leases import AssessmentBusy
from .models import Assessment


@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def run_assessment(self, tenant_id: int, assessment_id: int) -> str:
    from .services import run_assessment as run

    with tenant_context(tenant_id):
        try:
            return run(tenant_id=tenant_id, assessment_id=assessment_id).state
        except AssessmentBusy as busy:  # a duplicate delivery: come back when the lease lapses
            raise self.retry(countdown=busy.seconds + 1, max_retries=None) from busy


def enqueue_assessment(assessment: Assessment) -> None:
    run_assessment.delay(assessment.tenant_id, assessment.pk)


def enqueue_on_commit(assessment: Assessment, enqueue: Callable[[Assessment], None] | None = None) -> None:
    """Queue it once the transaction commits, so the worker never looks for a row that is not
    there yet. Tests pass their own `enqueue`."""
    send = enqueue or enqueue_assessment
    transaction.on_commit(lambda: send(assessment))

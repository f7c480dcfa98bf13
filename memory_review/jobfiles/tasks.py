"""Thin Celery tasks for files produced by jobs (STYLE §6; services.py)."""

from celery import shared_task

from . import services


@shared_task(name="memory_review.jobfiles.tasks.produce")
def produce(tenant_id: int, pk: int) -> str:
    """Write one job's file: 'done', 'failed', or 'taken' (not this worker's to write)."""
    return services.job_file_produce(tenant_id, pk)


@shared_task(name="memory_review.jobfiles.tasks.sweep")
def sweep() -> int:
    """Celery beat's job every JOB_FILES_SWEEP_SECONDS: expired files removed, lost jobs failed."""
    return services.sweep()

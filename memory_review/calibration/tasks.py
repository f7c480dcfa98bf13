"""Thin Celery tasks for calibration's derived figures (STYLE §6; figures.py)."""

from celery import shared_task

from . import figures


@shared_task(name="memory_review.calibration.tasks.refresh_figure")
def refresh_figure(name: str, tenant_id: int, params: dict) -> int:
    """Compute one figure and keep it; answers how long it took (ms)."""
    return figures.refresh(name, tenant_id, params)["took_ms"]


@shared_task(name="memory_review.calibration.tasks.refresh_stale_figures")
def refresh_stale_figures() -> int:
    """Celery beat's job every FIGURES_REFRESH_SECONDS: the standing figures whose data moved."""
    return figures.refresh_stale()

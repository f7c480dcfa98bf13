"""Thin Celery tasks for memories (STYLE §6)."""

from celery import shared_task

from .expiry import expire_past_ttl as sweep


@shared_task(name="memory_review.memories.tasks.expire_past_ttl")
def expire_past_ttl() -> int:
    """Celery beat's job every TTL_SWEEP_SECONDS (expiry.py)."""
    return sweep()

"""memory-review: where people review what AI agents remember."""

from .celery import app as celery_app

__all__ = ("celery_app",)

"""The Celery app. Tasks are thin: they take ids and call services (STYLE §6)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_review.settings")

app = Celery("memory_review")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

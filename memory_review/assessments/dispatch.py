"""Handing an assessment to a worker, below the pipelines that queue work.

The task is named rather than imported: `tasks` calls the pipelines, so the pipelines importing
`tasks` back would make a loop. A signature by name still runs eagerly under
CELERY_TASK_ALWAYS_EAGER, which `send_task` would not.
"""

from collections.abc import Callable

from celery import current_app
from django.db import transaction

from .models import Assessment

RUN_ASSESSMENT = "memory_review.assessments.tasks.run_assessment"


def enqueue_assessment(assessment: Assessment) -> None:
    current_app.signature(RUN_ASSESSMENT, args=(assessment.tenant_id, assessment.pk)).delay()


def enqueue_on_commit(assessment: Assessment, enqueue: Callable[[Assessment], None] | None = None) -> None:
    """Queue it once the transaction commits, so the worker never looks for a row that is not
    there yet. Tests pass their own `enqueue`."""
    send = enqueue or enqueue_assessment
    transaction.on_commit(lambda: send(assessment))

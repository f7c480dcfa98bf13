"""Handing an assessment to a worker, below the pipelines that queue work.

The task is named rather than imported: `tasks` calls the pipelines, so the pipelines importing
`tasks` back would make a loop. A signature by name still runs eagerly under
CELERY_TASK_ALWAYS_EAGER, which `send_task` would not.
"""

import logging
from collections.abc import Callable

from celery import current_app
from django.conf import settings
from django.db import transaction

from .models import Assessment

logger = logging.getLogger(__name__)

RUN_ASSESSMENT = "memory_review.assessments.tasks.run_assessment"
SCREEN_MEMORY = "memory_review.assessments.tasks.screen_memory"


def enqueue_assessment(assessment: Assessment, **options) -> None:
    """Into its tenant's lane (settings.ASSESSMENT_LANES): `options` go to apply_async."""
    current_app.signature(RUN_ASSESSMENT, args=(assessment.tenant_id, assessment.pk)).apply_async(
        **{"queue": lane(assessment.tenant_id), **options}
    )


def lane(tenant_id: int) -> str:
    """The queue a tenant's events wait in: one of the lanes, or Celery's own with none."""
    lanes = settings.ASSESSMENT_LANE_QUEUES
    return lanes[tenant_id % len(lanes)] if lanes else "celery"


def enqueue_on_commit(assessment: Assessment, enqueue: Callable[[Assessment], None] | None = None) -> None:
    """Queue it once the transaction commits, so the worker never looks for a row that is not
    there yet. Tests pass their own `enqueue`."""
    send = enqueue or enqueue_assessment
    transaction.on_commit(lambda: send(assessment))


def screen_on_commit(tenant_id: int, memory_id: int) -> None:
    """Put a memory just written to Jev's instruction vote (screening.py) once it commits. A
    broker that does not answer loses the vote, never the write: it is logged."""

    def send() -> None:
        try:
            current_app.signature(SCREEN_MEMORY, args=(tenant_id, memory_id)).delay()
        except Exception:
            logger.warning("memory %s: its instruction vote could not be queued", memory_id, exc_info=True)

    transaction.on_commit(send)

"""Assessments that stopped: handed to a worker again, with a record of who did it and why.

* The lease reaper (Celery beat, every ASSESSMENT_REAP_SECONDS): a running assessment whose lease
  lapsed lost its worker (killed, or its machine gone); it is queued again at once rather than
  waiting for the broker's visibility timeout.
* A lead's retry: a failed assessment (Jev down, say) is queued again from its page.

Either way an AssessmentRestart row keeps the previous state and error, and the pipeline's own
guards (the lease, votes recorded once, each verdict applied at most once) make a second run safe.
"""

import logging
from datetime import UTC

from django.db import transaction
from django.utils import timezone

from memory_review.ops import metrics
from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Tenant
from memory_review.textlimits import fit

from .dispatch import enqueue_on_commit
from .models import Assessment, AssessmentRestart

REAPER = "system:lease-reaper"
logger = logging.getLogger(__name__)


class CannotRetry(Exception):
    """The assessment is not in a state a person may retry from. Nothing was written."""


def reap_lapsed_leases(now=None) -> list[int]:
    """Every tenant's running assessments whose lease has lapsed, queued again."""
    now = now or timezone.now()
    handed: list[int] = []
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        with tenant_context(tenant_id), transaction.atomic():
            lapsed = Assessment.objects.select_for_update(skip_locked=True).filter(
                tenant_id=tenant_id, state=Assessment.State.RUNNING, lease_until__lt=now
            )
            for assessment in lapsed:
                lapsed_at = f"{assessment.lease_until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
                reason = (
                    f"its worker stopped renewing the lease (lapsed {lapsed_at}); handed to another worker"
                )
                _restart(assessment, actor=REAPER, reason=reason)
                handed.append(assessment.pk)
    return handed


def retry_failed(*, assessment: Assessment, actor: str, note: str = "") -> AssessmentRestart:
    """A person queues a failed assessment again. `actor` is `user:<id>`."""
    with transaction.atomic():
        locked = Assessment.objects.select_for_update().get(pk=assessment.pk, tenant_id=assessment.tenant_id)
        if locked.state != Assessment.State.FAILED:
            raise CannotRetry(f"only a failed assessment can be retried; this one is {locked.state}")
        reason = "retried from its page" + (f": {note.strip()}" if note.strip() else "")
        return _restart(locked, actor=actor, reason=fit(reason, 1000))


def _restart(assessment: Assessment, *, actor: str, reason: str) -> AssessmentRestart:
    restart = AssessmentRestart.objects.create(
        tenant_id=assessment.tenant_id,
        assessment=assessment,
        actor=actor,
        reason=reason,
        previous_state=assessment.state,
        previous_error=assessment.error,
    )
    Assessment.objects.filter(pk=assessment.pk).update(
        state=Assessment.State.QUEUED, lease_until=None, error=None, finished_at=None
    )
    enqueue_on_commit(assessment)
    metrics.ASSESSMENTS_RESTARTED.labels("reaper" if actor == REAPER else "person").inc()
    logger.warning("assessment %s handed to a worker again by %s: %s", assessment.pk, actor, reason)
    return restart

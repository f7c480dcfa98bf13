"""Assessments that stopped: handed to a worker again, with a record of who did it and why.

* The lease reaper (Celery beat, every ASSESSMENT_REAP_SECONDS): a running assessment whose lease
  lapsed lost its worker (killed, or its machine gone); it is queued again at once rather than
  waiting for the broker's visibility timeout.
* A lead's retry: a failed assessment (Jev down, say) is queued again from its page.

Either way an AssessmentRestart row keeps the previous state and error, and the pipeline's own
guards (the lease, votes recorded once, each verdict applied at most once) make a second run safe.
"""

import logging
from datetime import UTC, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.ops import metrics
from memory_review.tenancy.models import Tenant
from memory_review.textlimits import fit

from .dispatch import enqueue_on_commit
from .models import Assessment, AssessmentRestart

REAPER = "system:lease-reaper"
LAPSED = "its worker stopped renewing the lease"
logger = logging.getLogger(__name__)


class CannotRetry(Exception):
    """The assessment is not in a state a person may retry from. Nothing was written."""


def reap_lapsed_leases(now=None) -> list[int]:
    """Every tenant's running assessments whose lease has lapsed, queued again; one whose worker
    died REAPER_LIMIT times already is failed instead, with the reason, for a lead to look at (a
    pool that kills its worker every time would otherwise ask Jev forever). A tenant the job
    cannot reach is logged and skipped, never the end of the run for the others."""
    now = now or timezone.now()
    handed: list[int] = []
    for tenant_id in Tenant.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True):
        try:
            handed += _reap_tenant(tenant_id, now)
        except Exception:
            logger.exception("lease reaper: tenant %s skipped", tenant_id)
    return handed


def _reap_tenant(tenant_id: int, now) -> list[int]:
    handed = []
    with tenant_context(tenant_id), transaction.atomic():
        lapsed = Assessment.objects.select_for_update(skip_locked=True).filter(
            tenant_id=tenant_id, state=Assessment.State.RUNNING, lease_until__lt=now
        )
        for assessment in lapsed:
            lapsed_at = f"{assessment.lease_until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
            reaped = AssessmentRestart.objects.filter(
                assessment=assessment, actor=REAPER, reason__startswith=LAPSED
            ).count()
            if reaped >= settings.ASSESSMENT_REAPER_LIMIT:
                error = (
                    f"its worker stopped {reaped + 1} times without finishing (last lease lapsed "
                    f"{lapsed_at}); failed so a lead can look at it and retry it from its page"
                )
                Assessment.objects.filter(pk=assessment.pk).update(
                    state=Assessment.State.FAILED, error=error, finished_at=timezone.now(), lease_until=None
                )
                logger.error("assessment %s failed by the lease reaper: %s", assessment.pk, error)
                continue
            reason = f"{LAPSED} (lapsed {lapsed_at}); handed to another worker"
            _restart(assessment, actor=REAPER, reason=reason)
            handed.append(assessment.pk)
        # Queued long ago and taken by no worker: its message was lost (a broker outage when it
        # was sent, say). Sent again, at most once a period; a duplicate finds it done and stops.
        period = timedelta(minutes=settings.ASSESSMENT_QUEUED_STALE_MINUTES)
        stale = (
            Assessment.objects.select_for_update(skip_locked=True)
            .filter(tenant_id=tenant_id, state=Assessment.State.QUEUED, created_at__lt=now - period)
            .exclude(restarts__created_at__gte=now - period)
        )
        for assessment in stale:
            minutes = int((now - assessment.created_at).total_seconds() // 60)
            reason = f"queued {minutes} minutes ago and taken by no worker (a lost message?); sent again"
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
    # The reason may quote a person's note: the restart keeps it, the log its id.
    logger.warning(
        "assessment %s handed to a worker again by %s (restart %s)", assessment.pk, actor, restart.pk
    )
    return restart

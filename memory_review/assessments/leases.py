"""Which worker is on an assessment. No database transaction is held while Jev answers: a worker
takes a lease on the row in a short transaction, asks Jev, then records in another. A duplicate
delivery finds the lease held and comes back later.

The lease is short (ASSESSMENT_LEASE_S) and renewed from a background thread while the worker
lives (`heartbeat`), so however long Jev takes, a live worker keeps it, and a worker that died
(SIGKILL, lost machine) loses it within one lease. The reaper (recovery.py) then hands the
assessment to another worker."""

import logging
import threading
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import Q
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.ops import metrics

from .models import Assessment

logger = logging.getLogger(__name__)

FINISHED = (Assessment.State.DONE, Assessment.State.FAILED)


class AssessmentBusy(Exception):
    """Another worker holds the lease; try again in `seconds`."""

    def __init__(self, seconds: float):
        super().__init__(f"another worker holds this assessment for {seconds:.0f} s more")
        self.seconds = seconds


def lease_seconds() -> float:
    return settings.ASSESSMENT_LEASE_S


def claim(*, tenant_id: int, assessment_id: int) -> Assessment:
    """The assessment, leased to this worker (unless it is already finished), with its policy and
    its event.

    One conditional UPDATE takes the lease: the database lets one worker at a time through it,
    and the one that finds it held, or finished, sees so in the row it reads next."""
    now = timezone.now()
    takeable = Q(state=Assessment.State.QUEUED) | Q(lease_until__isnull=True) | Q(lease_until__lte=now)
    taken = (
        Assessment.objects.filter(pk=assessment_id, tenant_id=tenant_id)
        .exclude(state__in=FINISHED)
        .filter(takeable)
        .update(state=Assessment.State.RUNNING, lease_until=now + timedelta(seconds=lease_seconds()))
    )
    assessment = Assessment.objects.select_related("policy", "event").get(
        pk=assessment_id, tenant_id=tenant_id
    )
    if taken or assessment.state in FINISHED:
        return assessment
    held_for = (assessment.lease_until - now).total_seconds() if assessment.lease_until else 0.0
    raise AssessmentBusy(max(held_for, 1.0))


def finish(assessment: Assessment, *, error: str | None = None) -> Assessment:
    state = Assessment.State.FAILED if error else Assessment.State.DONE
    ended = {"state": state, "error": error, "finished_at": timezone.now(), "lease_until": None}
    Assessment.objects.filter(pk=assessment.pk).update(**ended)
    for name, value in ended.items():  # the caller's object holds the rest (its figures included)
        setattr(assessment, name, value)
    metrics.ASSESSMENTS_FINISHED.labels(assessment.purpose, state).inc()
    if error:
        logger.warning("assessment %s failed: %s", assessment.pk, error)
    return assessment


def release(assessment: Assessment) -> None:
    """Give the lease back (a transient error): the retried task may take it at once, and if
    that retry never comes (its tries spent, its message lost) the reaper finds it lapsed."""
    Assessment.objects.filter(pk=assessment.pk, state=Assessment.State.RUNNING).update(
        lease_until=timezone.now()
    )


@contextmanager
def heartbeat(assessment: Assessment):
    """While the block runs, renew the lease every third of its length, from a thread of its own
    (the worker's thread is busy waiting on Jev)."""
    stop = threading.Event()
    beat = threading.Thread(
        target=_renew,
        args=(assessment.pk, assessment.tenant_id, stop),
        name=f"lease-{assessment.pk}",
        daemon=True,
    )
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join(timeout=10)


def _renew(assessment_id: int, tenant_id: int, stop: threading.Event) -> None:
    try:
        while not stop.wait(lease_seconds() / 3):
            try:
                with tenant_context(tenant_id):
                    Assessment.objects.filter(
                        pk=assessment_id, state=Assessment.State.RUNNING, lease_until__isnull=False
                    ).update(lease_until=timezone.now() + timedelta(seconds=lease_seconds()))
            except DatabaseError:  # the next beat tries again; a lapse only means another worker takes over
                logger.warning("could not renew the lease on assessment %s", assessment_id, exc_info=True)
    finally:
        connections.close_all()  # this thread's own connections

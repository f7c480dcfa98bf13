"""Which worker is on an assessment. No database transaction is held while Jev answers: a worker
takes a lease on the row in a short transaction, asks Jev, then records in another. A duplicate
delivery finds the lease held and comes back later; a worker that died lets its lease lapse, and
the redelivered task takes over."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import Assessment

FINISHED = (Assessment.State.DONE, Assessment.State.FAILED)


class AssessmentBusy(Exception):
    """Another worker holds the lease; try again in `seconds`."""

    def __init__(self, seconds: float):
        super().__init__(f"another worker holds this assessment for {seconds:.0f} s more")
        self.seconds = seconds


def lease_seconds() -> float:
    """Longer than one worker can spend on Jev: every try timing out, every backoff at its cap."""
    tries = settings.JEV_MAX_TRIES
    return (
        settings.JEV_TIMEOUT_S * tries
        + settings.JEV_BACKOFF_MAX_S * (tries - 1)
        + settings.JEV_LEASE_MARGIN_S
    )


def claim(*, tenant_id: int, assessment_id: int) -> Assessment:
    """The assessment, leased to this worker (unless it is already finished)."""
    with transaction.atomic():
        assessment = Assessment.objects.select_for_update().get(pk=assessment_id, tenant_id=tenant_id)
        if assessment.state in FINISHED:
            return assessment
        now = timezone.now()
        if (
            assessment.state == Assessment.State.RUNNING
            and assessment.lease_until
            and assessment.lease_until > now
        ):
            raise AssessmentBusy((assessment.lease_until - now).total_seconds())
        assessment.state = Assessment.State.RUNNING
        assessment.lease_until = now + timedelta(seconds=lease_seconds())
        assessment.save(update_fields=["state", "lease_until"])
    return assessment


def finish(assessment: Assessment, *, error: str | None = None) -> Assessment:
    state = Assessment.State.FAILED if error else Assessment.State.DONE
    Assessment.objects.filter(pk=assessment.pk).update(
        state=state, error=error, finished_at=timezone.now(), lease_until=None
    )
    assessment.refresh_from_db()
    return assessment


def release(assessment: Assessment) -> None:
    """Give the lease back (a transient error): the retried task may take it at once."""
    Assessment.objects.filter(pk=assessment.pk, state=Assessment.State.RUNNING).update(lease_until=None)

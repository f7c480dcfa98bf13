"""Thin Celery tasks for the audit trail (STYLE §6)."""

from celery import shared_task

from memory_review.integrity.context import acting_as
from memory_review.integrity.db_context import tenant_context
from memory_review.integrity.heads import SEQUENCE_TASK
from memory_review.tenancy.models import Tenant

from . import sequencer, verification
from .verification import verify_and_checkpoint


@shared_task(name="memory_review.audit.tasks.checkpoint_all")
def checkpoint_all() -> int:
    """Celery beat's job every AUDIT_CHECKPOINT_MINUTES, and once when beat starts: verify each
    tenant's trail and, when it is intact, append a signed checkpoint of its heads (a broken
    trail is never vouched for). Checkpoints that merely stopped are this job's to resume."""
    written = 0
    with acting_as("system:audit-checkpoint"):
        for tenant in Tenant.objects.order_by("slug"):
            written += verify_and_checkpoint(tenant, by="system:audit-checkpoint")[1] is not None
    return written


@shared_task(name="memory_review.audit.tasks.verify_run")
def verify_run(tenant_id: int, pk: int) -> str:
    """A person's "Verify now": the whole trail, with its progress on the audit page."""
    return verification.verification_run(tenant_id, pk)


@shared_task(name=SEQUENCE_TASK, bind=True)
def sequence(self, tenant_id: int, held: int = 0) -> int:
    """Link the tenant's committed audit rows into its chains (queued when a write commits;
    `held`: how many runs before this one found the head held)."""
    return sequencer.run(tenant_id, wait=bool(self.request.is_eager), queued=True, held=held).rows


@shared_task(name="memory_review.audit.tasks.sequence_waiting")
def sequence_waiting() -> int:
    """Beat's sweep every AUDIT_SEQUENCE_SWEEP_SECONDS: link what a lost nudge left waiting."""
    linked = 0
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        with tenant_context(tenant_id):
            if sequencer.waiting(tenant_id):
                linked += sequencer.run(tenant_id).rows
    return linked

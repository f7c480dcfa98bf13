from django.core.management.base import BaseCommand, CommandError

from memory_review.audit import checkpoints
from memory_review.audit.verification import verify_and_checkpoint
from memory_review.integrity.context import acting_as
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = (
        "Verify each tenant's audit trail and, where it is intact, append a signed checkpoint of its "
        "chains' heads to AUDIT_CHECKPOINT_DIR (a broken trail is never vouched for)."
    )

    def handle(self, *args, **options):
        refused = 0
        with acting_as("system:audit-checkpoint"):
            for tenant in Tenant.objects.order_by("slug"):
                result, checkpoint = verify_and_checkpoint(tenant, by="system:audit-checkpoint")
                if checkpoint is None:
                    refused += 1
                    self.stderr.write(f"{result.problem}: no checkpoint written")
                    continue
                self.stdout.write(
                    f"tenant {tenant.slug}: checkpoint at transition #{checkpoint.seq} "
                    f"({checkpoint.hash[:12]}…), seal #{checkpoint.seal_seq}"
                )
        if warning := checkpoints.shared_custody():
            self.stderr.write(f"warning: {warning}")
        if refused:
            raise CommandError(f"no checkpoint for {refused} tenant(s) whose trail is broken")

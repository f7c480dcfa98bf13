from django.core.management.base import BaseCommand

from memory_review.audit import checkpoints
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = "Append a signed checkpoint of each tenant's audit chain head to AUDIT_CHECKPOINT_DIR."

    def handle(self, *args, **options):
        for tenant in Tenant.objects.filter(is_active=True).order_by("slug"):
            checkpoint = checkpoints.write(tenant)
            self.stdout.write(
                f"tenant {tenant.slug}: checkpoint at #{checkpoint.seq} ({checkpoint.hash[:12]}…)"
            )

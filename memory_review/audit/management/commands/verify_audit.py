from django.core.management.base import BaseCommand, CommandError

from memory_review.audit.verification import verify_and_record
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = (
        "Check each tenant's audit trail: every row's link and keyed hash, rows beyond the head, the "
        "chain against its latest signed checkpoint, and every status against its last transition. "
        "Exits non-zero naming the first problem."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", metavar="SLUG", help="check only this tenant")

    def handle(self, *args, tenant=None, **options):
        tenants = Tenant.objects.filter(is_active=True).order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        broken = 0
        for t in tenants:
            # The check sets the tenant for the database (VPD, row-level security): without it the
            # walk would see no rows and call the chain intact.
            result = verify_and_record(t, by="system:verify_audit")
            if not result.intact:
                broken += 1
                self.stderr.write(result.problem)
                continue
            against = (
                f", checked against the checkpoint of #{result.checkpoint_seq}"
                if result.checkpoint_seq is not None
                else ""
            )
            self.stdout.write(f"tenant {t.slug}: intact, {result.seq} transitions{against}")
        if broken:
            raise CommandError(f"audit trail broken in {broken} tenant(s)")

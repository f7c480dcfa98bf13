from django.core.management.base import BaseCommand, CommandError

from memory_review.audit import checkpoints
from memory_review.audit.verification import verify_and_record
from memory_review.integrity.context import acting_as
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = (
        "Check each tenant's audit trail (docs/audit.md): both chains (transitions and seals) row by "
        "row with their keyed hashes, their heads, the checkpoint file against what earlier checks "
        "saw, every sealed row against its latest seal, and every status against its last "
        "transition. Exits non-zero naming the first problem."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", metavar="SLUG", help="check only this tenant")

    def handle(self, *args, tenant=None, **options):
        # Inactive tenants too: switching a tenant off must not switch its checks off.
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        broken = 0
        with acting_as("system:verify_audit"):
            for t in tenants:
                # The check sets the tenant for the database (VPD, row-level security): without it
                # the walk would see no rows and call the trail intact.
                result = verify_and_record(t, by="system:verify_audit")
                if not result.intact:
                    broken += 1
                    self.stderr.write(result.problem)
                    continue
                against = (
                    f", checked against the checkpoint of #{result.checkpoint_seq}"
                    if result.checkpoint_seq is not None
                    else ", not checkpointed yet"
                )
                self.stdout.write(
                    f"tenant {t.slug}: intact, {result.seq} transitions and {result.seal_seq} seals{against}"
                )
        if not tenant:
            for problem in checkpoints.orphans():
                broken += 1
                self.stderr.write(problem)
        if warning := checkpoints.shared_custody():
            self.stderr.write(f"warning: {warning}")
        if broken:
            raise CommandError(f"audit trail broken in {broken} tenant(s)")

from django.core.management.base import BaseCommand, CommandError

from memory_review.audit import chain
from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = "Walk each tenant's audit hash chain; exit non-zero naming the first broken row."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", metavar="SLUG", help="check only this tenant")

    def handle(self, *args, tenant=None, **options):
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        breaks = []
        for t in tenants:
            # Under VPD or row-level security the rows are only visible with the tenant set;
            # without it the walk would see nothing and call the chain intact.
            with tenant_context(t.pk):
                problem = chain.verify(t)
                head = chain.AuditChain.objects.for_tenant(t).first()
            if problem:
                breaks.append(problem)
                self.stderr.write(str(problem))
            else:
                self.stdout.write(f"tenant {t.slug}: intact, {head.seq if head else 0} transitions")
        if breaks:
            raise CommandError(f"audit chain broken in {len(breaks)} tenant(s)")

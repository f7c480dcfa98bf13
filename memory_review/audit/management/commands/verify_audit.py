from django.core.management.base import BaseCommand, CommandError

from memory_review.audit import chain, checkpoints
from memory_review.tenancy.db_context import tenant_context
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
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        problems = []
        for t in tenants:
            # Under VPD or row-level security the rows are only visible with the tenant set;
            # without it the walk would see nothing and call the chain intact.
            with tenant_context(t.pk):
                try:
                    checkpoint = checkpoints.latest(t)
                    problem = chain.verify(t, checkpoint=checkpoint)
                except checkpoints.CheckpointError as exc:
                    checkpoint, problem = None, f"tenant {t.slug}: {exc}"
                head = chain.AuditChain.objects.for_tenant(t).first()
            if problem:
                problems.append(problem)
                self.stderr.write(str(problem))
            else:
                against = (
                    f", checked against the checkpoint of {checkpoint.at} (#{checkpoint.seq})"
                    if checkpoint
                    else ""
                )
                self.stdout.write(f"tenant {t.slug}: intact, {head.seq if head else 0} transitions{against}")
        if problems:
            raise CommandError(f"audit trail broken in {len(problems)} tenant(s)")

"""`manage.py seed_demo`: demo tenants, users and memory history. Safe to run again."""

from django.conf import settings
from django.core.management.base import BaseCommand

from memory_review.demo.scenarios import DEMO_PASSWORD, TENANTS, USERS, SeedReport, seed_demo


class Command(BaseCommand):
    help = (
        "Create the demo tenants (acme, globex), their users and a realistic memory history. "
        "Idempotent: a tenant that already has events is left as it is."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--tenant",
            action="append",
            choices=[spec.slug for spec in TENANTS],
            help="Seed only this tenant (repeatable). Default: all demo tenants.",
        )
        parser.add_argument(
            "--no-history",
            dest="history",
            action="store_false",
            help="Leave out the months of labeled history before the stories (calibration's "
            "data); seeds in half the time, for tests that do not look at calibration.",
        )

    def handle(self, *args, **options):
        # No worker runs beside this command (make demo starts them after it): the rows it writes
        # are linked into the audit chains as it writes them, not left to the sequencer's runs.
        settings.AUDIT_SEQUENCER = "inline"  # this process ends with the command
        report = seed_demo(tenant_slugs=options["tenant"], history=options["history"])
        self._print_summary(report)

    def _print_summary(self, report: SeedReport) -> None:
        write = self.stdout.write
        if report.users_created:
            write(f"users created: {', '.join(report.users_created)}")
        if report.tenants_created:
            write(f"tenants created: {', '.join(report.tenants_created)}")
        if report.memberships_created:
            write(f"memberships created: {report.memberships_created}")

        for tenant in report.tenants:
            state = "seeded" if tenant.seeded else "already seeded, left unchanged"
            write(self.style.MIGRATE_HEADING(f"\n{tenant.slug} ({tenant.name}): {state}"))
            write(
                f"  {tenant.events} events, {tenant.memories} memories, {tenant.links} links, "
                f"{tenant.assessments} assessments, {tenant.verdicts} verdicts, "
                f"{tenant.transitions} transitions, {tenant.candidates} promotion candidates"
            )
            statuses = ", ".join(f"{status} {n}" for status, n in tenant.by_status.items())
            write(f"  memories by status: {statuses}")
            dispositions = ", ".join(f"{name} {n}" for name, n in sorted(tenant.dispositions.items()))
            write(f"  verdicts by disposition: {dispositions or 'none'}")

        write(self.style.MIGRATE_HEADING(f'\nDemo logins (password "{DEMO_PASSWORD}"):'))
        for user in USERS:
            roles = ", ".join(f"{role} in {slug}" for slug, role in user.roles.items())
            extra = "superuser; " if user.superuser else ""
            write(f"  {user.username:<15} {extra}{roles}")

        if report.changed:
            write(self.style.SUCCESS("\nDemo data is in place."))
        else:
            write(self.style.SUCCESS("\nNothing changed: the demo data was already in place."))

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory_review.compliance import security
from memory_review.integrity.db_context import tenant_context
from memory_review.lifecycle import LifecycleError
from memory_review.tenancy.models import Role, Tenant


class Command(BaseCommand):
    help = (
        "Make someone a member of a tenant in a role, change their role, or remove them "
        "(compliance/security.py). Where the tenant keeps the two-person rule this only asks: a lead "
        "or admin confirms in the app; a new tenant's first lead or admin is added at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--user", required=True, metavar="USERNAME")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--role", choices=Role.values)
        what.add_argument("--remove", action="store_true", help="take them out of the tenant")
        parser.add_argument("--reason", required=True, help="why (kept with the change)")

    def handle(self, *args, tenant, user, role=None, remove=False, reason, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        person = get_user_model().objects.filter(username=user).first()
        if person is None:
            raise CommandError(f"no user {user!r}")
        with tenant_context(found.pk):
            try:
                change = security.membership_change(
                    tenant=found, by=None, user=person, role=None if remove else role, reason=reason
                )
            except LifecycleError as exc:
                raise CommandError(str(exc)) from exc
        before, after = change.change["role"]
        what = f"{person.username}: {before or 'not a member'} -> {after or 'not a member'} in {found.slug}"
        if change.outcome == security.APPLIED:
            self.stdout.write(f"{what}: done (change {change.pk})")
        else:
            self.stdout.write(
                f"{what}: asked (request {change.pk}); {found.slug} keeps the two-person rule, so a lead "
                f"or admin confirms it at /t/{found.slug}/members/ by {change.expires_at:%Y-%m-%d %H:%M} UTC"
            )
